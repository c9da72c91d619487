"""torch.masked's reductions and normalizations on strided tensors, composed of registry ops: the
masked-out elements stand in as the operation's identity (0 for sum, 1 for prod, -inf for amax and
logsumexp, ...), so a slice with no element left gives that identity (mean, var, median: nan).
``mask`` is a boolean tensor broadcastable to the input; None keeps every element."""
import math

from . import _util as U
from . import shape as _S


def _mask_of(input, mask, name):
    if mask is None:
        return None
    if not U.is_tensor(mask) or mask.dtype.name != "bool":
        raise ValueError(f"masked.{name}: expected mask to be a boolean tensor, got "
                         f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if tuple(mask.shape) != tuple(input.shape):
        try:
            mask = _S.expand(mask, tuple(input.shape))
        except RuntimeError:
            raise ValueError(f"masked.{name}: mask of shape {list(mask.shape)} does not broadcast to the input "
                             f"shape {list(input.shape)}") from None
    return mask


def _cast(input, dtype):
    return input if dtype is None or input.dtype == dtype else input.to(dtype)


def _fill(input, mask, value):
    from .elementwise import where
    from .._creation import full
    if mask is None:
        return input
    return where(mask, input, full((), value, dtype=input.dtype))


def _dims(input, dim):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(input.dim()))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(U.wrap_dims(tuple(dim), max(input.dim(), 1), "masked"))


def _extreme(dtype, largest):
    if dtype.is_floating_point:
        return math.inf if largest else -math.inf
    if dtype.name == "bool":
        return largest
    import numpy as np
    info = np.iinfo(dtype.np)
    return int(info.max if largest else info.min)


def _reduce_dims(fn, x, dims, keepdim):
    if x.dim() == 0:
        return fn(x, (), keepdim)
    return fn(x, dims, keepdim)


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    from .reduce import sum as _sum
    x = _fill(_cast(input, dtype), _mask_of(input, mask, "sum"), 0)
    return _sum(x, _dims(x, dim) if x.dim() else None, keepdim)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    from .reduce import prod as _prod
    x = _fill(_cast(input, dtype), _mask_of(input, mask, "prod"), 1)
    if x.dim() == 0:
        return _prod(x)
    out = x
    for d in sorted(_dims(x, dim), reverse=True):
        out = _prod(out, d, True)
    return out if keepdim else _S.squeeze(out, _dims(x, dim))


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    from .reduce import amax as _amax
    x = _cast(input, dtype)
    if x.is_complex():
        _complex_unordered("amax", mask)
        U.no_complex("max_values_cpu", x._data)
    x = _fill(x, _mask_of(input, mask, "amax"), _extreme(x.dtype, False))
    return _amax(x, _dims(x, dim) if x.dim() else (), keepdim)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    from .reduce import amin as _amin
    x = _cast(input, dtype)
    if x.is_complex():
        _complex_unordered("amin", mask)
        U.no_complex("min_values_cpu", x._data)
    x = _fill(x, _mask_of(input, mask, "amin"), _extreme(x.dtype, True))
    return _amin(x, _dims(x, dim) if x.dim() else (), keepdim)


def _arg(input, dim, keepdim, dtype, mask, largest, name):
    from .reduce import argmax as _argmax, argmin as _argmin
    x = _cast(input, dtype)
    if x.is_complex():
        _complex_unordered(name, mask)
        raise RuntimeError(f"{name}(): does not support complex input")
    x = _fill(x, _mask_of(input, mask, name), _extreme(x.dtype, not largest))
    if x.dim() == 0:  # the one element's index
        from .._creation import zeros
        U.wrap_dim(0 if dim is None else dim, 1, name)
        return zeros((), dtype=x.dtype if dtype is None else dtype)
    r = (_argmax if largest else _argmin)(x, dim, keepdim)
    return r.to(x.dtype) if dtype is None else r.to(dtype)  # (PyTorch returns the input's dtype here)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    return _arg(input, dim, keepdim, dtype, mask, True, "argmax")


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    return _arg(input, dim, keepdim, dtype, mask, False, "argmin")


def _count(input, mask, dims, keepdim, dtype):
    from .reduce import sum as _sum
    from .._creation import ones
    if mask is None:
        m = ones(tuple(input.shape), dtype=dtype)
    else:
        m = mask.to(dtype)
    return _sum(m, dims if m.dim() else None, keepdim)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    x = _cast(input, dtype)
    m = _mask_of(input, mask, "mean")
    dims = _dims(x, dim)
    total = sum(x, dims if x.dim() else None, keepdim=keepdim, mask=m)
    return total / _count(x, m, dims, keepdim, total.dtype if total.is_floating_point() or total.is_complex() else _f())


def _complex_unordered(name, mask):
    """Complex input has no ordering: with a mask PyTorch fails looking up a fill value for it (TypeError)."""
    if mask is not None:
        raise TypeError(f"masked.{name}: complex input has no extreme value to fill masked-out elements with")


def _f():
    from .. import get_default_dtype
    return get_default_dtype()


def _var_std(input, dim, unbiased, keepdim, dtype, mask, correction, name, root):
    from .reduce import sum as _sum
    x = _cast(input, dtype)
    if not x.is_floating_point() and not x.is_complex():
        x = x.to(_f())
    m = _mask_of(input, mask, name)
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = _dims(x, dim)
    count = _count(x, m, dims, True, x.dtype.to_real() if x.is_complex() else x.dtype)
    mu = sum(x, dims if x.dim() else None, keepdim=True, mask=m) / count
    dev = _fill(x - mu, m, 0)
    # |dev|^2 (complex input: PyTorch's masked var is real-valued but keeps the complex dtype)
    ss = _sum(dev * dev.conj() if x.is_complex() else dev * dev, dims if x.dim() else None, keepdim)
    n = count if keepdim else (_S.squeeze(count, dims) if x.dim() else count)
    from .elementwise import maximum
    v = ss / maximum(n - correction, 0.0 * n)
    return v.sqrt() if root else v


def var(input, dim=None, unbiased=None, *, keepdim=False, dtype=None, mask=None, correction=None):
    return _var_std(input, dim, unbiased, keepdim, dtype, mask, correction, "var", False)


def std(input, dim=None, unbiased=None, *, keepdim=False, dtype=None, mask=None, correction=None):
    return _var_std(input, dim, unbiased, keepdim, dtype, mask, correction, "std", True)


def cumsum(input, dim, *, dtype=None, mask=None):
    from .reduce import cumsum as _cumsum
    x = _fill(_cast(input, dtype), _mask_of(input, mask, "cumsum"), 0)
    return _S.reshape(_cumsum(x, dim), tuple(x.shape)).to(x.dtype)  # (PyTorch keeps the dtype here)


def cumprod(input, dim, *, dtype=None, mask=None):
    from .reduce import cumprod as _cumprod
    x = _fill(_cast(input, dtype), _mask_of(input, mask, "cumprod"), 1)
    return _S.reshape(_cumprod(x, dim), tuple(x.shape)).to(x.dtype)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    from .order_stats import nanmedian
    x = _cast(input, dtype)
    given = x.dtype
    if not x.is_floating_point():  # (as PyTorch: through the default float dtype, a complex one's real part)
        x = x.to(_f())
    x = _fill(x, _mask_of(input, mask, "median"), math.nan)
    out = nanmedian(x, dim, keepdim).values
    if given.is_floating_point:
        return out
    v = U.raw_values(out)
    if (v != v).any():  # a NaN: a slice with every element masked out
        raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")
    return out.to(given)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    from .reduce import logsumexp as _lse
    x = _cast(input, dtype)
    if not x.is_floating_point() and not x.is_complex():  # in floating point, returned in the integer dtype
        return logsumexp(x.to(_f()), dim, keepdim=keepdim, mask=mask).to(x.dtype)
    x = _fill(x, _mask_of(input, mask, "logsumexp"), -math.inf)
    return _lse(x, _dims(x, dim) if x.dim() else (), keepdim)



def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    from .elementwise import maximum, where, isinf
    if input.is_complex() or other.is_complex():  # PyTorch: no -inf fill for complex; unmasked, logaddexp
        if input_mask is not None or other_mask is not None:
            _complex_unordered("logaddexp", True)
        from .elementwise import logaddexp as _lae
        return _lae(_cast(input, dtype), _cast(other, dtype))
    a = _fill(_cast(input, dtype), _mask_of(input, input_mask, "logaddexp"), -math.inf)
    b = _fill(_cast(other, dtype), _mask_of(other, other_mask, "logaddexp"), -math.inf)
    m = maximum(a, b)
    m = where(isinf(m), 0.0, m)  # (the shift's slope cancels; both -inf gives log(0) = -inf)
    return m + ((a - m).exp() + (b - m).exp()).log()


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    from ..linalg import vector_norm
    x = _cast(input, dtype)
    ord = 2.0 if ord is None else ord
    ident = math.inf if ord < 0 else 0
    x = _fill(x, _mask_of(input, mask, "norm"), ident)
    if ord == 0:  # a NaN counts as a nonzero element
        from .elementwise import where, isnan
        x = where(isnan(x), 1.0, x)
    return vector_norm(x, ord, _dims(x, dim) if x.dim() else None, keepdim)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    from .elementwise import maximum
    x = _cast(input, dtype)
    m = _mask_of(input, mask, "normalize")
    nrm = norm(x, ord, dim, keepdim=True, mask=m)
    return _fill(x, m, 0) / maximum(nrm, nrm * 0 + eps)


def _softmax_like(input, dim, dtype, mask, fill, kind):
    from .reduce import softmax as _sm, log_softmax as _lsm
    x = _cast(input, dtype)
    x = _fill(x, _mask_of(input, mask, kind), fill)
    if kind == "softmin":
        return _sm(-x, dim)
    return _sm(x, dim) if kind == "softmax" else _lsm(x, dim)


def softmax(input, dim, *, dtype=None, mask=None):
    return _softmax_like(input, dim, dtype, mask, -math.inf, "softmax")


def log_softmax(input, dim, *, dtype=None, mask=None):
    return _softmax_like(input, dim, dtype, mask, -math.inf, "log_softmax")


def softmin(input, dim, *, dtype=None, mask=None):
    return _softmax_like(input, dim, dtype, mask, math.inf, "softmin")
