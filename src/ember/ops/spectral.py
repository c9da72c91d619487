"""Short-time Fourier transforms (torch.stft / torch.istft) and the window functions.

stft frames its input with one primitive (stft_frames: padding, framing and the window in one pass)
and runs the FFT primitive over the last dim; istft runs the inverse FFT, multiplies by the
window and overlap-adds with stft_frames' adjoint (stft_frames_backward). Each step is a registry op
with its derivative and batching rules, so both differentiate in both modes and batch under vmap.
The windows are plain factories (scipy.signal.windows' formulas, evaluated in float64 and cast).
"""
import warnings

import numpy as np
import scipy.signal.windows as _sw

from .. import _dispatch as D
from .. import _dtype as dt
from .._dispatch import defop
from . import _util as U
from .complex import real, view_as_real
from .fft import c2c_op, ifft, irfft, r2c_op
from .shape import constant_pad

# ----------------------------------------------------------------------------- torch.*_window


def _window_dtype(name, dtype, err=RuntimeError):
    d = dtype or dt.get_default_dtype()
    if not isinstance(d, dt.dtype) or d.category != 2:
        raise err(f"{name} expects floating point dtypes, got: {d}")
    return d


def _finish(arr, d, requires_grad):
    t = D._new_tensor(np.asarray(arr, dtype=np.float64).astype(d.np))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _torch_window(name, make):
    def window(window_length, periodic=True, *args, dtype=None, layout=None, device=None,
               requires_grad=False, **params):
        d = _window_dtype(name, dtype)
        if not isinstance(window_length, int) or window_length < 0:
            raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
        if window_length == 0:
            return _finish(np.zeros(0), d, requires_grad)
        if window_length == 1:
            return _finish(np.ones(1), d, requires_grad)
        n = window_length + 1 if periodic else window_length
        w = make(n, *args, **params)
        return _finish(w[:window_length], d, requires_grad)
    window.__name__ = window.__qualname__ = name
    return window


hann_window = _torch_window("hann_window", lambda n: _sw.hann(n, sym=True))
blackman_window = _torch_window("blackman_window", lambda n: _sw.blackman(n, sym=True))
bartlett_window = _torch_window("bartlett_window", lambda n: _sw.bartlett(n, sym=True))


def _hamming(n, alpha=0.54, beta=0.46):
    return alpha - beta * np.cos(2 * np.pi * np.arange(n) / (n - 1))


hamming_window = _torch_window("hamming_window", _hamming)


def _kaiser(n, beta=12.0):
    return _sw.kaiser(n, beta, sym=True)


_kaiser_window = _torch_window("kaiser_window", _kaiser)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    return _kaiser_window(window_length, periodic, beta, dtype=dtype, requires_grad=requires_grad)


# ----------------------------------------------------------------------------- framing (stft's primitives)
# stft_frames(x, window): the frames of the last dim (length L) padded by ``pad`` on both sides (PyTorch's
# pad modes), n_fft samples every hop, times the window (None: none): (..., L) -> (..., n_frames, n_fft).
# Its adjoint in x, stft_frames_backward, overlap-adds frames back onto the padded signal and folds the
# padding back onto the samples it copied; each primitive's vjp runs the other (framing is linear in x;
# the window's gradient sums g * conj(frames) over the frames), and their jvps apply themselves.

_NP_PAD = {"reflect": "reflect", "replicate": "edge", "circular": "wrap", "constant": "constant"}


def _n_frames(total, n_fft, hop):
    return (total - n_fft) // hop + 1


def _check_pad(name, length, pad, mode):
    if mode not in _NP_PAD:
        raise NotImplementedError(f"{name}: pad_mode {mode!r} is not one of constant, reflect, replicate, circular")
    if mode == "reflect" and pad >= length:
        raise RuntimeError(f"{name}: Argument #4: Padding size should be less than the corresponding input "
                           f"dimension, but got: padding ({pad}, {pad}) at dimension -1 of an input of length "
                           f"{length}")
    if mode == "circular" and pad > length:
        raise RuntimeError(f"{name}: Padding value causes wrapping around more than once.")


def _frames_impl(xp, a, w, n_fft, hop, pad=0, mode="constant"):
    length = a.shape[-1]
    if pad:
        _check_pad("stft", length, pad, mode)
        if mode == "reflect":  # (two reversed slices around a copy: np.pad's generality costs more than the copy)
            p = xp.empty(a.shape[:-1] + (length + 2 * pad,), a.dtype)
            p[..., pad:pad + length] = a
            p[..., :pad] = a[..., pad:0:-1]
            p[..., pad + length:] = a[..., length - 2:length - 2 - pad:-1] if length - 2 - pad >= 0 else \
                a[..., length - 2::-1]
            a = p
        else:
            a = xp.pad(a, [(0, 0)] * (a.ndim - 1) + [(pad, pad)], mode=_NP_PAD[mode])
    if a.shape[-1] < n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {a.shape[-1]}, but got n_fft={n_fft}")
    n = _n_frames(a.shape[-1], n_fft, hop)
    st = a.strides
    v = np.lib.stride_tricks.as_strided(a, a.shape[:-1] + (n, n_fft), st[:-1] + (st[-1] * hop, st[-1]),
                                        writeable=False)
    if w is not None:  # the window, in the same pass
        return v * w
    return np.ascontiguousarray(v)  # (frames overlap: a copy, so that no two elements share memory)


def _frames_backward_impl(xp, g, length, n_fft, hop, pad=0, mode="constant"):
    lead, n = g.shape[:-2], g.shape[-2]
    total = length + 2 * pad
    if g.ndim < 2 or g.shape[-1] != n_fft or n != _n_frames(total, n_fft, hop):
        raise RuntimeError(f"stft_frames_backward: expected frames of shape [..., {_n_frames(total, n_fft, hop)}, "
                           f"{n_fft}] for a signal of length {length} (padding {pad}, hop {hop}), got "
                           f"{list(g.shape)}")
    k = -(-n_fft // hop)  # the hop-long blocks one frame spans
    buf = xp.zeros(lead + ((n + k) * hop,), g.dtype)
    blocks = buf.reshape(lead + (n + k, hop))
    for j in range(k):
        w = min(hop, n_fft - j * hop)
        blocks[..., j:j + n, :w] += g[..., :, j * hop:j * hop + w]
    full = buf[..., :total]
    out = full[..., pad:pad + length].copy()
    if pad:
        left, right = full[..., :pad], full[..., pad + length:]
        if mode == "reflect":
            out[..., 1:pad + 1] += left[..., ::-1]
            out[..., length - 1 - pad:length - 1] += right[..., ::-1]
        elif mode == "replicate":
            out[..., :1] += left.sum(-1, keepdims=True)
            out[..., -1:] += right.sum(-1, keepdims=True)
        elif mode == "circular":
            out[..., length - pad:] += left
            out[..., :pad] += right
    return out


frames_op = defop("stft_frames", _frames_impl, save=("inputs", "shapes"), family="spectral")
frames_backward_op = defop("stft_frames_backward", _frames_backward_impl, family="spectral")


def _cj(t):
    from .complex import cj
    return cj(t)


@frames_op.def_vjp
def _(ctx, g):
    # frames(x) * w: x's gradient overlap-adds g * conj(w), w's sums g * conj(frames(x)) over the frames
    x, w = ctx.inputs
    p = ctx.params
    gx = gw = None
    if ctx.needs[0]:
        gx = D.dispatch(frames_backward_op, (g if w is None else g * _cj(w),),
                        {"length": ctx.shapes[0][-1], "n_fft": p["n_fft"], "hop": p["hop"], "pad": p.get("pad", 0),
                         "mode": p.get("mode", "constant")})
    if w is not None and ctx.needs[1]:
        fr = D.dispatch(frames_op, (x, None), p)
        gw = (g * _cj(fr)).reshape(-1, p["n_fft"]).sum(0)
    return gx, gw


@frames_op.def_jvp
def _(ctx, tx, tw):
    x, w = ctx.inputs
    p = ctx.params
    r = None if tx is None else D.dispatch(frames_op, (tx, w), p)
    if tw is not None:
        s = D.dispatch(frames_op, (x, None), p) * tw
        r = s if r is None else r + s
    return r


@frames_backward_op.def_vjp
def _(ctx, g):
    p = ctx.params
    return D.dispatch(frames_op, (g, None), {"n_fft": p["n_fft"], "hop": p["hop"], "pad": p.get("pad", 0),
                                              "mode": p.get("mode", "constant")})


frames_backward_op.jvp = lambda ctx, t: D.dispatch(frames_backward_op, (t,), ctx.params)

def _frames_batch(op, vals, bd, params, size):
    """Both act on the last dims: a leading batch dim of the signal passes through; a batched window
    multiplies the unwindowed frames."""
    if len(vals) < 2 or not bd[1]:
        return D.dispatch(op, tuple(vals), params), True
    x, w = vals
    fr = D.dispatch(op, (x, None), params)
    logical = fr.dim() - (1 if bd[0] else 0)
    return fr * w.reshape((size,) + (1,) * (logical - 1) + (params["n_fft"],)), True


frames_op.batch = frames_backward_op.batch = _frames_batch


# ----------------------------------------------------------------------------- stft / istft


def _window_of(name, window, win_length, n_fft, like):
    """The window zero-padded to n_fft, centred (PyTorch's placement); None: rectangular."""
    if window is None:
        if win_length == n_fft:
            return None
        from .._creation import ones
        window = ones(win_length, dtype=like.dtype.to_real())
    if window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, but "
                           f"got window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = constant_pad(window, (left, n_fft - win_length - left))
    return window


def _lengths(name, n_fft, hop_length, win_length, size=None):
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if n_fft <= 0 or (size is not None and n_fft > size):
        raise RuntimeError(f"{name}: expected 0 < n_fft <= {size}, but got n_fft={n_fft}" if size is not None
                           else f"{name}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{name}: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{name}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """torch.stft: frames of n_fft samples, hop_length apart, times the window, Fourier-transformed;
    the result is (freq, frames) or (batch, freq, frames).

    Differences from PyTorch: float32 results differ from PyTorch's by float32 rounding (another FFT library);
    float64 agrees."""
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    elif not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will "
                      "return complex tensors for all inputs, and return_complex=False will raise an error.",
                      UserWarning, stacklevel=2)
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D tensor of shape "
                           f"{list(input.shape)}")
    if input._data.dtype.kind not in "fc":
        raise RuntimeError(f"stft: expected a tensor of floating point or complex values (got {input.dtype})")
    nd = input.dim()
    length = input._data.shape[-1]
    pad = n_fft // 2 if center else 0
    hop, win = _lengths("stft", n_fft, hop_length, win_length, length + 2 * pad)
    w = _window_of("stft", window, win, n_fft, input)
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    frames = D.dispatch(frames_op, (input, w), {"n_fft": n_fft, "hop": hop, "pad": pad, "mode": pad_mode})
    p = {"dims": (nd,), "norm": "ortho" if normalized else "backward"}
    if onesided:
        spec = D.dispatch(r2c_op, (frames,), p)
    else:
        if not frames.is_complex():
            frames = frames.to(frames.dtype.to_complex())
        p["forward"] = True
        spec = D.dispatch(c2c_op, (frames,), p)
    spec = spec.transpose(-1, -2)
    return spec if return_complex else view_as_real(spec)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """torch.istft: the inverse of stft by overlap-add of the windowed inverse transforms, divided by
    the overlap-added squared window (which must not vanish: the NOLA condition)."""
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got "
                           f"{input.dim()}D of shape {list(input.shape)}")
    hop, win = _lengths("istft", n_fft, hop_length, win_length)
    x = input.unsqueeze(0) if input.dim() == 2 else input
    n_freq, n_frames = x.shape[-2], x.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided:
        if n_fft // 2 + 1 != n_freq:
            raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                               f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    elif n_fft != n_freq:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {n_freq}")
    if return_complex and onesided:
        raise RuntimeError("cannot have onesided output if window or input is complex")
    w = _window_of("istft", window, win, n_fft, real(x) if x.is_complex() else x)
    norm = "ortho" if normalized else "backward"
    spec = x.transpose(-1, -2)  # (batch, frames, freq)
    if not onesided and not return_complex:
        # a real signal from a two-sided spectrum: PyTorch reads its first half as Hermitian
        if window is not None and window.is_complex():
            raise RuntimeError("istft: a complex window needs return_complex=True")
        spec = spec.narrow(-1, 0, n_fft // 2 + 1)
        onesided = True
    if onesided:
        frames = irfft(spec, n=n_fft, dim=-1, norm=norm)
    else:
        frames = ifft(spec, n=n_fft, dim=-1, norm=norm)
    if w is not None:
        frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    p = {"length": total, "n_fft": n_fft, "hop": hop}
    out = D.dispatch(frames_backward_op, (frames,), p)  # the overlap-add
    start = n_fft // 2 if center else 0
    end = total if length is None else start + length
    if center and length is None:
        end = total - n_fft // 2
    end = min(end, total)
    if w is None:
        env = D._new_tensor(_frames_backward_impl(np, np.ones((n_frames, n_fft), out.real.dtype.np), **p)[start:end])
    else:  # the window's overlap-added square (a complex window's complex square), differentiable in the window
        # and batched with it under vmap
        env = D.dispatch(frames_backward_op, ((w * w).unsqueeze(0).expand(n_frames, n_fft).unsqueeze(0),), p)
        env = env[0, start:end]
        if not env.is_complex():
            env = env.to(out.real.dtype if out.is_complex() else out.dtype)
    ev = abs(U.raw_values(env))
    if ev.size and ev.min() < 1e-11:
        raise RuntimeError(f"istft: window overlap add min: {ev.min():g} (the window and hop_length do not "
                           f"satisfy the NOLA condition)")
    y = out[:, start:end] / env
    if length is not None and y.shape[-1] < length:
        y = constant_pad(y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.dim() == 2 else y


__all__ = ["stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]
