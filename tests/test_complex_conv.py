"""Complex convolutions against PyTorch: conv1d/2d/3d and conv_transpose1d/2d/3d with groups, stride,
padding and dilation (values and torch.autograd's gradients), gradcheck/gradgradcheck with forward
mode on complex128, channels_last, the nn modules with dtype=cfloat, and PyTorch's errors for mixed
real/complex operands."""
import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember.autograd import gradcheck, gradgradcheck


def _c(rng, shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


# (function name, input shape, weight shape, bias, kwargs)
CASES = [
    ("conv1d", (2, 4, 9), (6, 2, 3), True, dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv1d", (4, 7), (3, 4, 2), False, dict(padding="same")),
    ("conv2d", (2, 3, 7, 6), (4, 3, 3, 2), True, dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))),
    ("conv2d", (1, 4, 6, 6), (4, 2, 3, 3), True, dict(groups=2, padding=1)),
    ("conv2d", (2, 2, 10, 10), (3, 2, 3, 3), False, dict(padding=1)),  # Winograd-sized
    ("conv2d", (3, 5, 5), (2, 3, 1, 1), True, {}),
    ("conv3d", (2, 2, 5, 4, 5), (4, 1, 2, 3, 2), True, dict(stride=(1, 2, 1), padding=1, groups=2)),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), True, dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (2, 4, 4, 5), (4, 1, 3, 2), True, dict(stride=2, padding=(1, 0), groups=2,
                                                                dilation=(1, 2))),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 3, 2, 2), False, dict(stride=2, output_padding=1, dilation=3)),
    ("conv_transpose3d", (1, 2, 3, 3, 2), (2, 2, 2, 2, 2), True, dict(stride=2, padding=(0, 1, 0),
                                                                       output_padding=(1, 0, 1))),
]


def _run(lib, name, arrs, kw, grad):
    ts = [lib.tensor(a, requires_grad=grad) for a in arrs]
    return ts, getattr(lib.nn.functional, name)(*ts, **kw)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_conv_values_and_grads_match_torch(torch, case, dtype):
    name, xs, ws, bias, kw = case
    rng = np.random.default_rng(0)
    arrs = [_c(rng, xs, dtype), _c(rng, ws, dtype)] + ([_c(rng, (ws[1] * kw.get("groups", 1)
                                                                if "transpose" in name else ws[0],), dtype)]
                                                        if bias else [])
    tol = 1e-4 if dtype == np.complex64 else 1e-10
    ei, eo = _run(ember, name, arrs, kw, True)
    ti, to = _run(torch, name, arrs, kw, True)
    assert eo.dtype == getattr(ember, str(to.dtype).split(".")[-1])
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol)
    w = _c(rng, tuple(to.shape), dtype)
    # a real loss: Re(sum(conj(w) * out)), whose gradient is w by PyTorch's convention for out
    (ember.view_as_real(eo) * ember.view_as_real(ember.tensor(w))).sum().backward()
    (torch.view_as_real(to) * torch.view_as_real(torch.tensor(w))).sum().backward()
    for a, b in zip(ei, ti):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)


GRADCHECK_CASES = [
    ("conv1d", (1, 4, 6), (2, 2, 3), True, dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv2d", (1, 2, 4, 4), (2, 1, 2, 2), True, dict(stride=(2, 1), padding=(1, 0), groups=2)),
    ("conv3d", (1, 1, 3, 3, 3), (2, 1, 2, 2, 2), True, dict(padding=(1, 0, 0), dilation=(1, 1, 2))),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 1, 2, 2), True, dict(stride=2, padding=(1, 0), groups=2)),
    ("conv_transpose3d", (1, 1, 2, 2, 2), (1, 2, 2, 2, 2), True, dict(stride=2, output_padding=1)),
]


@pytest.mark.parametrize("case", GRADCHECK_CASES, ids=lambda c: c[0])
def test_complex_conv_gradcheck(case):
    name, xs, ws, bias, kw = case
    rng = np.random.default_rng(1)
    arrs = [_c(rng, xs), _c(rng, ws)] + ([_c(rng, (ws[1] * kw.get("groups", 1) if "transpose" in name
                                                   else ws[0],))] if bias else [])
    ts = [ember.tensor(a, requires_grad=True) for a in arrs]
    f = getattr(EF, name)
    fn = lambda *t: f(*t, **kw)  # noqa: E731
    assert gradcheck(fn, ts, check_forward_ad=True)
    assert gradgradcheck(fn, ts)


def test_channels_last_complex_conv2d_matches_torch(torch):
    rng = np.random.default_rng(2)
    x, w, b = _c(rng, (2, 3, 8, 8), np.complex64), _c(rng, (5, 3, 3, 3), np.complex64), _c(rng, (5,), np.complex64)
    outs = []
    for lib in (ember, torch):
        xt = lib.tensor(x).to(memory_format=lib.channels_last).requires_grad_()
        wt = lib.tensor(w).requires_grad_()
        o = lib.nn.functional.conv2d(xt, wt, lib.tensor(b), padding=1)
        lib.view_as_real(o).pow(2).sum().backward()
        outs.append((o.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(),
                     o.is_contiguous(memory_format=lib.channels_last)))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mod,args,shape", [("Conv1d", (2, 3, 3), (2, 2, 7)), ("Conv2d", (2, 3, 3), (1, 2, 6, 6)),
                                            ("Conv3d", (2, 3, 2), (1, 2, 4, 4, 4)),
                                            ("ConvTranspose1d", (2, 3, 3), (2, 2, 5)),
                                            ("ConvTranspose2d", (2, 3, 3), (1, 2, 4, 4)),
                                            ("ConvTranspose3d", (2, 3, 2), (1, 2, 3, 3, 3))])
def test_conv_modules_with_complex_dtype_match_torch(torch, mod, args, shape):
    tm = getattr(torch.nn, mod)(*args, dtype=torch.cfloat)
    em = getattr(ember.nn, mod)(*args, dtype=ember.cfloat)
    assert em.weight.dtype is ember.cfloat and em.bias.dtype is ember.cfloat
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = _c(np.random.default_rng(3), shape, np.complex64)
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_padding_modes_on_complex_match_torch(torch):
    x = _c(np.random.default_rng(4), (1, 2, 5, 5), np.complex64)
    for mode in ("reflect", "replicate", "circular"):
        tm = torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode, dtype=torch.cfloat)
        em = ember.nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode, dtype=ember.cfloat)
        em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
        np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", [
    lambda m, z, r: m.nn.functional.conv2d(z(1, 2, 5, 5), r(3, 2, 3, 3)),
    lambda m, z, r: m.nn.functional.conv2d(r(1, 2, 5, 5), z(3, 2, 3, 3)),
    lambda m, z, r: m.nn.functional.conv2d(z(1, 2, 5, 5), z(3, 2, 3, 3), r(3)),
    lambda m, z, r: m.nn.functional.conv3d(z(1, 2, 3, 3, 3), r(3, 2, 2, 2, 2)),
    lambda m, z, r: m.nn.functional.conv_transpose2d(z(1, 2, 3, 3), r(2, 3, 2, 2)),
    # a complex bias on real input
    lambda m, z, r: m.nn.functional.conv2d(r(1, 2, 5, 5), r(3, 2, 3, 3), z(3)),
    lambda m, z, r: m.nn.functional.conv1d(r(1, 2, 5), r(3, 2, 3), z(3)),
    lambda m, z, r: m.nn.functional.conv3d(r(1, 2, 3, 3, 3), r(3, 2, 2, 2, 2), z(3)),
    lambda m, z, r: m.nn.functional.conv_transpose2d(r(1, 2, 3, 3), r(2, 3, 2, 2), z(3)),
    lambda m, z, r: m.nn.functional.conv_transpose1d(r(1, 2, 3), r(2, 3, 2), z(3)),
    lambda m, z, r: m.nn.functional.conv_transpose3d(r(1, 2, 3, 3, 3), r(2, 3, 2, 2, 2), z(3)),
])
def test_mixed_real_and_complex_operands_raise_as_torch(torch, f):
    def mk(m, dtype):
        return lambda *s: m.ones(*s, dtype=dtype)
    with pytest.raises(RuntimeError):
        f(torch, mk(torch, torch.cfloat), mk(torch, torch.float32))
    with pytest.raises(RuntimeError, match="type"):
        f(ember, mk(ember, ember.cfloat), mk(ember, ember.float32))
