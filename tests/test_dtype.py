"""dtype promotion follows PyTorch: category wins, dimensioned tensors beat 0-dim ones beat Python
numbers within a category; float default is float32."""
import itertools

import numpy as np
import pytest

import ember

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _pair(torch, dt, zero_dim, lib):
    shape = () if zero_dim else (2,)
    return lib.ones(shape, dtype=getattr(lib, dt))


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_binary_promotion_matches_torch(torch, a, b):
    for za, zb in ((False, False), (True, False), (False, True), (True, True)):
        e = _pair(torch, a, za, ember) + _pair(torch, b, zb, ember) if not (a == b == "bool") else \
            _pair(torch, a, za, ember) | _pair(torch, b, zb, ember)
        t = _pair(torch, a, za, torch) + _pair(torch, b, zb, torch) if not (a == b == "bool") else \
            _pair(torch, a, za, torch) | _pair(torch, b, zb, torch)
        assert e.dtype.name == str(t.dtype)[6:], (a, b, za, zb)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_scalar_promotion_matches_torch(torch, dt, scalar):
    e = ember.ones(2, dtype=getattr(ember, dt)) * scalar
    t = torch.ones(2, dtype=getattr(torch, dt)) * scalar
    assert e.dtype.name == str(t.dtype)[6:]
    e = ember.ones(2, dtype=getattr(ember, dt)) / 2
    t = torch.ones(2, dtype=getattr(torch, dt)) / 2
    assert e.dtype.name == str(t.dtype)[6:]


def test_promote_types_and_result_type(torch):
    for a, b in itertools.product(DTYPES, DTYPES):
        e = ember.promote_types(getattr(ember, a), getattr(ember, b))
        t = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert e.name == str(t)[6:]
    assert ember.result_type(ember.ones(2, dtype=ember.int32), 2.0) is ember.float32


def test_numpy_scalars_are_weak():
    x = ember.ones(3)
    assert (x + np.float64(0.5)).dtype is ember.float32
    assert (ember.ones(3, dtype=ember.int32) * np.int64(3)).dtype is ember.int32


def test_unary_float_ops_on_ints_give_default_float():
    assert ember.exp(ember.tensor([1, 2])).dtype is ember.float32
    assert ember.tensor([1, 2]).float().mean().dtype is ember.float32
    with pytest.raises(RuntimeError):
        ember.tensor([1, 2]).mean()


def test_dtype_objects():
    assert ember.float32.is_floating_point and not ember.int64.is_floating_point
    assert ember.float == ember.float32 and ember.double is ember.float64 and ember.long is ember.int64
    assert repr(ember.float32) == "torch.float32" or repr(ember.float32) == "ember.float32"
    assert ember.tensor([1.5]).to(ember.int32).dtype is ember.int32
    assert ember.tensor([1.7, -1.7]).int().tolist() == [1, -1]
    assert ember.tensor([0.0, 2.0]).bool().tolist() == [False, True]
    assert ember.tensor([1, 2]).double().dtype is ember.float64
    assert ember.tensor([1.0]).type(ember.float64).dtype is ember.float64
    assert ember.tensor([1.0]).type() == "torch.FloatTensor"
    assert ember.tensor([1.0]).element_size() == 4


def test_inplace_dtype_rules():
    x = ember.ones(2, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="can't be cast|result type"):
        x.add_(1.5)
    y = ember.ones(2)
    y.add_(ember.ones(2, dtype=ember.float64))  # float64 -> float32 in place is allowed
    assert y.dtype is ember.float32
    z = ember.ones(2)
    z.mul_(2)
    assert z.tolist() == [2.0, 2.0]


def test_finfo_iinfo_match_torch(torch):
    for name in ("float16", "float32", "float64"):
        e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
        for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
            assert getattr(e, attr) == getattr(t, attr), (name, attr)
    assert ember.finfo().dtype == "float32"
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        e, t = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
        assert (e.bits, e.min, e.max, e.dtype) == (t.bits, t.min, t.max, t.dtype)
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError):
        ember.iinfo(ember.float32)
