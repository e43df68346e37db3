"""Collaborative filtering for movie recommendations (after keras-io's
structured_data/collaborative_filtering_movielens.py): a subclassed model of user and
movie embeddings with L2 regularizers, ops.tensordot and ops.nn.sigmoid, on ratings of
MovieLens's shape."""

import numpy as np

import braze.keras as keras
from braze.keras import layers, ops

keras.utils.set_random_seed(2)
rng = np.random.default_rng(8)
num_users, num_movies, EMBEDDING_SIZE = 60, 90, 8
ratings = 1200
user = rng.integers(0, num_users, ratings)
movie = rng.integers(0, num_movies, ratings)
rating = np.clip(np.round(3 + np.sin(user) + np.cos(movie) + rng.normal(0, 0.5, ratings)), 0.5, 5.0)
min_rating, max_rating = rating.min(), rating.max()
x = np.stack([user, movie], axis=1)
y = (rating - min_rating) / (max_rating - min_rating)
train_indices = int(0.9 * ratings)
x_train, x_val, y_train, y_val = x[:train_indices], x[train_indices:], y[:train_indices], y[train_indices:]


class RecommenderNet(keras.Model):
    def __init__(self, num_users, num_movies, embedding_size, **kwargs):
        super().__init__(**kwargs)
        self.num_users = num_users
        self.num_movies = num_movies
        self.embedding_size = embedding_size
        self.user_embedding = layers.Embedding(
            num_users,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(1e-6),
        )
        self.user_bias = layers.Embedding(num_users, 1)
        self.movie_embedding = layers.Embedding(
            num_movies,
            embedding_size,
            embeddings_initializer="he_normal",
            embeddings_regularizer=keras.regularizers.l2(1e-6),
        )
        self.movie_bias = layers.Embedding(num_movies, 1)

    def call(self, inputs):
        user_vector = self.user_embedding(inputs[:, 0])
        user_bias = self.user_bias(inputs[:, 0])
        movie_vector = self.movie_embedding(inputs[:, 1])
        movie_bias = self.movie_bias(inputs[:, 1])
        dot_user_movie = ops.tensordot(user_vector, movie_vector, 2)
        # Add all the components (including bias)
        x = dot_user_movie + user_bias + movie_bias
        # The sigmoid activation forces the rating to between 0 and 1
        return ops.nn.sigmoid(x)


model = RecommenderNet(num_users, num_movies, EMBEDDING_SIZE)
model.compile(loss=keras.losses.BinaryCrossentropy(), optimizer=keras.optimizers.Adam(learning_rate=0.001))
history = model.fit(x=x_train, y=y_train, batch_size=64, epochs=3, verbose=0, validation_data=(x_val, y_val))
user_movie_array = np.stack([np.full(num_movies, 7), np.arange(num_movies)], axis=1)
predicted = model.predict(user_movie_array, verbose=0).flatten()
top_ratings_indices = predicted.argsort()[-10:][::-1]
