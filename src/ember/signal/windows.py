"""torch.signal.windows: the window functions of scipy.signal.windows, as tensors.

``sym=True`` gives the symmetric window (for filter design), ``sym=False`` the periodic one (for
spectral analysis: the symmetric window of M + 1 points without its last). Evaluated in float64
and cast to ``dtype`` (float32 or float64)."""
from collections.abc import Iterable

import numpy as np
import scipy.signal.windows as _sw

from .. import _dispatch as D
from .. import _dtype as dt

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _window(name, M, sym, dtype, requires_grad, make):
    d = dtype or dt.get_default_dtype()
    if not isinstance(d, dt.dtype) or d not in (dt.float32, dt.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {d}")
    if not isinstance(M, int) or M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if M == 0:
        w = np.zeros(0)
    elif M == 1:
        w = np.ones(1)
    else:
        w = make(M + 1 if not sym else M)[:M]
    t = D._new_tensor(np.asarray(w, dtype=np.float64).astype(d.np))
    if requires_grad:
        t.requires_grad_(True)
    return t


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("bartlett", M, sym, dtype, requires_grad, lambda n: _sw.bartlett(n))


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("blackman", M, sym, dtype, requires_grad, lambda n: _sw.blackman(n))


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("cosine", M, sym, dtype, requires_grad, lambda n: _sw.cosine(n))


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def make(n):
        c = (n - 1) / 2 if center is None else center
        return np.exp(-np.abs(np.arange(n) - c) / tau)
    return _window("exponential", M, sym, dtype, requires_grad, make)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, requires_grad, lambda n: _sw.gaussian(n, std))


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if not isinstance(a, Iterable) or isinstance(a, str):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    return _window("general_cosine", M, sym, dtype, requires_grad, lambda n: _sw.general_cosine(n, a))


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("general_hamming", M, sym, dtype, requires_grad, lambda n: _sw.general_hamming(n, alpha))


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("hamming", M, sym, dtype, requires_grad, lambda n: _sw.hamming(n))


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("hann", M, sym, dtype, requires_grad, lambda n: _sw.hann(n))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _window("kaiser", M, sym, dtype, requires_grad, lambda n: _sw.kaiser(n, beta))


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("nuttall", M, sym, dtype, requires_grad, lambda n: _sw.nuttall(n))
