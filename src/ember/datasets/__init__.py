"""Datasets that need no download: the bundled UCI 8x8 digits, and MNIST read from local IDX files.

``digits(train=True)`` gives a ``TensorDataset`` of ``(image, label)`` pairs from the 1,797 UCI
handwritten digits bundled with ember (CC BY 4.0, see ``data/LICENSE-digits.txt``).
``MNIST(root, train=True)`` reads the four MNIST IDX files (raw or ``.gz``) from a local folder.
"""
from ._digits import DIGITS_TEST_EVERY, digits, digits_arrays
from ._mnist import MNIST, read_idx, write_idx

__all__ = ["digits", "digits_arrays", "DIGITS_TEST_EVERY", "MNIST", "read_idx", "write_idx"]
