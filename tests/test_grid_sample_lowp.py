"""grid_sample in float16 and bfloat16 against PyTorch's CPU kernels, and at the clip bounds (issue 17).

PyTorch's kernels compute these dtypes op by op in the dtype: the unnormalised coordinates
(((x + 1) * W - 1) / 2, each step rounded), the per-axis distances (ix - ix_west, ix_east - ix), the
corner weights (x distance times y, then z), the terms added corner by corner (x fastest), bicubic
separably (each row of taps along x, then the rows along y). ember's composite follows that order,
so the forward is PyTorch's bit for bit. The grid's gradient of bilinear sampling takes, per axis, the
differences of the corner values first ((ne - nw) * s + (se - sw) * n in 2-d), as PyTorch's kernel does.
"""
import itertools

import numpy as np
import pytest

import ember

F = ember.nn.functional
DTYPES = ["float16", "bfloat16"]
ULP = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def _case(torch, dtype, nd, seed=0):
    rs = np.random.RandomState(seed)
    sp, osp = ((5, 6), (4, 7)) if nd == 2 else ((3, 4, 5), (2, 3, 4))
    tdt = getattr(torch, dtype)
    x = torch.tensor(rs.randn(2, 3, *sp).astype(np.float32)).to(tdt).requires_grad_()
    g = torch.tensor((rs.rand(2, *osp, nd) * 2.4 - 1.2).astype(np.float32)).to(tdt).requires_grad_()
    c = torch.tensor(rs.randn(2, 3, *osp).astype(np.float32)).to(tdt)
    e = [ember.from_numpy(t.detach().float().numpy()).to(getattr(ember, dtype)) for t in (x, g, c)]
    return (x, g, c), (e[0].requires_grad_(), e[1].requires_grad_(), e[2])


CASES = [(nd, mode, pad, ac) for nd in (2, 3) for mode, pad, ac in itertools.product(
    ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"), (False, True)) if not (nd == 3 and mode == "bicubic")]


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_is_pytorchs_bit_for_bit(torch, dtype):
    for nd, mode, pad, ac in CASES:
        (x, g, _), (ex, eg, _) = _case(torch, dtype, nd)
        want = torch.nn.functional.grid_sample(x, g, mode=mode, padding_mode=pad, align_corners=ac)
        got = F.grid_sample(ex, eg, mode=mode, padding_mode=pad, align_corners=ac)
        assert got.dtype.name == dtype
        np.testing.assert_array_equal(got.detach().float().numpy(), want.detach().float().numpy(),
                                      err_msg=f"{nd}-d {mode} {pad} align_corners={ac}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_match_pytorch(torch, dtype):
    # the grid's gradient sums channels in float32 (PyTorch: one rounding per channel): a few ulps of the
    # largest entry; the input's scatter-adds the corners in another order
    tol = {("bilinear", 2): 2, ("bilinear", 3): 4, ("nearest", 2): 0, ("nearest", 3): 0, ("bicubic", 2): 12}
    for nd, mode, pad, ac in CASES:
        (x, g, c), (ex, eg, ec) = _case(torch, dtype, nd)
        want = torch.autograd.grad(torch.nn.functional.grid_sample(x, g, mode=mode, padding_mode=pad,
                                                                   align_corners=ac), (x, g), c)
        got = ember.autograd.grad(F.grid_sample(ex, eg, mode=mode, padding_mode=pad, align_corners=ac), (ex, eg),
                                  ec, allow_unused=True)
        for name, a, b in zip(("input", "grid"), got, want):
            b = b.float().numpy()
            a = np.zeros_like(b) if a is None else a.float().numpy()
            err = np.abs(a - b).max() / max(np.abs(b).max(), 1e-6)
            assert err <= tol[(mode, nd)] * ULP[dtype], (nd, mode, pad, ac, name, err)


@pytest.mark.parametrize("pad", ["border", "reflection"])
def test_grid_gradient_is_zero_on_the_clip_bounds(torch, pad):
    """A point clipped onto the border (or reflected onto it) does not move with the grid: gradient 0,
    as PyTorch (float64, so not a rounding question)."""
    for ac, gx in ((True, 1.0), (True, -1.0), (False, 1.0), (False, -1.0), (False, 0.6)):
        res = []
        for L in (torch, ember):
            x = L.arange(12.0, dtype=L.float64).reshape(1, 1, 3, 4)
            g = L.tensor([[[[gx, 0.3]]]], dtype=L.float64, requires_grad=True)
            out = L.nn.functional.grid_sample(x, g, padding_mode=pad, align_corners=ac)
            res.append(L.autograd.grad(out.sum(), g)[0].flatten().tolist())
        assert res[1] == pytest.approx(res[0]), (pad, ac, gx, res)


def test_low_precision_grid_gradient_rule_has_the_right_derivatives(monkeypatch):
    """The float16/bfloat16 rule (value with detached weights plus (c - detach(c)) * term per axis) run in
    float64: first and second derivatives against finite differences."""
    from ember.ops import sampling
    monkeypatch.setattr(sampling, "_split_grid_grad", lambda input: True)
    rs = np.random.RandomState(0)
    for nd, pads in ((2, ("zeros", "border")), (3, ("zeros",))):
        sp = (3, 4) if nd == 2 else (2, 3, 3)
        x = ember.tensor(rs.randn(1, 1, *sp)).requires_grad_()
        g = ember.tensor(rs.rand(1, 1, 2, *((nd,) if nd == 2 else (1, nd))) * 2.2 - 1.1).requires_grad_()
        for pad in pads:
            def f(x, g):
                return F.grid_sample(x, g, padding_mode=pad, align_corners=False)
            assert ember.autograd.gradcheck(f, (x, g))
            assert ember.autograd.gradgradcheck(f, (x, g))
