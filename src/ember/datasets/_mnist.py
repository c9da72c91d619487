"""MNIST from a local folder of IDX files (the format of the original distribution).

An IDX file starts with two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
0x0D float32, 0x0E float64), the number of dimensions, then one big-endian int32 per dimension, then
the data, big-endian. Files may be gzip-compressed (``.gz``); both forms are looked for.
"""
import gzip
import os
import struct

import numpy as np

_TYPES = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
          0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int8): 0x09, np.dtype(np.int16): 0x0B,
          np.dtype(np.int32): 0x0C, np.dtype(np.float32): 0x0D, np.dtype(np.float64): 0x0E}

_FILES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
          False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def read_idx(path):
    """Read one IDX file (raw, or gzip when the name ends in .gz) into a NumPy array."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise RuntimeError(f"cannot read IDX file {path}: {e}") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES:
        raise RuntimeError(f"{path} is not an IDX file (bad magic number {raw[:4].hex() or 'empty'})")
    dtype, ndim = _TYPES[raw[2]], raw[3]
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise RuntimeError(f"{path}: truncated IDX header")
    shape = struct.unpack(f">{ndim}i", raw[4:head])
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if len(raw) - head != n * dtype.itemsize:
        raise RuntimeError(f"{path}: IDX header says shape {tuple(shape)} ({n * dtype.itemsize} bytes of "
                           f"data) but the file holds {len(raw) - head} bytes")
    return np.frombuffer(raw, dtype, n, head).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path, array):
    """Write a NumPy array as an IDX file (gzip when the name ends in .gz)."""
    a = np.asarray(array)
    if a.dtype not in _CODES:
        raise TypeError(f"write_idx: unsupported dtype {a.dtype} (IDX holds uint8, int8, int16, int32, "
                        "float32, float64)")
    data = struct.pack(">BBBB", 0, 0, _CODES[a.dtype], a.ndim) + struct.pack(f">{a.ndim}i", *a.shape)
    data += a.astype(a.dtype.newbyteorder(">")).tobytes()
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(data)


def _find(root, stem):
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
        for d in (root, os.path.join(root, "MNIST", "raw"), os.path.join(root, "raw")):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                return p
    raise FileNotFoundError(f"MNIST: {stem}[.gz] not found in {root} (expected the IDX files "
                            f"{', '.join(_FILES[True] + _FILES[False])}, raw or .gz)")


class MNIST:
    """MNIST read from IDX files in ``root`` (also looked for in ``root/MNIST/raw`` and ``root/raw``).

    Items are ``(image, label)``: the image a float tensor (1, 28, 28) scaled to 0..1 (or whatever
    ``transform`` makes of the uint8 (28, 28) array), the label an int. ``data`` (N, 28, 28) uint8
    and ``targets`` (N,) int64 hold everything as tensors. Nothing is downloaded: ``download=True``
    is an error that says so.
    """
    classes = [f"{i} - {w}" for i, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        import ember
        if download:
            raise RuntimeError("MNIST: ember never downloads; put the IDX files in a folder and pass it as root")
        root = os.path.expanduser(str(root))
        if not os.path.isdir(root):
            raise FileNotFoundError(f"MNIST: data folder {root} does not exist")
        self.root, self.train = root, train
        self.transform, self.target_transform = transform, target_transform
        img_file, lbl_file = (_find(root, s) for s in _FILES[bool(train)])
        images, labels = read_idx(img_file), read_idx(lbl_file)
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise RuntimeError(f"MNIST: images {images.shape} in {img_file} and labels {labels.shape} in "
                               f"{lbl_file} do not match (expected (N, H, W) and (N,))")
        self.data = ember.tensor(images.astype(np.uint8))
        self.targets = ember.tensor(labels.astype(np.int64))
        self._images, self._labels = images.astype(np.uint8), labels.astype(np.int64)

    def __len__(self):
        return len(self._labels)

    def __getitem__(self, index):
        import ember
        img, target = self._images[index], int(self._labels[index])
        if self.transform is not None:
            img = self.transform(img)
        else:
            img = ember.tensor(img[None].astype(np.float32) / 255.0)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def tensors(self, dtype=None):
        """All samples at once: images (N, 1, H, W) scaled to 0..1 and labels (N,) int64."""
        import ember
        dtype = dtype or ember.get_default_dtype()
        x = self._images[:, None].astype(np.float64) / 255.0
        return ember.tensor(x, dtype=dtype), ember.tensor(self._labels)

    def __repr__(self):
        return f"Dataset MNIST\n    Number of datapoints: {len(self)}\n    Root location: {self.root}\n    " \
               f"Split: {'Train' if self.train else 'Test'}"
