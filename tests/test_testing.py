"""ember.testing.assert_close follows torch.testing.assert_close; make_tensor."""
import pytest

import ember
from ember.testing import assert_close, make_tensor

CASES = [
    (lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0 + 1e-6]))),         # within float32 tols
    (lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.1]))),                # not close
    (lambda m: (m.tensor([1.0]), m.tensor([1.0], dtype=m.float64))),         # dtype mismatch
    (lambda m: (m.tensor([1.0, 2.0]), m.tensor([[1.0, 2.0]]))),              # shape mismatch
    (lambda m: (m.tensor([1, 2]), m.tensor([1, 3]))),                        # ints exact
    (lambda m: (m.tensor([float("nan")]), m.tensor([float("nan")]))),        # nan != nan by default
    (lambda m: (m.tensor([float("inf")]), m.tensor([float("inf")]))),
    (lambda m: (m.tensor([1.0], dtype=m.float64), m.tensor([1.0 + 1e-8], dtype=m.float64))),
    (lambda m: (m.tensor([1.0], dtype=m.float64), m.tensor([1.0 + 1e-6], dtype=m.float64))),
    (lambda m: ([m.tensor([1.0]), m.tensor([2.0])], [m.tensor([1.0]), m.tensor([2.0])])),
    (lambda m: ({"a": m.tensor([1.0])}, {"a": m.tensor([1.5])})),
    (lambda m: (1.0, 1.0 + 1e-9)), (lambda m: (1.0, 1.1)), (lambda m: (2, 2)),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_same_verdict_as_torch(torch, k):
    def verdict(m, fn):
        a, b = CASES[k](m)
        try:
            fn(a, b)
            return "ok"
        except AssertionError:
            return "assert"
        except (TypeError, ValueError) as e:
            return type(e).__name__
    assert verdict(ember, assert_close) == verdict(torch, torch.testing.assert_close)


def test_tolerance_arguments_and_message():
    assert_close(ember.tensor([1.0]), ember.tensor([1.05]), rtol=0.1, atol=0.0)
    with pytest.raises(ValueError):
        assert_close(ember.tensor([1.0]), ember.tensor([1.0]), rtol=0.1)
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 3 \(33.3%\)"):
        assert_close(ember.tensor([1.0, 2.0, 3.0]), ember.tensor([1.0, 2.5, 3.0]))
    assert_close(ember.tensor([float("nan")]), ember.tensor([float("nan")]), equal_nan=True)
    assert_close(ember.tensor([1.0]), ember.tensor([1.0], dtype=ember.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="custom"):
        assert_close(ember.tensor([1.0]), ember.tensor([2.0]), msg="custom")


def test_requires_grad_tensors_compare():
    x = ember.ones(2, requires_grad=True)
    assert_close(x * 2, ember.full((2,), 2.0))


def test_make_tensor():
    t = make_tensor(3, 4, dtype=ember.float32, low=-1, high=1)
    assert t.shape == (3, 4) and t.dtype is ember.float32
    assert t.min().item() >= -1 and t.max().item() < 1
    i = make_tensor((5,), dtype=ember.int64, low=0, high=3)
    assert i.dtype is ember.int64 and i.min().item() >= 0 and i.max().item() < 3
    b = make_tensor(4, dtype=ember.bool)
    assert b.dtype is ember.bool
    g = make_tensor(2, dtype=ember.float64, requires_grad=True)
    assert g.requires_grad
    nc = make_tensor(3, 3, dtype=ember.float32, noncontiguous=True)
    assert not nc.is_contiguous()
    z = make_tensor(100, dtype=ember.float32, exclude_zero=True)
    assert (z != 0).all()
