"""Gradient clipping, in place on the .grad arrays, without recording gradients."""
import math
import warnings

import numpy as np

from ... import _dispatch as D
from ..._tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _as_list(x):
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of a list of tensors (their norm as one vector)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return D._new_tensor(np.asarray(0.0, np.float32))
    dtype = tensors[0]._data.dtype
    if norm_type == math.inf:
        total = max(float(np.abs(t._data).max()) if t.numel() else 0.0 for t in tensors)
    elif norm_type == -math.inf:
        total = min(float(np.abs(t._data).min()) if t.numel() else math.inf for t in tensors)
    else:
        # as PyTorch: each tensor's norm in its own dtype (float16 accumulates in float32), then
        # the norm of those norms; the 2-norm is one BLAS dot per tensor, without a copy
        norms = []
        for t in tensors:
            a = t._data.reshape(-1)
            if a.dtype == np.float16:
                a = a.astype(np.float32)
            if norm_type == 2.0:
                norms.append(math.sqrt(float(np.dot(a, a))))
            elif norm_type == 1.0:
                norms.append(float(np.abs(a).sum()))
            elif norm_type == 0.0:
                norms.append(float(np.count_nonzero(a)))
            else:
                norms.append(float((np.abs(a) ** norm_type).sum()) ** (1.0 / norm_type))
        if norm_type == 0.0:  # the 0-"norm" of the per-tensor norms: how many are nonzero (PyTorch's answer)
            total = float(np.count_nonzero(norms))
        elif norm_type == 1.0:
            total = float(np.asarray(norms, dtype).sum())
        else:
            total = float((np.asarray(norms, np.float64) ** norm_type).sum() ** (1.0 / norm_type))
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                           "non-finite, so it cannot be clipped. To disable this error and scale the "
                           "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return D._new_tensor(np.asarray(total, dtype))


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients in place by max_norm / (total_norm + 1e-6) where that is below 1."""
    grads = _grads(parameters)
    if not grads:
        return
    coef = float(max_norm) / (float(total_norm) + 1e-6)
    if coef < 1.0:
        for g in grads:
            _scale(g, coef)


def _scale(g, coef):
    if not g._data.flags.writeable:
        g._data = g._data.copy()
    g._data *= g._data.dtype.type(coef)
    g._bump("clip_grad")


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients together so their joint norm is at most max_norm; returns the norm."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The deprecated name of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        if not g._data.flags.writeable:
            g._data = g._data.copy()
        np.clip(g._data, -clip_value, clip_value, out=g._data)
        g._bump("clip_grad_value_")
