"""The XLA article's Keras program, ported to braze by its imports alone.

``ARTICLE`` is the case study's code as the article prints it (its Spanish rendering turned
back into Python: ``importar`` -> ``import``, ``modelo1``/``Secuencial`` -> ``model1``/
``Sequential``, curly quotes -> straight ones), with three things the article leaves out or
that are not Python: IPython's ``%time`` is dropped, ``test_path`` is defined beside
``train_path``, and ``model2`` is built as the article says, "the same model architecture"
(model1's lines, for model2). The test changes the imports (``PORT``), the folder paths and
the epochs, and nothing else, and runs it: eagerly, then with ``set_jit(True)``.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

import braze
from braze.data import make_two_class_folder

MODEL1 = """
img_row=150
img_col=150
model1=Sequential()
model1.add(Conv2D(64,(5,5),activation='relu',input_shape=(img_row,img_col,3)))
model1.add(MaxPooling2D(pool_size=(2,2)))
model1.add(Conv2D(32,(5,5),activation='relu'))
model1.add(MaxPooling2D(pool_size=(2,2)))
model1.add(Conv2D(16,(5,5),activation='relu'))
model1.add(MaxPooling2D(pool_size=(2,2)))
model1.add(Flatten())
model1.add(Dense(126,activation='relu'))
model1.add(Dense(52,activation='relu'))
model1.add(Dense(1,activation='sigmoid'))
model1.compile(loss="binary_crossentropy",optimizer="adam",metrics=['accuracy'])
"""

ARTICLE = (
    """
import tensorflow as tf
import matplotlib.pyplot as plt
from tensorflow.keras.layers import Dense, MaxPooling2D, Conv2D, Flatten
from tensorflow.keras.models import Sequential
from tensorflow.keras import regularizers
from tensorflow.keras.preprocessing.image import ImageDataGenerator, load_img
train_path="/content/drive/MyDrive/Colab notebooks/Kernel Regularizers with NN/train"
test_path="/content/drive/MyDrive/Colab notebooks/Kernel Regularizers with NN/test"
plt.figure(figsize=(15,5))
img=load_img(train_path + "/African/af_tr109.jpg")
plt.imshow(img)
plt.axis("off")
plt.title("African elephant image")
plt.show()
plt.figure()
img=load_img(train_path + "/Asian/as_tr114.jpg")
plt.imshow(img)
plt.axis("off")
plt.title("Asian elephant image")
plt.show()
"""
    + MODEL1
    + """
train_datagen=ImageDataGenerator(rescale=1./255,shear_range=0.2,zoom_range=0.2,horizontal_flip=True)
test_datagen=ImageDataGenerator(rescale=1./255)
train_set=train_datagen.flow_from_directory(train_path,target_size=(img_row,img_col),batch_size=64,class_mode="binary")
test_set=test_datagen.flow_from_directory(test_path,target_size=(img_row,img_col),batch_size=64,class_mode="binary")
model1_res=model1.fit_generator(train_set,steps_per_epoch=840//64,epochs=50,validation_data=test_set,validation_steps=188//64)

tf.keras.backend.clear_session() ## to clear other sessions in the environment
tf.config.optimizer.set_jit(True) ## enable XLA
"""
    + MODEL1.replace("model1", "model2")
    + """
model2_res=model2.fit_generator(train_set,steps_per_epoch=840//64,epochs=50,validation_data=test_set,validation_steps=188//64)
"""
)

# The whole port: what a Keras user replaces.
PORT = {"import tensorflow as tf": "import braze as tf", "tensorflow.keras": "braze.keras"}
# Eager epochs cost about a second here; after its first compiles a jitted epoch costs 0.1 s.
EPOCHS = {"model1": 8, "model2": 20}


def ported(train_dir: str, test_dir: str) -> str:
    program = ARTICLE
    for keras, braze_ in PORT.items():
        program = program.replace(keras, braze_)
    # Folder paths (the generated folder's classes are blobs and stripes) and epochs.
    program = program.replace("/content/drive/MyDrive/Colab notebooks/Kernel Regularizers with NN/train", train_dir)
    program = program.replace("/content/drive/MyDrive/Colab notebooks/Kernel Regularizers with NN/test", test_dir)
    program = program.replace("/African/af_tr109.jpg", "/blobs/blobs_0000.png")
    program = program.replace("/Asian/as_tr114.jpg", "/stripes/stripes_0000.png")
    for model, epochs in EPOCHS.items():
        program = program.replace(
            f"{model}.fit_generator(train_set,steps_per_epoch=840//64,epochs=50",
            f"{model}.fit_generator(train_set,steps_per_epoch=840//64,epochs={epochs}",
        )
    return program


@pytest.fixture
def article_session(monkeypatch, tmp_path):
    """What a notebook leaves to its environment: a kernel cache, a plot backend, seeds
    (Keras's augmentation draws from NumPy's global generator, braze's layers from its own)."""
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path / "cache"))
    matplotlib.use("Agg")  # plt.show() draws nowhere in a test
    np.random.seed(0)
    braze.manual_seed(0)
    yield
    braze.config.set_jit(False)
    import matplotlib.pyplot as plt

    plt.close("all")


def test_the_port_changes_only_imports_paths_and_epochs():
    program = ported("TRAIN", "TEST")
    assert "tensorflow" not in program
    changed = [
        (before, after)
        for before, after in zip(ARTICLE.splitlines(), program.splitlines(), strict=True)
        if before != after
    ]
    assert all("import" in b or "_path" in b or "epochs=50" in b for b, _ in changed), changed
    assert len(changed) == 11  # 5 imports, 2 folders, 2 image files, 2 epochs


@pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive")
def test_the_xla_article_program_trains_eagerly_then_with_set_jit(tmp_path, capsys, article_session):
    # Two training images (one batch an epoch, as the folder runs out before steps_per_epoch),
    # two for validation; the program resizes them to its 150x150.
    train_dir, test_dir = make_two_class_folder(tmp_path / "data", n_train=2, n_val=2, size=(32, 32), seed=0)
    namespace: dict = {}
    exec(compile(ported(str(train_dir), str(test_dir)), "xla_article.py", "exec"), namespace)

    out = capsys.readouterr().out
    assert out.count("Found 2 images belonging to 2 classes.") == 2
    eager, compiled = namespace["model1"], namespace["model2"]
    assert eager.device == braze.CPU and compiled.device == braze.LAZY_CPU
    assert eager.num_parameters() == compiled.num_parameters() == 529_295
    assert compiled.layers[0].name == "conv2d"  # clear_session started the names over
    # It trains: the last epochs' loss is below the first ones' (compiled, over more epochs,
    # it nearly memorises the two images).
    for name, fraction in (("model1_res", 0.95), ("model2_res", 0.5)):
        history = namespace[name].history
        assert set(history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
        losses = history["loss"]
        assert len(losses) == EPOCHS[name.split("_")[0]]
        assert np.mean(losses[-3:]) < fraction * np.mean(losses[:2]), (name, losses)
