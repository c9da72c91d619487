"""DLPack exchange with PyTorch and NumPy (issue 17): zero-copy both ways, views and strides kept."""
import collections

import numpy as np
import pytest

import ember
from ember.utils import dlpack


def test_from_torch_shares_memory_and_strides(torch):
    t = torch.arange(12.).reshape(3, 4).t()[1:]
    e = ember.from_dlpack(t)
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    t[0, 0] = -7.0
    assert e[0, 0].item() == -7.0
    assert dlpack.from_dlpack(torch.ones(2, dtype=torch.int32)).dtype == ember.int32


def test_to_torch_and_numpy_share_memory(torch):
    e = ember.arange(12.).reshape(3, 4)[:, 1:]
    t = torch.from_dlpack(e)
    assert t.stride() == e.stride() and t.dtype == torch.float32
    e[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    n = np.from_dlpack(e)
    assert n[0, 0] == 42.0 and n.strides == e.numpy().strides
    # a broadcast (read-only) view exports with its values
    b = ember.tensor([1.0, 2.0]).expand(3, 2)
    np.testing.assert_array_equal(torch.from_dlpack(b).numpy(), np.broadcast_to([1.0, 2.0], (3, 2)))
    # the legacy capsule API
    t2 = torch.utils.dlpack.from_dlpack(dlpack.to_dlpack(ember.ones(3)))
    assert t2.tolist() == [1.0, 1.0, 1.0]
    assert dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(torch.zeros(2))).tolist() == [0.0, 0.0]


def test_requires_grad_refused_as_pytorch(torch):
    with pytest.raises(RuntimeError, match="require gradient"):
        torch.from_dlpack(ember.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="require"):
        ember.from_dlpack(torch.ones(2, requires_grad=True))


def test_as_tensor_and_tensor_of_foreign_objects(torch):
    t = torch.arange(4.)
    shared = ember.as_tensor(t)
    t[0] = 9.0
    assert shared[0].item() == 9.0                 # as_tensor shares, as torch.as_tensor(ndarray) does
    copied = ember.tensor(t)
    t[0] = 1.0
    assert copied[0].item() == 9.0                 # tensor() copies
    assert ember.as_tensor(t, dtype=ember.float64).dtype == ember.float64
    assert ember.tensor(collections.deque([1, 2, 3])).tolist() == [1, 2, 3]

    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return np.array([1.5, 2.5])
    assert ember.tensor(ArrayLike()).tolist() == [1.5, 2.5]


def test_numpy_round_trip_without_torch():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    e = ember.from_dlpack(a)
    a[0, 0] = 5
    assert e[0, 0].item() == 5
    assert np.from_dlpack(e).base is not None or np.shares_memory(np.from_dlpack(e), a)
    with pytest.raises(TypeError, match="__dlpack__"):
        ember.from_dlpack([1, 2])


def test_submodules_after_bare_import():
    import subprocess
    import sys
    code = "import ember; ember.nn.parallel.DistributedDataParallel; ember.utils.data.DataLoader; " \
           "ember.autograd.functional.jacobian; ember.utils.dlpack.from_dlpack"
    subprocess.run([sys.executable, "-c", code], check=True)
