"""ember.fft, stft/istft and the window functions against PyTorch: values over n/s, dim, norm and
dtypes, gradients of real losses, gradcheck in complex128, forward mode, vmap, and the errors."""
import itertools

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

C2C = ["fft", "ifft"]
C2C_N = ["fft2", "ifft2", "fftn", "ifftn"]
R2C = ["rfft", "ihfft"]
R2C_N = ["rfft2", "ihfft2", "rfftn", "ihfftn"]
C2R = ["irfft", "hfft"]
C2R_N = ["irfft2", "hfft2", "irfftn", "hfftn"]
NORMS = [None, "backward", "forward", "ortho"]


def _np(t):
    t = t.detach()
    if hasattr(t, "resolve_conj"):
        t = t.resolve_conj()
    return t.numpy()


def _close(a, b, tol):
    assert tuple(a.shape) == tuple(b.shape), (tuple(a.shape), tuple(b.shape))
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], (a.dtype, b.dtype)
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def _data(shape, kind, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if kind == "complex":
        x = x + 1j * rng.standard_normal(shape)
    if kind == "int":
        x = np.round(x * 3).astype(np.int64)
    return x


def _one_d_args():
    return [dict(), dict(n=5), dict(n=12), dict(dim=0), dict(n=3, dim=-2), dict(dim=1, n=9)]


def _n_d_args():
    return [dict(), dict(s=(3, 5)), dict(dim=(0, 2)), dict(s=(4, 2, 7)), dict(s=(-1, 6), dim=(0, -1)),
            dict(dim=(-1,)), dict(dim=(2, 0))]


@pytest.mark.parametrize("name", C2C + R2C + C2R)
@pytest.mark.parametrize("norm", NORMS)
def test_one_dimensional_transforms_match_torch(torch, name, norm):
    kinds = ["float64", "float32", "complex", "int"] if name not in R2C else ["float64", "float32", "int"]
    for kind, kw in itertools.product(kinds, _one_d_args()):
        x = _data((4, 6, 8), kind)
        dt = "float32" if kind == "float32" else None
        ex, tx = ember.tensor(x), torch.tensor(x)
        if dt:
            ex, tx = ex.float(), tx.float()
        a = getattr(ember.fft, name)(ex, norm=norm, **kw)
        b = getattr(torch.fft, name)(tx, norm=norm, **kw)
        _close(a, b, 1e-4 if dt or kind == "int" else 1e-10)


@pytest.mark.parametrize("name", C2C_N + R2C_N + C2R_N)
def test_n_dimensional_transforms_match_torch(torch, name):
    for kind, kw, norm in itertools.product(["float64", "complex"] if name not in R2C_N else ["float64"],
                                            _n_d_args() if not name.endswith("2") else
                                            [dict(), dict(s=(3, 5)), dict(dim=(0, 2)), dict(s=(5, 4), dim=(1, 0))],
                                            NORMS):
        x = _data((4, 6, 8), kind)
        a = getattr(ember.fft, name)(ember.tensor(x), norm=norm, **kw)
        b = getattr(torch.fft, name)(torch.tensor(x), norm=norm, **kw)
        _close(a, b, 1e-10)


def test_round_trips_and_out():
    x = ember.tensor(_data((3, 10), "float64"))
    np.testing.assert_allclose(ember.fft.irfft(ember.fft.rfft(x), n=10).numpy(), x.numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.fft.ifft(ember.fft.fft(x)).real.numpy(), x.numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.fft.hfft(ember.fft.ihfft(x), n=10).numpy(), x.numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.fft.irfftn(ember.fft.rfftn(x, norm="ortho"), s=(3, 10), norm="ortho").numpy(),
                               x.numpy(), atol=1e-12)
    out = ember.empty(3, 6, dtype=ember.complex128)
    r = ember.fft.rfft(x, out=out)
    assert r is out and np.allclose(out.numpy(), np.fft.rfft(x.numpy()))


def test_helpers_match_torch(torch):
    for n, d in ((0, 1.0), (1, 1.0), (7, 0.5), (8, 2.0)):
        for name in ("fftfreq", "rfftfreq"):
            _close(getattr(ember.fft, name)(n, d), getattr(torch.fft, name)(n, d), 1e-7)
            _close(getattr(ember.fft, name)(n, d, dtype=ember.float64),
                   getattr(torch.fft, name)(n, d, dtype=torch.float64), 1e-12)
    x = _data((4, 5, 6), "float64")
    for name in ("fftshift", "ifftshift"):
        for dim in (None, 0, -1, (0, 2), (1,)):
            _close(getattr(ember.fft, name)(ember.tensor(x), dim=dim), getattr(torch.fft, name)(torch.tensor(x), dim=dim),
                   0)


@pytest.mark.parametrize("case", [
    lambda m, x: m.fft.fft(x, norm="bad"),
    lambda m, x: m.fft.fft(x, n=0),
    lambda m, x: m.fft.rfft(x, n=-2),
    lambda m, x: m.fft.rfft(x * 1j),
    lambda m, x: m.fft.fft(x.half()),
    lambda m, x: m.fft.fftn(x, s=(2, 3), dim=(0,)),
    lambda m, x: m.fft.fftn(x, dim=(0, 0)),
    lambda m, x: m.fft.fft2(x.reshape(-1)),
    lambda m, x: m.fft.fft(x, dim=3),
    lambda m, x: m.fft.irfft(x[:, :1]),
    lambda m, x: m.fft.fft(x[:0], dim=0),
    lambda m, x: m.fft.rfftn(x, s=(2, 3, 4)),
])
def test_errors_match_torch(torch, case):
    with pytest.raises(Exception) as te:
        case(torch, torch.ones(3, 4))
    with pytest.raises(type(te.value) if not isinstance(te.value, RuntimeError) else RuntimeError):
        case(ember, ember.ones(3, 4))


# ----------------------------------------------------------------------------- derivatives


def _grad_case(name):
    if name in R2C or name in R2C_N:
        return "real"
    return "complex"


@pytest.mark.parametrize("name", C2C + R2C + C2R + C2R_N + C2C_N + R2C_N)
@pytest.mark.parametrize("norm", ["backward", "forward", "ortho"])
def test_gradients_of_real_losses_match_torch(torch, name, norm):
    """backward of a real loss through the transform (PyTorch's convention for complex gradients)."""
    rng = np.random.default_rng(0)
    one_d = name in C2C + R2C + C2R
    kws = [dict(), dict(n=5), dict(n=11, dim=0)] if one_d else [dict(), dict(s=(3, 7)), dict(dim=(0, 1))]
    for kw in kws:
        x = _data((4, 6), _grad_case(name))
        grads = []
        for lib in (ember, torch):
            t = lib.tensor(x, requires_grad=True)
            y = getattr(lib.fft, name)(t, norm=norm, **kw)
            w = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape) + ((2,) if y.is_complex() else ())))
            yr = lib.view_as_real(y.resolve_conj()) if y.is_complex() else y
            (yr * w).sum().backward()
            grads.append(t.grad)
        _close(grads[0], grads[1], 1e-10)
    del rng


@pytest.mark.parametrize("f", [
    lambda z: ember.fft.fft(z, n=5, norm="ortho"),
    lambda z: ember.fft.ifft(z, dim=0),
    lambda z: ember.fft.irfft(z, n=7),
    lambda z: ember.fft.irfft(z),
    lambda z: ember.fft.hfft(z, n=6, norm="forward"),
    lambda z: ember.fft.fftn(z, s=(2, 5)),
    lambda z: ember.fft.irfftn(z, s=(4, 5)),
    lambda z: ember.fft.hfft2(z),
    lambda z: ember.fft.rfft(z.real, n=5) * z[:, :3],
    lambda z: ember.fft.ihfft(z.imag, norm="ortho"),
    lambda z: ember.fft.rfft2(z.abs()),
])
def test_gradcheck_complex128(f):
    rng = np.random.default_rng(0)
    z = ember.tensor(rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(f, (z,), check_forward_ad=True, check_batched_grad=True)
    assert gradgradcheck(f, (z,))


def test_forward_mode_and_vmap_match_torch(torch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8))
    t = rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8))
    for f in (lambda m, v: m.fft.fft(v, norm="ortho"), lambda m, v: m.fft.irfft(v, n=9),
              lambda m, v: m.fft.hfft(v), lambda m, v: m.fft.fftn(v), lambda m, v: m.fft.rfft(v.real, n=6)):
        _, te = ember.func.jvp(lambda v: f(ember, v), (ember.tensor(x),), (ember.tensor(t),))
        _, tt = torch.func.jvp(lambda v: f(torch, v), (torch.tensor(x),), (torch.tensor(t),))
        _close(te, tt, 1e-10)
        ve = ember.func.vmap(lambda v: f(ember, v))(ember.tensor(x))
        vt = torch.func.vmap(lambda v: f(torch, v))(torch.tensor(x))
        _close(ve, vt, 1e-10)


# ----------------------------------------------------------------------------- stft / istft and windows

STFT_CASES = [dict(n_fft=16), dict(n_fft=16, hop_length=4, win_length=12, window="hann"),
              dict(n_fft=15, hop_length=5, center=False), dict(n_fft=16, pad_mode="constant", normalized=True,
                                                             window="hann"),
              dict(n_fft=16, onesided=False, window="hann"), dict(n_fft=10, pad_mode="replicate", hop_length=3),
              dict(n_fft=16, pad_mode="circular")]


def _with_window(lib, kw):
    kw = dict(kw)
    if kw.get("window") == "hann":
        kw["window"] = lib.hann_window(kw.get("win_length", kw["n_fft"]), dtype=lib.float64)
    return kw


@pytest.mark.parametrize("case", STFT_CASES, ids=[str(c) for c in STFT_CASES])
def test_stft_and_istft_match_torch(torch, case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 100))
    for xin in (x, x[0], x + 1j * rng.standard_normal(x.shape)):
        kw = dict(case)
        if xin.dtype.kind == "c":
            kw.pop("onesided", None)
        res = []
        for lib in (ember, torch):
            xt = lib.tensor(xin, requires_grad=True)
            s = lib.stft(xt, return_complex=True, **_with_window(lib, kw))
            w = lib.tensor(np.random.default_rng(1).standard_normal(tuple(s.shape) + (2,)))
            g, = lib.autograd.grad((lib.view_as_real(s) * w).sum(), [xt])
            ikw = _with_window(lib, {k: v for k, v in kw.items() if k != "pad_mode"})
            st = s.detach().clone().requires_grad_(True)
            y = lib.istft(st, length=xin.shape[-1], return_complex=xin.dtype.kind == "c", **ikw)
            w2 = lib.tensor(np.random.default_rng(2).standard_normal(tuple(y.shape) + ((2,) if y.is_complex() else ())))
            gy, = lib.autograd.grad(((lib.view_as_real(y) if y.is_complex() else y) * w2).sum(), [st])
            res.append((s, g, y, gy))
        for a, b in zip(*res):
            _close(a, b, 1e-9)
        np.testing.assert_allclose(_np(res[0][2]), xin, atol=1e-9)  # istft inverts stft


def test_stft_options_and_errors(torch):
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        a = ember.stft(ember.tensor(x), 16, return_complex=False)
    with pytest.warns(UserWarning):
        b = torch.stft(torch.tensor(x), 16, return_complex=False)
    _close(a, b, 1e-5)
    for bad in (lambda m: m.stft(m.tensor(x), 16),
                lambda m: m.stft(m.tensor(x), 80, return_complex=True, center=False),
                lambda m: m.stft(m.tensor(x), 16, hop_length=0, return_complex=True),
                lambda m: m.stft(m.tensor(x), 16, window=m.ones(8), return_complex=True),
                lambda m: m.stft(m.tensor(x).reshape(2, 2, 16), 16, return_complex=True),
                lambda m: m.stft(m.tensor(x) * 1j, 16, onesided=True, return_complex=True),
                lambda m: m.istft(m.ones(9, 4), 16),
                lambda m: m.istft(m.ones(5, 4, dtype=m.complex64), 16),
                lambda m: m.istft(m.ones(9, 4, dtype=m.complex64), 16, window=m.zeros(16))):
        with pytest.raises(RuntimeError):
            bad(torch)
        with pytest.raises(RuntimeError):
            bad(ember)


def test_stft_under_vmap_and_forward_mode():
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((3, 64)))
    w = ember.hann_window(16, dtype=ember.float64)

    def f(v):
        return ember.stft(v, 16, hop_length=4, window=w, return_complex=True)
    got = ember.func.vmap(f)(x)
    np.testing.assert_allclose(got.numpy(), ember.stack([f(r) for r in x]).numpy(), atol=1e-12)
    t = ember.tensor(rng.standard_normal(64))
    _, tan = ember.func.jvp(f, (x[0],), (t,))
    np.testing.assert_allclose(tan.numpy(), f(t).numpy(), atol=1e-12)  # stft is linear


def test_torch_window_functions_match_torch(torch):
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"):
        for n, periodic in itertools.product((0, 1, 2, 5, 8), (True, False)):
            _close(getattr(ember, name)(n, periodic), getattr(torch, name)(n, periodic), 1e-6)
        _close(getattr(ember, name)(7, dtype=ember.float64), getattr(torch, name)(7, dtype=torch.float64), 1e-12)
    _close(ember.hamming_window(9, False, 0.5, 0.5), torch.hamming_window(9, False, 0.5, 0.5), 1e-6)
    _close(ember.kaiser_window(9, True, 5.0), torch.kaiser_window(9, True, 5.0), 1e-6)
    assert ember.hann_window(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        ember.hann_window(4, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.hann_window(-1)


@pytest.mark.parametrize("name,kw", [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}),
                                     ("exponential", {"tau": 2.5}), ("gaussian", {"std": 2.0}),
                                     ("general_cosine", {"a": [0.46, 0.23, 0.31]}),
                                     ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}),
                                     ("kaiser", {"beta": 5.0}), ("nuttall", {})])
def test_signal_windows_match_torch(torch, name, kw):
    for n, sym in itertools.product((0, 1, 2, 5, 8), (True, False)):
        _close(getattr(ember.signal.windows, name)(n, sym=sym, **kw),
               getattr(torch.signal.windows, name)(n, sym=sym, **kw), 1e-6)
        _close(getattr(ember.signal.windows, name)(n, sym=sym, dtype=ember.float64, **kw),
               getattr(torch.signal.windows, name)(n, sym=sym, dtype=torch.float64, **kw), 1e-12)


def test_signal_window_errors_match_torch(torch):
    for bad in (lambda m: m.signal.windows.hann(-1), lambda m: m.signal.windows.hann(5, dtype=m.int64),
                lambda m: m.signal.windows.exponential(5, center=1.0), lambda m: m.signal.windows.exponential(5, tau=-1.0),
                lambda m: m.signal.windows.gaussian(5, std=0.0), lambda m: m.signal.windows.kaiser(5, beta=-1.0),
                lambda m: m.signal.windows.general_cosine(5, a=0.5)):
        with pytest.raises(Exception) as te:
            bad(torch)
        with pytest.raises(type(te.value)):
            bad(ember)


def test_zero_dim_and_empty_dim_lists_match_torch(torch):
    for f in (lambda m: m.fft.fft(m.tensor(1.0)), lambda m: m.fft.fftshift(m.tensor(1.0)),
              lambda m: m.fft.ifftshift(m.ones(2, 3), dim=()), lambda m: m.fft.rfftn(m.tensor(1.0))):
        with pytest.raises(Exception) as te:
            f(torch)
        with pytest.raises(type(te.value)):
            f(ember)
    _close(ember.fft.fftn(ember.tensor(2.0)), torch.fft.fftn(torch.tensor(2.0)), 0)
    _close(ember.fft.fftn(ember.ones(3, 4), dim=()), torch.fft.fftn(torch.ones(3, 4), dim=()), 0)
