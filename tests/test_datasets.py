"""ember.datasets: the bundled digits and the MNIST IDX loader (on small IDX files written here)."""
import gzip
import os

import numpy as np
import pytest

import ember
from ember.datasets import MNIST, digits_arrays, read_idx, write_idx
from ember.datasets._digits import split_mask


def test_digits_arrays_are_the_uci_digits():
    images, labels = digits_arrays()
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert labels.shape == (1797,) and labels.dtype == np.int64
    assert images.min() == 0 and images.max() == 16
    assert np.array_equal(np.bincount(labels), [178, 182, 177, 183, 181, 182, 181, 179, 174, 180])
    # the first sample is the well-known '0'
    assert labels[0] == 0 and images[0, 0].tolist() == [0, 0, 5, 13, 9, 1, 0, 0]


def test_digits_split_is_fixed_and_stratified():
    _, labels = digits_arrays()
    test = split_mask(labels)
    assert test.sum() == 364 and (~test).sum() == 1433
    per_class = np.bincount(labels[test], minlength=10)
    assert per_class.min() >= 35 and per_class.max() <= 37
    assert np.array_equal(test, split_mask(labels))  # no randomness
    assert os.path.exists(os.path.join(os.path.dirname(ember.datasets.__file__), "data", "LICENSE-digits.txt"))


def test_digits_tensor_dataset():
    if not hasattr(pytest.importorskip("ember.utils.data"), "TensorDataset"):
        pytest.skip("TensorDataset (ember.utils.data) has not landed yet")
    tr, te = ember.datasets.digits(), ember.datasets.digits(train=False)
    assert len(tr) == 1433 and len(te) == 364
    x, y = tr[0]
    assert tuple(x.shape) == (1, 8, 8) and x.dtype == ember.float32 and y.dtype == ember.int64
    images, labels = digits_arrays()
    test = split_mask(labels)
    np.testing.assert_allclose(te.tensors[0].numpy()[:, 0], images[test] / 16.0, rtol=1e-6)
    np.testing.assert_array_equal(tr.tensors[1].numpy(), labels[~test])
    flat = ember.datasets.digits(flatten=True, dtype=ember.float64)
    assert tuple(flat.tensors[0].shape) == (1433, 64) and flat.tensors[0].dtype == ember.float64


def _write_mnist(root, n_train=6, n_test=4, gz=False, size=28):
    rng = np.random.default_rng(0)
    data = {}
    for train, n in ((True, n_train), (False, n_test)):
        prefix = "train" if train else "t10k"
        imgs = rng.integers(0, 256, (n, size, size), dtype=np.uint8)
        lbls = rng.integers(0, 10, n).astype(np.uint8)
        ext = ".gz" if gz else ""
        write_idx(os.path.join(root, f"{prefix}-images-idx3-ubyte{ext}"), imgs)
        write_idx(os.path.join(root, f"{prefix}-labels-idx1-ubyte{ext}"), lbls)
        data[train] = imgs, lbls
    return data


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_reads_idx_files(tmp_path, gz):
    data = _write_mnist(str(tmp_path), gz=gz)
    for train in (True, False):
        ds = MNIST(tmp_path, train=train)
        imgs, lbls = data[train]
        assert len(ds) == len(lbls)
        np.testing.assert_array_equal(ds.data.numpy(), imgs)
        np.testing.assert_array_equal(ds.targets.numpy(), lbls.astype(np.int64))
        x, y = ds[1]
        assert tuple(x.shape) == (1, 28, 28) and y == int(lbls[1])
        np.testing.assert_allclose(x.numpy()[0], imgs[1] / 255.0, rtol=1e-6)
        xs, ys = ds.tensors()
        assert tuple(xs.shape) == (len(lbls), 1, 28, 28) and ys.dtype == ember.int64
    # transforms
    ds = MNIST(tmp_path, transform=lambda a: a.sum(), target_transform=lambda t: -t)
    assert ds[0][0] == data[True][0][0].sum() and ds[0][1] == -int(data[True][1][0])


def test_idx_roundtrip_and_header(tmp_path):
    for dtype in (np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64):
        a = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
        p = tmp_path / f"a_{np.dtype(dtype).name}.idx"
        write_idx(p, a)
        b = read_idx(p)
        assert b.dtype == a.dtype and np.array_equal(a, b)
    raw = (tmp_path / "a_int32.idx").read_bytes()
    assert raw[:4] == bytes([0, 0, 0x0C, 3]) and raw[4:8] == (2).to_bytes(4, "big")
    with gzip.open(tmp_path / "g.gz", "wb") as f:
        f.write(raw)
    assert np.array_equal(read_idx(tmp_path / "g.gz"), read_idx(tmp_path / "a_int32.idx"))


def test_mnist_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        MNIST(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        MNIST(tmp_path)
    with pytest.raises(RuntimeError, match="never downloads"):
        MNIST(tmp_path, download=True)
    _write_mnist(str(tmp_path))
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\x00\x00\x08\x03" + (5).to_bytes(4, "big") * 3 + b"xx")
    with pytest.raises(RuntimeError, match="holds 2 bytes"):
        MNIST(tmp_path)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"PK\x03\x04junk")
    with pytest.raises(RuntimeError, match="not an IDX file"):
        MNIST(tmp_path)
    _write_mnist(str(tmp_path), n_train=5)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(3, np.uint8))
    with pytest.raises(RuntimeError, match="do not match"):
        MNIST(tmp_path)
    with pytest.raises(TypeError, match="unsupported dtype"):
        write_idx(tmp_path / "x.idx", np.zeros(2, np.uint64))
