"""Public functions composed of registry ops (no rules of their own: they differentiate, batch
and trace through the primitives they call): diff, cdist, quantile/nanquantile, cartesian_prod,
block_diag, and Tensor.unfold (a strided view)."""
import math

import numpy as np

from .. import _dispatch as D
from . import _util as U
from . import reduce as _R
from . import shape as _S


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """out[i] = input[i + 1] - input[i] along dim, n times (bool tensors: !=)."""
    d = U.wrap_dim(dim, input.dim(), "diff")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"diff: order must be non-negative but got {n}")
    if n == 0:  # nothing to difference: the input, without prepend/append (PyTorch)
        return input.clone()
    parts = [t for t in (prepend, input, append) if t is not None]
    x = _S.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        hi, lo = _S.narrow(x, d, 1, size - 1), _S.narrow(x, d, 0, size - 1)
        x = (hi != lo) if x.dtype.name == "bool" else hi - lo
    return x


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M)."""
    U.no_lowp("cdist", x1, x2)
    for name, x in (("X1", x1), ("X2", x2)):
        if x.is_complex():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{U.torch_scalar_name(x._data)}")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, "
                           f"X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    d = _S.unsqueeze(x1, -2) - _S.unsqueeze(x2, -3)
    return _R.norm(d, p if p in (0, 1, 2) or math.isinf(p) else float(p), (-1,), False)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", _ignore_nan=False):
    """The q-th quantiles along dim (of all elements when None); q a number or a 1-D tensor,
    whose dimension then comes first in the result."""
    from .._creation import as_tensor, tensor
    from .elementwise import where, isnan
    from .indexing import index_select, sort
    name = "nanquantile" if _ignore_nan else "quantile"
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{name}() interpolation must be one of {', '.join(_INTERPOLATIONS)}. "
                         f"Got '{interpolation}'")
    if not input.is_floating_point() or input.dtype.itemsize == 2:  # (float16/bfloat16 too, as PyTorch)
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    scalar_q = not U.is_tensor(q)
    qt = as_tensor(q, dtype=input.dtype).reshape(-1)
    rq = U.raw_values(qt)    # (under vmap: every batch row, for the check only)
    if rq.size and (bool((rq < 0).any()) or bool((rq > 1).any())):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    x = input
    if dim is not None and x.dim() == 0:  # dim 0 of a 0-dim input: the quantiles of its one value
        U.wrap_dim(dim, 0, name)
        r = quantile(x.reshape(1), q, 0, False, interpolation=interpolation, _ignore_nan=_ignore_nan)
        return r
    if dim is None:
        x = _S.reshape(x, (-1,))
        d = 0
    else:
        d = U.wrap_dim(dim, x.dim(), name)
    x = _S.movedim(x, d, -1)               # (..., n), the reduced dim last
    n = x.shape[-1]
    vals = sort(x, -1)[0]                    # NaNs sort last
    if _ignore_nan:
        count = (~isnan(x)).sum(-1, keepdim=True).to(x.dtype)   # (..., 1)
    else:
        count = tensor(float(n), dtype=x.dtype)
    pos = qt * (count - 1).clamp_min(0)                           # (..., nq)
    if interpolation == "lower":
        pos = pos.floor()
    elif interpolation == "higher":
        pos = pos.ceil()
    elif interpolation == "nearest":
        pos = pos.round()
    lo = pos.floor()
    hi = pos.ceil()
    lo_i, hi_i = lo.long().clamp(0, max(n - 1, 0)), hi.long().clamp(0, max(n - 1, 0))
    if lo_i.dim() == 1:
        v_lo, v_hi = index_select(vals, -1, lo_i), index_select(vals, -1, hi_i)
    else:
        v_lo, v_hi = vals.gather(-1, lo_i), vals.gather(-1, hi_i)
    if interpolation == "midpoint":
        out = v_lo + (v_hi - v_lo) * 0.5
    else:
        out = v_lo + (v_hi - v_lo) * (pos - lo)                   # (..., nq)
    if not _ignore_nan:   # a NaN anywhere in a slice makes its quantiles NaN
        has_nan = isnan(x).any(-1, keepdim=True)
        out = where(has_nan, float("nan"), out)
    else:                 # an all-NaN slice: NaN
        out = where(count == 0, float("nan"), out)
    out = _S.movedim(out, -1, 0)                                  # (nq, ...)
    if keepdim:
        if dim is None:
            out = _S.reshape(out, (out.shape[0],) + (1,) * input.dim())
        else:
            out = _S.unsqueeze(out, d + 1)
    return out[0] if scalar_q or (U.is_tensor(q) and q.dim() == 0) else out


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return quantile(input, q, dim, keepdim, interpolation=interpolation, _ignore_nan=True)


def cartesian_prod(*tensors):
    if len(tensors) == 1:
        return tensors[0]
    from .._creation import meshgrid
    grids = meshgrid(*tensors, indexing="ij")
    return _S.stack([_S.reshape(g, (-1,)) for g in grids], 1)


def block_diag(*tensors):
    from .._creation import zeros
    mats = []
    for t in tensors:
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {len(mats)} has {t.dim()} dimensions")
        mats.append(_S.reshape(t, (1, -1)) if t.dim() < 2 else t)
    if not mats:
        return zeros(1, 0)
    dt = U.result_dtype(*[m._data for m in mats]) if len(mats) > 1 else mats[0].dtype
    cols = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        pieces = [zeros(r, left, dtype=dt), m.to(dt), zeros(r, cols - left - c, dtype=dt)]
        rows.append(_S.cat(pieces, 1))
        left += c
    return _S.cat(rows, 0)


def _tensor_unfold(self, dimension, size, step):
    """Tensor.unfold: the windows of ``size`` elements, ``step`` apart, along ``dimension``, as a
    view with a new last dimension."""
    nd = self.dim()
    d = U.wrap_dim(dimension, nd, "unfold") if nd else 0
    length = self.shape[d] if nd else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    n = (length - size) // step + 1
    if self._wr is not None and nd:  # under a transform the wrapper's strides are not the data's:
        # gather the windows instead (index_select batches), then move the window axis last
        idx = np.arange(n)[:, None] * step + np.arange(size)
        win = self.index_select(d, D._new_tensor(idx.reshape(-1).astype(np.int64)))
        win = win.reshape(tuple(self.shape[:d]) + (n, size) + tuple(self.shape[d + 1:]))
        return win.movedim(d + 1, -1)
    st = self.stride() if nd else ()
    shape = list(self.shape)
    strides = list(st)
    n = (length - size) // step + 1
    if nd:
        shape[d] = n
        strides[d] = st[d] * step
        return _S.as_strided(self, tuple(shape) + (size,), tuple(strides) + (st[d],),
                             self.storage_offset())
    return _S.as_strided(self, (size,), (1,), self.storage_offset())


# ----------------------------------------------------------------------------- scans, statistics, signs


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim as a running logaddexp (exact for any spread of values: a
    single shifted cumsum underflows the small early terms); one step per element along dim."""
    from .elementwise import logaddexp
    if input.dim() == 0:
        return input.clone()
    d = U.wrap_dim(dim, input.dim(), "logcumsumexp")
    if input.shape[d] == 0:
        return input.clone()
    from .elementwise import _complex_logaddexp
    # complex: a tie of real parts takes the new element as the larger (PyTorch's logcumsumexp)
    step = (lambda a, b: _complex_logaddexp(a, b, tie_first=False)) if input.is_complex() else logaddexp
    outs = [_S.select(input, d, 0)]
    for j in range(1, input.shape[d]):
        outs.append(step(outs[-1], _S.select(input, d, j)))
    return _S.stack(outs, d)



def _cum_extreme(input, dim, name, better):
    """cummax/cummin: running extreme values and the index where each was reached."""
    from .indexing import gather
    from .reduce import _MinMax
    if input.dim() == 0:  # (complex too: PyTorch returns the one element before its kernel's dtype check)
        return _MinMax((input.clone(), D._new_tensor(np.zeros((), np.int64))))
    if input.is_complex():
        U.no_complex(name + "_cpu", input._data)
    d = U.wrap_dim(dim, input.dim(), name)
    idx = D.dispatch(_R.cum_extreme_index_op, (input,), {"dim": d, "better": better})
    return _MinMax((gather(input, d, idx), idx))


def cummax(input, dim):
    return _cum_extreme(input, dim, "cummax", "max")


def cummin(input, dim):
    return _cum_extreme(input, dim, "cummin", "min")


def signbit(input):
    if input.is_complex():
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    from .elementwise import signbit_op
    return D.dispatch(signbit_op, (input,))


def heaviside(input, values):
    """0 where input < 0, values where input == 0, 1 where input > 0."""
    from .elementwise import where, _need_tensor
    _need_tensor("heaviside", input, values)
    return where(input == 0, values, (input > 0).to(input.dtype))


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) of a 2-d input over its columns (observations), each
    observation weighted by its integer frequency (fweights) and its importance (aweights)."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                         f"{input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if not x.is_floating_point() and not x.is_complex():
        x = x.float()
    n = x.shape[1]
    w = None
    for name, wt, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if wt is None:
            continue
        if not U.is_tensor(wt) or wt.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{getattr(wt, 'dim', lambda: '?')()} dimensions")
        if wt.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {wt.numel()} != {n}")
        if integral and wt.is_floating_point():
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{wt.dtype} dtype")
        if not integral and not wt.is_floating_point():
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{wt.dtype} dtype")
        if wt.numel() and bool((wt < 0).any()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        wt = wt.reshape(-1)
        w = wt if w is None else w * wt   # (in the weights' own dtype, as PyTorch: the normalization too)
    if w is None:
        xc = x - x.mean(1, keepdim=True)
        c = (xc @ _conj_t(xc)) / max(n - correction, 0)
        return c.reshape(()) if input.dim() < 2 or x.shape[0] == 1 else c  # (one variable: a scalar, as PyTorch)
    w_sum = w.sum()
    if aweights is None or correction == 0:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights.reshape(-1)).sum() / w_sum
    rt = U.dt.promote_types(x.dtype, w.dtype)  # (float32 aweights lift a float16/bfloat16 input, as PyTorch)
    norm = norm.clamp_min(0).to(rt)  # (PyTorch: a non-positive normalization gives inf/nan, as here)
    w = w.to(rt)
    avg = (x * w).sum(1, keepdim=True) / w_sum.to(rt)
    xc = x - avg
    c = ((xc * w) @ _conj_t(xc)) / norm
    return c.reshape(()) if input.dim() < 2 or x.shape[0] == 1 else c


def _conj_t(xc):
    """xc^T, conjugated for complex input: E[(x - mean) conj(y - mean)]."""
    xt = xc.t()
    if xt.is_complex():
        from .complex import conj
        xt = conj(xt)
    return xt


def corrcoef(input):
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = _S.diagonal(c).sqrt()
    r = c / d.unsqueeze(1) / d.unsqueeze(0)
    if r.is_complex():  # (PyTorch clips the real and imaginary parts)
        from .complex import complex as _complex, real, imag
        return _complex(real(r).clamp(-1, 1), imag(r).clamp(-1, 1))
    return r.clamp(-1, 1)
