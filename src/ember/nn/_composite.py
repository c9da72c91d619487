"""F.pad: constant padding is one primitive (ops.shape.constant_pad); reflect, replicate and circular
are composed from ember ops (index_select over computed source indices)."""
import numpy as np

from .. import _dispatch as D
from .. import ops as _ops


def pad(input, pad, mode="constant", value=None):
    if len(pad) % 2 or len(pad) // 2 > input.dim():
        raise RuntimeError(f"pad: Padding length must be divisible by 2 and at most twice the number of dims "
                           f"(got padding length {len(pad)} for input of {input.dim()} dims)")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: mode {mode!r} is not one of constant, reflect, replicate, circular")
    if mode != "constant":
        k = len(pad) // 2
        if k not in (1, 2, 3) or input.dim() not in (k + 1, k + 2):
            raise NotImplementedError(
                f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor. Non-constant "
                "padding supports: 2D or 3D input with padding size 2, 3D or 4D input with size 4, 4D or "
                "5D input with size 6")
    if mode == "constant":
        from ..ops.shape import constant_pad
        return constant_pad(input, pad, 0.0 if value is None else value)
    out = input
    for k in range(len(pad) // 2):
        dim = input.dim() - 1 - k
        lo, hi = int(pad[2 * k]), int(pad[2 * k + 1])
        if lo == 0 and hi == 0:
            continue
        n = out.shape[dim]
        idx = np.arange(-lo, n + hi)
        if mode == "constant":
            inside = (idx >= 0) & (idx < n)
            src = np.clip(idx, 0, max(n - 1, 0))
        elif mode == "reflect":
            if lo >= n or hi >= n:
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({lo}, {hi}) at dimension {dim} of input "
                                   f"{list(input.shape)}")
            period = 2 * (n - 1) if n > 1 else 1
            m = np.mod(idx, period)
            src = np.where(m < n, m, period - m)
        elif mode == "replicate":
            src = np.clip(idx, 0, n - 1)
        else:
            # negative pads crop first; the positive ones then wrap around what is left (PyTorch)
            start, stop = max(-lo, 0), n - max(-hi, 0)
            m = stop - start
            if m <= 0 or lo > m or hi > m:
                raise RuntimeError(f"pad: Padding value causes wrapping around more than once (padding "
                                   f"({lo}, {hi}) at dimension {dim} of input {list(input.shape)})")
            src = start + np.mod(np.arange(-max(lo, 0), m + max(hi, 0)), m)
        taken = _ops.index_select(out, dim, D._new_tensor(src.astype(np.int64)))
        if mode == "constant":
            shape = [1] * out.dim()
            shape[dim] = len(idx)
            mask = D._new_tensor(inside.reshape(shape))
            fill = 0.0 if value is None else value
            taken = _ops.where(mask, taken, fill)
        out = taken
    return out.clone() if out is input else out  # always a new tensor, as PyTorch's (pad (0, 0) too)
