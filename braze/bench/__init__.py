"""The two case studies as runnable experiments: LeNet-5 on MNIST and the XLA article's CNN."""
