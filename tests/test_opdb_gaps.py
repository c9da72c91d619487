"""Regression tests for the op_db findings closed in issue 15 (each was a KNOWN BUG or GAP entry of
tests/test_torch_op_db.py's XFAIL table): PyTorch is the oracle where it is installed."""
import numpy as np
import pytest

import ember


def _rows(seq):
    """A batch of two sequences: the sorted one and its reverse (unsorted, as op_db's vmap check
    builds its second row)."""
    return np.stack([seq, seq[..., ::-1]])


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_vmap_batched_sequence_matches_loop(torch, side):
    rng = np.random.default_rng(0)
    seq = np.sort(rng.standard_normal((3, 6)), -1)
    vals = rng.standard_normal((3, 4))
    s_b, v_b = _rows(seq), _rows(vals)
    f = (lambda s, v: ember.searchsorted(s, v, side=side))
    got = ember.func.vmap(f)(ember.tensor(s_b), ember.tensor(v_b))
    loop = ember.stack([f(ember.tensor(s_b[i]), ember.tensor(v_b[i])) for i in range(2)])
    ref = torch.func.vmap(lambda s, v: torch.searchsorted(s, v, side=side))(torch.tensor(s_b), torch.tensor(v_b))
    np.testing.assert_array_equal(got.numpy(), loop.numpy())
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    assert got.dtype == ember.int64


def test_bucketize_vmap_over_boundaries_and_scalar_inputs(torch):
    rng = np.random.default_rng(1)
    b = _rows(np.sort(rng.standard_normal(5)))
    x = rng.standard_normal((2, 5, 5))
    for in_dims in [(0, 0), (None, 0), (0, None)]:
        xs = x[0] if in_dims[0] is None else x
        bs = b[0] if in_dims[1] is None else b
        got = ember.func.vmap(lambda a, c: ember.bucketize(a, c, right=True, out_int32=True),
                              in_dims=in_dims)(ember.tensor(xs), ember.tensor(bs))
        ref = torch.func.vmap(lambda a, c: torch.bucketize(a, c, right=True, out_int32=True),
                              in_dims=in_dims)(torch.tensor(xs), torch.tensor(bs))
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
        assert got.dtype == ember.int32


def test_searchsorted_vmap_sorter_and_python_number(torch):
    rng = np.random.default_rng(2)
    seq = rng.standard_normal((2, 8))
    sorter = np.argsort(seq, -1)
    got = ember.func.vmap(lambda s, o: ember.searchsorted(s, -0.2, sorter=o, right=True))(
        ember.tensor(seq), ember.tensor(sorter))
    ref = torch.func.vmap(lambda s, o: torch.searchsorted(s, -0.2, sorter=o, right=True))(
        torch.tensor(seq), torch.tensor(sorter))
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
