"""Short-time Fourier transforms (torch.stft / torch.istft) and the window functions.

stft and istft are composites of registry ops (pad, unfold, mul, the FFT primitives, index_add for
the overlap-add), so they differentiate in both modes and batch under vmap like any composite.
The windows are plain factories (scipy.signal.windows' formulas, evaluated in float64 and cast).
"""
import math
import warnings

import numpy as np
import scipy.signal.windows as _sw

from .. import _dispatch as D
from .. import _dtype as dt
from . import _util as U

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
    window.__name__ = name
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
        from .shape import constant_pad
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


def _center_pad(x, pad, mode):
    """x (batch, length) padded by ``pad`` samples on both sides; reflect padding is two flipped
    slices around x (one cat), the other modes F.pad's."""
    if mode == "reflect":
        n = x.shape[-1]
        if pad >= n:
            raise RuntimeError(f"stft: Argument #4: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({pad}, {pad}) at dimension 1 of input "
                               f"{list(x.shape)}")
        if pad == 0:
            return x
        from .shape import cat
        return cat([x.narrow(-1, 1, pad).flip(-1), x, x.narrow(-1, n - 1 - pad, pad).flip(-1)], -1)
    if mode == "constant":
        from .shape import constant_pad
        return constant_pad(x, (pad, pad))
    from ..nn._composite import pad as _pad
    return _pad(x.unsqueeze(1), (pad, pad), mode=mode).squeeze(1)


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """torch.stft: frames of n_fft samples, hop_length apart, times the window, Fourier-transformed;
    the result is (freq, frames) or (batch, freq, frames)."""
    from .fft import rfft, fft
    from .complex import view_as_real
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
    x = input.unsqueeze(0) if input.dim() == 1 else input
    if center:
        x = _center_pad(x, n_fft // 2, pad_mode)
    hop, win = _lengths("stft", n_fft, hop_length, win_length, x.shape[-1])
    w = _window_of("stft", window, win, n_fft, x)
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if x._wr is None:
        frames = x.contiguous().unfold(-1, n_fft, hop)  # (batch, n_frames, n_fft), a strided view
    else:
        # under vmap a gather: Tensor.unfold reads its input's strides, which a batched tensor does not
        # have
        n_frames = (x.shape[-1] - n_fft) // hop + 1
        idx = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
        from .indexing import index_select
        frames = index_select(x, 1, D._new_tensor(idx.astype(np.int64))).reshape(x.shape[0], n_frames, n_fft)
    if w is not None:
        frames = frames * w
    norm = "ortho" if normalized else "backward"
    spec = rfft(frames, dim=-1, norm=norm) if onesided else fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)
    if input.dim() == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else view_as_real(spec)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """torch.istft: the inverse of stft by overlap-add of the windowed inverse transforms, divided by
    the overlap-added squared window (which must not vanish: the NOLA condition)."""
    from .fft import irfft, ifft
    from .complex import real
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
    idx = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    from .._creation import zeros
    from .indexing import index_add
    ix = D._new_tensor(idx.astype(np.int64))
    out = index_add(zeros(x.shape[0], total, dtype=frames.dtype), 1, ix,
                    frames.reshape(x.shape[0], n_frames * n_fft))
    wsq = np.ones(n_fft) if w is None else np.asarray(w.detach()._data, dtype=np.float64) ** 2
    env = np.zeros(total)
    np.add.at(env, idx, np.tile(wsq, n_frames))
    start = n_fft // 2 if center else 0
    end = total if length is None else start + length
    if center and length is None:
        end = total - n_fft // 2
    end = min(end, total)
    env = env[start:end]
    if env.size and env.min() < 1e-11:
        raise RuntimeError(f"istft: window overlap add min: {env.min():g} (the window and hop_length do not "
                           f"satisfy the NOLA condition)")
    y = out[:, start:end] / D._new_tensor(env.astype(out._data.real.dtype))
    if length is not None and y.shape[-1] < length:
        from .shape import constant_pad
        y = constant_pad(y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.dim() == 2 else y


__all__ = ["stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]
