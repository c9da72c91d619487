"""Reductions and scans: sum, mean, prod, max/min, amax/amin, arg*, var/std, norm, logsumexp,
softmax/log_softmax, cumsum/cumprod, all/any."""
import builtins as _b
import math

import numpy as np

from .. import _dtype as dt
from .. import _parallel as _P
from .. import _dispatch as D
from .._dispatch import defop, dispatch
from . import _util as U

RED = "reduction"


def _expand_back(g, shape, dims, keepdim):
    """Broadcast a reduced gradient back to the input's shape."""
    if not keepdim and dims:
        for d in dims:
            g = g.unsqueeze(d)
    return g.expand(shape)


def _dim_overload_name(op):
    """PyTorch names a full reduction <Op>Backward0 and one over given dims <Op>Backward1."""
    full, over_dims = op + "Backward0", op + "Backward1"
    return lambda args, params: over_dims if "dims" in params else full


_F16 = np.dtype(np.float16)


def _sum_impl(xp, a, dims=None, keepdim=False, dtype=None):
    if dtype is None and a.dtype.kind in "buiV" and a.dtype != np.int64:
        if a.dtype == U.BF16:  # a float32 sum, rounded once (as PyTorch)
            return U.bf16_f32(xp.sum, a, axis=dims, keepdims=keepdim)
        dtype = np.int64
    elif a.dtype is _F16 and dtype is None:  # a float32 sum, rounded once (NumPy's rounds every step)
        return xp.asarray(xp.sum(a, axis=dims, keepdims=keepdim, dtype=np.float32)).astype(_F16)
    return xp.sum(a, axis=dims, keepdims=keepdim, dtype=dtype)


sum_op = defop("sum", _sum_impl, save=("shapes",), family=RED, node_name=_dim_overload_name("Sum"))


@sum_op.def_vjp
def _(ctx, g):
    p = ctx.params
    return _expand_back(g, ctx.shapes[0], p.get("dims") or (), p.get("keepdim", False))


@sum_op.def_jvp
def _(ctx, t):
    p = ctx.params
    return sum(t, p.get("dims"), p.get("keepdim", False))


def _mean_impl(xp, a, dims=None, keepdim=False, dtype=None):
    if a.dtype.kind not in "fc" and dtype is None:
        if a.dtype is U.BF16:
            return U.bf16_f32(xp.mean, a, axis=dims, keepdims=keepdim)
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {dt.FROM_NP[a.dtype].name.capitalize()}")
    r = xp.mean(a, axis=dims, keepdims=keepdim, dtype=dtype)
    return r.astype(a.dtype if dtype is None else dtype, copy=False) if hasattr(r, "astype") else r


mean_op = defop("mean", _mean_impl, save=("shapes",), family=RED, node_name=_dim_overload_name("Mean"))


def _count(shape, dims):
    n = 1
    for d in (dims if dims is not None else range(len(shape))):
        n *= shape[d]
    return n


@mean_op.def_vjp
def _(ctx, g):
    p = ctx.params
    shape = ctx.shapes[0]
    dims = p.get("dims")
    n = _count(shape, dims)
    return _expand_back(g / n if n else g, shape, dims if dims is not None else tuple(range(len(shape))),
                        p.get("keepdim", False))


@mean_op.def_jvp
def _(ctx, t):
    p = ctx.params
    return mean(t, p.get("dims"), p.get("keepdim", False))


def _prod_impl(xp, a, dims=None, keepdim=False, dtype=None):
    if dtype is None and a.dtype.kind in "buiV" and a.dtype != np.int64:
        if a.dtype == U.BF16:
            return U.bf16_f32(xp.prod, a, axis=dims, keepdims=keepdim)
        dtype = np.int64
    elif a.dtype is _F16 and dtype is None:
        return xp.asarray(xp.prod(a, axis=dims, keepdims=keepdim, dtype=np.float32)).astype(_F16)
    return xp.prod(a, axis=dims, keepdims=keepdim, dtype=dtype)


prod_op = defop("prod", _prod_impl, save=("inputs", "out"), family=RED, node_name=_dim_overload_name("Prod"))


def _prod_others(ctx):
    """d prod / d x_i = product of the other elements, exact when x has zeros."""
    x = ctx.inputs[0]
    p = ctx.params
    dims = p.get("dims")
    keep = p.get("keepdim", False)
    out = _expand_back(ctx.out, x.shape, dims if dims is not None else tuple(range(x.dim())), keep)
    if not bool((x == 0).any()):
        return out / x
    # exclusive products along a flattened reduction axis
    if dims is None or len(dims) != 1:
        flat = x.reshape(-1)
        return _exclusive_prod(flat, 0).reshape(x.shape)
    return _exclusive_prod(x, dims[0])


def _exclusive_prod(x, d):
    n = x.shape[d]
    ones = x.narrow(d, 0, 1) * 0 + 1
    left = cat([ones, x.narrow(d, 0, n - 1).cumprod(d)], d) if n > 1 else ones
    rx = x.flip(d)
    right = cat([ones, rx.narrow(d, 0, n - 1).cumprod(d)], d).flip(d) if n > 1 else ones
    return left * right


@prod_op.def_vjp
def _(ctx, g):
    p = ctx.params
    x = ctx.inputs[0]
    dims = p.get("dims")
    g = _expand_back(g, x.shape, dims if dims is not None else tuple(range(x.dim())), p.get("keepdim", False))
    return g * _cj(_prod_others(ctx))


@prod_op.def_jvp
def _(ctx, t):
    p = ctx.params
    return sum(t * _prod_others(ctx), p.get("dims"), p.get("keepdim", False))


def _amax_impl(xp, a, dims=None, keepdim=False):
    if a.dtype.kind == "c":
        U.no_complex("max_all" if dims is None else "max_values_cpu", a)
    if a.size == 0 and (dims is None or _b.any(a.shape[d] == 0 for d in dims)):
        raise (RuntimeError if dims is None or len(dims) == a.ndim else IndexError)("amax(): Expected reduction dim to be specified for input.numel() == 0. "
                         "Specify the reduction dim with the 'dim' argument.")
    return xp.amax(a, axis=dims, keepdims=keepdim)


def _amin_impl(xp, a, dims=None, keepdim=False):
    if a.dtype.kind == "c":
        U.no_complex("min_all" if dims is None else "min_values_cpu", a)
    if a.size == 0 and (dims is None or _b.any(a.shape[d] == 0 for d in dims)):
        raise (RuntimeError if dims is None or len(dims) == a.ndim else IndexError)("amin(): Expected reduction dim to be specified for input.numel() == 0.")
    return xp.amin(a, axis=dims, keepdims=keepdim)


# max()/min() over all elements run amax/amin without parameters (amax() always passes keepdim):
# PyTorch's nodes are then MaxBackward1/MinBackward1
amax_op = defop("amax", _amax_impl, save=("inputs", "out"), family=RED,
                node_name=lambda args, params: "AmaxBackward0" if params else "MaxBackward1")
amin_op = defop("amin", _amin_impl, save=("inputs", "out"), family=RED,
                node_name=lambda args, params: "AminBackward0" if params else "MinBackward1")


def _even_mask(ctx):
    """Gradient of amax/amin splits evenly among tied extreme elements."""
    x = ctx.inputs[0]
    p = ctx.params
    dims = p.get("dims")
    dims = dims if dims is not None else tuple(range(x.dim()))
    keep = p.get("keepdim", False)
    m = (x == _expand_back(ctx.out, x.shape, dims, keep)).to(x.dtype)
    cnt = m.sum(dims, keepdim=True) if dims else m
    return m / cnt, dims, keep


for _o in (amax_op, amin_op):
    def _vjp(ctx, g):
        w, dims, keep = _even_mask(ctx)
        return _expand_back(g, w.shape, dims, keep) * w

    def _jvp(ctx, t):
        w, dims, keep = _even_mask(ctx)
        return sum(t * w, dims, keep)
    _o.vjp, _o.jvp = _vjp, _jvp


def _max_dim_impl(xp, a, dim, keepdim=False):
    if a.dtype.kind == "c":
        raise RuntimeError(f"max(): does not support complex input ({a.dtype})")
    if a.ndim == 0:  # dim 0 (or -1) of a 0-dim tensor: the value and index 0
        return a.copy(), xp.zeros((), np.int64)
    if a.shape[dim] == 0:
        raise IndexError(f"max(): Expected reduction dim {dim} to have non-zero size.")
    idx = xp.argmax(a, axis=dim, keepdims=True)
    val = xp.take_along_axis(a, idx, axis=dim)
    if not keepdim:
        idx = idx.squeeze(dim)
        val = val.squeeze(dim)
    return val, idx


def _min_dim_impl(xp, a, dim, keepdim=False):
    if a.dtype.kind == "c":
        raise RuntimeError(f"min(): does not support complex input ({a.dtype})")
    if a.ndim == 0:  # dim 0 (or -1) of a 0-dim tensor: the value and index 0
        return a.copy(), xp.zeros((), np.int64)
    if a.shape[dim] == 0:
        raise IndexError(f"min(): Expected reduction dim {dim} to have non-zero size.")
    idx = xp.argmin(a, axis=dim, keepdims=True)
    val = xp.take_along_axis(a, idx, axis=dim)
    if not keepdim:
        idx = idx.squeeze(dim)
        val = val.squeeze(dim)
    return val, idx


max_dim_op = defop("max_dim", _max_dim_impl, nout=2, diff_outputs=(0,), save=("shapes", "out"),
                   family=RED, node_name="MaxBackward0")
min_dim_op = defop("min_dim", _min_dim_impl, nout=2, diff_outputs=(0,), save=("shapes", "out"),
                   family=RED, node_name="MinBackward0")


def _index_vjp(ctx, g, gi=None):
    p = ctx.params
    d, keep = p["dim"], p.get("keepdim", False)
    idx = ctx.outs[1]
    if not keep:
        g, idx = g.unsqueeze(d), idx.unsqueeze(d)
    from .. import _creation
    return _creation.zeros(ctx.shapes[0], dtype=g.dtype).scatter(d, idx, g)


def _index_jvp(ctx, t):
    p = ctx.params
    d, keep = p["dim"], p.get("keepdim", False)
    idx = ctx.outs[1]
    idx = idx if keep else idx.unsqueeze(d)
    r = t.gather(d, idx)
    return (r if keep else r.squeeze(d)), None


for _o in (max_dim_op, min_dim_op):
    _o.vjp, _o.jvp = _index_vjp, _index_jvp


def _arg_impl(f, name):
    def impl(xp, a, dim=None, keepdim=False):
        if a.dtype.kind == "c":
            raise RuntimeError(f"{name}(): does not support complex input ({a.dtype})")
        if a.size == 0 and (dim is None or a.shape[dim] == 0):  # an empty result is fine otherwise
            want = "dim to be specified for input.numel() == 0" if dim is None else f"dim {dim} to have non-zero size"
            raise IndexError(f"{name}(): Expected reduction {want} (input is empty, shape {list(a.shape)})")
        if dim is None:
            r = f(a.reshape(-1))
            return xp.asarray(r).reshape((1,) * a.ndim) if keepdim else xp.asarray(r)
        return f(a, axis=dim, keepdims=keepdim)
    return impl


argmax_op = defop("argmax", _arg_impl(np.argmax, "argmax"), differentiable=False, family=RED)
argmin_op = defop("argmin", _arg_impl(np.argmin, "argmin"), differentiable=False, family=RED)


def _logical_reduce(name):
    def impl(xp, a, dims=None, keepdim=False):
        r = getattr(xp, name)(a, axis=dims, keepdims=keepdim)
        return r.astype(np.uint8) if a.dtype == np.uint8 else r  # PyTorch: uint8 in, uint8 out; else bool
    return impl


all_op = defop("all", _logical_reduce("all"), differentiable=False, family=RED)
any_op = defop("any", _logical_reduce("any"),
               differentiable=False, family=RED)
count_nonzero_op = defop("count_nonzero", lambda xp, a, dims=None: xp.asarray(
    xp.count_nonzero(a, axis=dims), dtype=np.int64), differentiable=False, family=RED)


def _var_impl(xp, a, dims=None, correction=1, keepdim=False):
    if a.dtype.kind == "c":  # the mean squared modulus of the deviations: a real result
        with np.errstate(divide="ignore", invalid="ignore"):
            r = xp.var(a, axis=dims, ddof=correction, keepdims=keepdim)
        return xp.asarray(r, dtype=a.real.dtype)
    if a.dtype.kind != "f":
        if a.dtype is U.BF16:
            return U.bf16_f32(_var_impl, xp, a, dims, correction, keepdim)
        raise RuntimeError("var(): input dtype should be floating point")
    with np.errstate(divide="ignore", invalid="ignore"):
        # float16 accumulates in float32, as PyTorch's kernels do
        r = xp.var(a, axis=dims, ddof=correction, keepdims=keepdim, dtype=np.float32 if a.dtype == np.float16 else None)
    return xp.asarray(r, dtype=a.dtype)


var_op = defop("var", _var_impl, save=("inputs",), family=RED)


def _var_grad_factor(ctx, x):
    p = ctx.params
    dims = p.get("dims")
    n = _count(x.shape, dims)
    dof = n - p.get("correction", 1)
    return 2.0 / dof if dof > 0 else math.inf


@var_op.def_vjp
def _(ctx, g):
    x = ctx.inputs[0]
    p = ctx.params
    dims = p.get("dims")
    dims = dims if dims is not None else tuple(range(x.dim()))
    centered = x - x.mean(dims, keepdim=True)
    return _expand_back(g, x.shape, dims, p.get("keepdim", False)) * centered * _var_grad_factor(ctx, x)


@var_op.def_jvp
def _(ctx, t):
    x = ctx.inputs[0]
    p = ctx.params
    dims = p.get("dims")
    dims = dims if dims is not None else tuple(range(x.dim()))
    centered = x - x.mean(dims, keepdim=True)
    if x._data.dtype.kind == "c":  # d|c|^2 = 2 Re(conj(c) dc)
        from .complex import real
        return sum(real(_cj(centered) * t), dims, p.get("keepdim", False)) * _var_grad_factor(ctx, x)
    return sum(t * centered, dims, p.get("keepdim", False)) * _var_grad_factor(ctx, x)


def _std_impl(xp, a, dims=None, correction=1, keepdim=False):
    return xp.sqrt(_var_impl(xp, a, dims, correction, keepdim))


# std is PyTorch's own node (StdBackward0): d std = d var / (2 std), with var's rules; where std is
# 0 the gradient is 0, as in PyTorch (sqrt(var) would give nan there)
std_op = defop("std", _std_impl, save=("inputs", "out"), family=RED)
std_op.vjp = lambda ctx, g: var_op.vjp(ctx, where(ctx.out == 0, 0.0, g * 0.5 / ctx.out))
std_op.jvp = lambda ctx, t: where(ctx.out == 0, 0.0, var_op.jvp(ctx, t) * 0.5 / ctx.out)


def _logsumexp_impl(xp, a, dims, keepdim=False):
    a = U.to_float(a)
    r = a.real if a.dtype.kind == "c" else a  # complex: a real shift, so the log is the principal one (PyTorch)
    m = xp.amax(r, axis=dims, keepdims=True) if a.size else xp.zeros((1,) * a.ndim, r.dtype)
    m = xp.where(xp.isfinite(m), m, 0)
    r = xp.log(xp.sum(xp.exp(a - m), axis=dims, keepdims=True)) + m
    return r if keepdim else r.squeeze(axis=dims)


logsumexp_op = defop("logsumexp", _logsumexp_impl, save=("inputs", "out"), family=RED)


def _lse_weights(ctx):
    x = ctx.inputs[0]
    p = ctx.params
    return (x - _expand_back(ctx.out, x.shape, p["dims"], p.get("keepdim", False))).exp()


@logsumexp_op.def_vjp
def _(ctx, g):
    p = ctx.params
    x = ctx.inputs[0]
    return _expand_back(g, x.shape, p["dims"], p.get("keepdim", False)) * _cj(_lse_weights(ctx))


@logsumexp_op.def_jvp
def _(ctx, t):
    p = ctx.params
    return sum(t * _lse_weights(ctx), p["dims"], p.get("keepdim", False))


def _split_rows(a, dim):
    """The axis along which softmax of a big float32/64 C-ordered ``a`` over ``dim`` splits over
    the intra-op threads (each slice's sums stay whole: bit for bit the one-thread result), or None."""
    if a.size < _P.MIN_SIZE or a.dtype.kind != "f" or a.dtype.itemsize < 4 or not a.flags.c_contiguous \
            or _P.get_num_threads() < 2:
        return None
    d = dim % a.ndim
    for ax, s in enumerate(a.shape):
        if ax != d and s >= 2:
            return ax
    return None


def _softmax_split(xp, a, dim, ax, log):
    out = xp.empty(a.shape, a.dtype)
    lead = (slice(None),) * ax
    last = dim % a.ndim == a.ndim - 1 and a.shape[-1] > 0

    def part(lo, hi):
        sl = lead + (slice(lo, hi),)
        sa, so = a[sl], out[sl]
        if not log and last:
            U.softmax_rows(xp, sa, so)
            return
        xp.subtract(sa, xp.amax(sa, axis=dim, keepdims=True), out=so)
        if log:
            so -= xp.log(xp.sum(xp.exp(so), axis=dim, keepdims=True))
        else:
            xp.exp(so, out=so)
            so /= xp.sum(so, axis=dim, keepdims=True)
    _P.parallel_for(a.shape[ax], part, work=a.size)
    return out


def _softmax_impl(xp, a, dim):
    if a.dtype.kind == "c":
        U.no_complex("softmax_lastdim_kernel_impl", a)
    a = U.to_float(a)
    if a.size == 0:
        return a.copy()
    if a.ndim == 0:
        return xp.ones_like(a)
    ax = _split_rows(a, dim)
    if ax is not None:
        return _softmax_split(xp, a, dim, ax, False)
    if dim % a.ndim == a.ndim - 1 and a.shape[-1] and (a.dtype == xp.float32 or a.dtype == xp.float64):
        return U.softmax_rows(xp, a)
    m = xp.amax(a, axis=dim, keepdims=True)
    e = a - m
    xp.exp(e, out=e)  # (in place: one temporary of a's size, not two)
    e /= xp.sum(e, axis=dim, keepdims=True)
    return e


def _log_softmax_impl(xp, a, dim):
    if a.dtype.kind == "c":
        U.no_complex("log_softmax_lastdim_kernel_impl", a)
    a = U.to_float(a)
    if a.size == 0:
        return a.copy()
    if a.ndim == 0:
        return xp.zeros_like(a)
    ax = _split_rows(a, dim)
    if ax is not None:
        return _softmax_split(xp, a, dim, ax, True)
    m = xp.amax(a, axis=dim, keepdims=True)
    s = a - m
    s -= xp.log(xp.sum(xp.exp(s), axis=dim, keepdims=True))
    return s


softmax_op = defop("softmax", _softmax_impl, save=("out",), family=RED, node_name="SoftmaxBackward0")
log_softmax_op = defop("log_softmax", _log_softmax_impl, save=("out",), family=RED,
                       node_name="LogSoftmaxBackward0")


def _softmax_bwd_impl(xp, g, y, dim):
    """y * (g - sum(g * y)) over ``dim`` on raw arrays, one buffer (the fused backward: no graph is
    recorded through it; float32/float64); rows along the last dim summed by U.row_sums."""
    t = xp.asarray(xp.multiply(g, y))  # (a 0-dim product is a NumPy scalar)
    if t.ndim == 0:
        r = t.copy()
    elif dim % t.ndim == t.ndim - 1 and t.shape[-1]:
        r = U.row_sums(xp, t)
    else:
        r = xp.sum(t, axis=dim, keepdims=True)
    xp.subtract(g, r, out=t)
    t *= y
    return t


softmax_bwd_op = defop("softmax_backward", _softmax_bwd_impl, family=RED, differentiable=False)


@softmax_bwd_op.def_batch
def _(op, vals, bd, params, size):
    from ._batching import _materialize
    g, y = (v if b else _materialize(v, size) for v, b in zip(vals, bd))
    n = g.dim() - 1
    if n == 0:  # (softmax of a 0-dim tensor: rows of one element)
        return dispatch(op, (g.reshape(size, 1), y.reshape(size, 1)), {"dim": 1}).reshape(size), True
    return dispatch(op, (g, y), {"dim": params["dim"] % n + 1}), True


def _softmax_jvp(ctx, g):  # (the Jacobian of softmax is symmetric: the vjp's formula)
    y = ctx.out
    d = ctx.params["dim"]
    return y * (g - (g * y).sum(d, keepdim=True))


@softmax_op.def_vjp
def _(ctx, g):
    y = ctx.out._data
    if not D.grad_mode.enabled and D.state.simple and g._data.shape == y.shape and g._data.dtype is y.dtype \
            and (y.dtype == np.float32 or y.dtype == np.float64):
        return dispatch(softmax_bwd_op, (g, ctx.out), ctx.params)
    return _softmax_jvp(ctx, g)


softmax_op.jvp = _softmax_jvp


@log_softmax_op.def_vjp
def _(ctx, g):
    d = ctx.params["dim"]
    return g - ctx.out.exp() * g.sum(d, keepdim=True)


@log_softmax_op.def_jvp
def _(ctx, t):
    d = ctx.params["dim"]
    return t - (t * ctx.out.exp()).sum(d, keepdim=True)


def _cumsum_impl(xp, a, dim, dtype=None):
    if dtype is None and a.dtype.kind in "bui":
        dtype = np.int64
    if dtype is not None and (np.dtype(dtype) == np.float16 or np.dtype(dtype) == U.BF16):
        a, dtype = a.astype(dtype), None
    if dtype is None and (a.dtype == np.float16 or a.dtype == U.BF16):  # a float32 running sum, as PyTorch
        r = xp.cumsum(a, axis=dim, dtype=np.float32).astype(a.dtype)        # (float16 stalls at 2048)
    else:
        r = xp.cumsum(a, axis=dim, dtype=dtype)
    return r.reshape(()) if a.ndim == 0 else r  # NumPy flattens a 0-dim input


cumsum_op = defop("cumsum", _cumsum_impl, family="scan")


@cumsum_op.def_vjp
def _(ctx, g):
    d = ctx.params["dim"]
    return g.flip(d).cumsum(d).flip(d)


cumsum_op.jvp = lambda ctx, t: t.cumsum(ctx.params["dim"])


def _cumprod_impl(xp, a, dim, dtype=None):
    if dtype is None and a.dtype.kind in "bui":
        dtype = np.int64
    if dtype is not None and (np.dtype(dtype) == np.float16 or np.dtype(dtype) == U.BF16):
        a, dtype = a.astype(dtype), None
    if dtype is None and (a.dtype == np.float16 or a.dtype == U.BF16):
        r = xp.cumprod(a, axis=dim, dtype=np.float32).astype(a.dtype)
    else:
        r = xp.cumprod(a, axis=dim, dtype=dtype)
    return r.reshape(()) if a.ndim == 0 else r  # NumPy flattens a 0-dim input


def _cum_extreme_index_impl(xp, a, dim, better):
    """The index where each running extreme of ``a`` along ``dim`` was reached (the latest index among
    equal values, as PyTorch; a NaN is an extreme that stays)."""
    if not a.size:
        return xp.zeros(a.shape, xp.int64)
    acc = (xp.maximum if better == "max" else xp.minimum).accumulate(a, axis=dim)
    shape = [1] * a.ndim
    shape[dim] = a.shape[dim]
    pos = xp.broadcast_to(xp.arange(a.shape[dim]).reshape(shape), a.shape)
    hit = (a == acc) | xp.isnan(a)
    return xp.ascontiguousarray(xp.maximum.accumulate(xp.where(hit, pos, 0), axis=dim), dtype=xp.int64)


# a scan: vmap shifts dim by one (the family rule); the values are a gather of these indices, so they
# differentiate and batch through gather
cum_extreme_index_op = defop("cum_extreme_index", _cum_extreme_index_impl, differentiable=False, family="scan")


cumprod_op = defop("cumprod", _cumprod_impl, save=("inputs", "out"), family="scan")


@cumprod_op.def_vjp
def _(ctx, g):
    # (complex: the same formula in the conjugates of x and the output, PyTorch's convention)
    x = _cj(ctx.inputs[0])
    out = _cj(ctx.out)
    d = ctx.params["dim"]
    # before the first zero along dim: sum_{j>=k} g_j out_j / x_k; at the first zero: the same sum over
    # the products with that zero left out (cumprod with it set to 1); after it: 0
    rev = lambda t: t.flip(d).cumsum(d).flip(d)  # noqa: E731
    zero = x == 0
    nz = zero.to(x.dtype).cumsum(d)
    before = nz == 0
    first = zero & (nz == 1)
    r = rev(g * out)
    grad = where(before, r / where(before, x, 1.0), 0.0)
    r0 = rev(g * where(first, 1.0, x).cumprod(d))
    return where(first, r0, grad)


@cumprod_op.def_jvp
def _(ctx, t):
    # before the first zero: out * cumsum(t / x); from it on only the zero's own tangent survives:
    # t_z times the product of the others (cumprod with that zero set to 1)
    x = ctx.inputs[0]
    d = ctx.params["dim"]
    zero = x == 0
    nz = zero.to(x.dtype).cumsum(d)
    before = nz == 0
    first = zero & (nz == 1)
    head = ctx.out * (t / where(before, x, 1.0)).cumsum(d)
    tail = where(first, t, 0.0).cumsum(d) * where(first, 1.0, x).cumprod(d)
    return where(before, head, tail)


# ----------------------------------------------------------------------------- public functions


def _dims(input, dim, op):
    return None if dim is None else U.wrap_dims(dim, input.dim(), op)


def _np_dtype(dtype):
    return None if dtype is None else dtype.np


def sum(input, dim=None, keepdim=False, *, dtype=None):
    p = {}
    if dim is not None:
        dims = U.wrap_dims(dim, input.dim(), "sum") if not isinstance(dim, tuple) or dim else None
        if dims is not None:
            p["dims"] = dims
    if keepdim:
        p["keepdim"] = True
    if dtype is not None:
        p["dtype"] = dtype.np
    return dispatch(sum_op, (input,), p)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    if input.is_complex():
        raise RuntimeError(f"nansum on CPU does not support complex inputs ({input.dtype})")
    if not input.is_floating_point():  # no nan to skip: an integer sum stays integral (int64), as sum()
        return sum(input, dim, keepdim, dtype=dtype)
    return sum(where(isnan(input), 0.0, input), dim, keepdim, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    p = {}
    if dim is not None and not (isinstance(dim, (tuple, list)) and not dim):
        p["dims"] = U.wrap_dims(dim, input.dim(), "mean")
    if keepdim:
        p["keepdim"] = True
    if dtype is not None:
        if not (dtype.is_floating_point or dtype.is_complex):
            raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be either a "
                               f"floating point or complex dtype. Got: {dtype.name.capitalize()}")
        p["dtype"] = dtype.np
    elif not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating "
                           f"point or complex dtype. Got: {input.dtype.name.capitalize()}")
    return dispatch(mean_op, (input,), p)


def nanmean(input, dim=None, keepdim=False):
    m = ~isnan(input)
    return nansum(input, dim, keepdim) / m.sum(dim, keepdim)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    p = {}
    if dim is not None:
        p["dims"] = U.wrap_dims(dim, input.dim(), "prod")
    if keepdim:
        p["keepdim"] = True
    if dtype is not None:
        p["dtype"] = dtype.np
    return dispatch(prod_op, (input,), p)


def amax(input, dim=(), keepdim=False, *, out=None):
    return U.write_out(_amax(input, dim, keepdim), out, "amax", (input,), exact=True)


def _amax(input, dim=(), keepdim=False):
    p = {"keepdim": keepdim}
    if dim is not None and dim != ():
        p["dims"] = U.wrap_dims(dim, input.dim(), "amax")
    return dispatch(amax_op, (input,), p)


def amin(input, dim=(), keepdim=False, *, out=None):
    return U.write_out(_amin(input, dim, keepdim), out, "amin", (input,), exact=True)


def _amin(input, dim=(), keepdim=False):
    p = {"keepdim": keepdim}
    if dim is not None and dim != ():
        p["dims"] = U.wrap_dims(dim, input.dim(), "amin")
    return dispatch(amin_op, (input,), p)


class _MinMax(tuple):
    """torch.return_types.max: (values, indices) with names."""

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]


def max(input, dim=None, keepdim=False, *, out=None):
    if dim is None:
        if U.is_tensor(keepdim):  # torch.max(a, b)
            return U.write_out(maximum(input, keepdim), out)
        if input.numel() == 0:
            raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return U.write_out(dispatch(amax_op, (input,), {}), out)
    if U.is_tensor(dim):
        return U.write_out(maximum(input, dim), out)
    d = U.wrap_dim(dim, input.dim(), "max")
    return U.write_out(_MinMax(dispatch(max_dim_op, (input,), {"dim": d, "keepdim": keepdim})), out)


def min(input, dim=None, keepdim=False, *, out=None):
    if dim is None:
        if U.is_tensor(keepdim):
            return U.write_out(minimum(input, keepdim), out)
        if input.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return U.write_out(dispatch(amin_op, (input,), {}), out)
    if U.is_tensor(dim):
        return U.write_out(minimum(input, dim), out)
    d = U.wrap_dim(dim, input.dim(), "min")
    return U.write_out(_MinMax(dispatch(min_dim_op, (input,), {"dim": d, "keepdim": keepdim})), out)


def argmax(input, dim=None, keepdim=False):
    p = {"keepdim": keepdim}
    if dim is not None:
        p["dim"] = U.wrap_dim(dim, input.dim(), "argmax")
    return dispatch(argmax_op, (input,), p)


def argmin(input, dim=None, keepdim=False):
    p = {"keepdim": keepdim}
    if dim is not None:
        p["dim"] = U.wrap_dim(dim, input.dim(), "argmin")
    return dispatch(argmin_op, (input,), p)


def all(input, dim=None, keepdim=False):
    p = {"keepdim": keepdim}
    if dim is not None:
        p["dims"] = U.wrap_dims(dim, input.dim(), "all")
    return dispatch(all_op, (input,), p)


def any(input, dim=None, keepdim=False):
    p = {"keepdim": keepdim}
    if dim is not None:
        p["dims"] = U.wrap_dims(dim, input.dim(), "any")
    return dispatch(any_op, (input,), p)


def count_nonzero(input, dim=None):
    p = {}
    if dim is not None:
        p["dims"] = U.wrap_dims(dim, input.dim(), "count_nonzero")
    return dispatch(count_nonzero_op, (input,), p)


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    if unbiased is None:
        return 1
    return 1 if unbiased else 0


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):  # var(x, False)
        unbiased, dim = dim, None
    p = {"correction": _correction(unbiased, correction), "keepdim": keepdim}
    if dim is not None:
        p["dims"] = U.wrap_dims(dim, input.dim(), "var")
    return dispatch(var_op, (input,), p)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):  # std(x, False)
        unbiased, dim = dim, None
    p = {"correction": _correction(unbiased, correction), "keepdim": keepdim}
    if dim is not None:
        p["dims"] = U.wrap_dims(dim, input.dim(), "std")
    return dispatch(std_op, (input,), p)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):  # var_mean(x, True): unbiased, over every element
        unbiased, dim = dim, None
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):  # std_mean(x, True): unbiased, over every element
        unbiased, dim = dim, None
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def logsumexp(input, dim, keepdim=False):
    if input.dtype is dt.bfloat16:  # float32 inside, rounded once
        return logsumexp(input.float(), dim, keepdim).to(dt.bfloat16)
    return dispatch(logsumexp_op, (input,), {"dims": U.wrap_dims(dim, input.dim(), "logsumexp"),
                                             "keepdim": keepdim})


def softmax(input, dim=None, dtype=None, _stacklevel=3):
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype is dt.bfloat16:  # float32 inside, rounded once
        return softmax(input.float(), dim).to(dt.bfloat16)
    elif input._data.dtype.kind not in "fc":
        raise RuntimeError(f"softmax: not implemented for dtype {input.dtype} (a floating point input is "
                           f"expected; pass dtype=)")
    if dim is None:
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return dispatch(softmax_op, (input,), {"dim": U.wrap_dim(dim, input.dim(), "softmax")})


def log_softmax(input, dim=None, dtype=None, _stacklevel=3):
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype is dt.bfloat16:  # float32 inside, rounded once
        return log_softmax(input.float(), dim).to(dt.bfloat16)
    elif input._data.dtype.kind not in "fc":
        raise RuntimeError(f"log_softmax: not implemented for dtype {input.dtype} (a floating point input is "
                           f"expected; pass dtype=)")
    if dim is None:
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return dispatch(log_softmax_op, (input,), {"dim": U.wrap_dim(dim, input.dim(), "log_softmax")})


def cumsum(input, dim, *, dtype=None):
    p = {"dim": U.wrap_dim(dim, input.dim(), "cumsum")}
    if dtype is not None:
        p["dtype"] = dtype.np
    return dispatch(cumsum_op, (input,), p)


def cumprod(input, dim, *, dtype=None):
    p = {"dim": U.wrap_dim(dim, input.dim(), "cumprod")}
    if dtype is not None:
        p["dtype"] = dtype.np
    return dispatch(cumprod_op, (input,), p)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        U.wrap_dims(dim, input.dim(), "norm")
    if p == "nuc" and dim is None and input.dim() != 2:  # (PyTorch: the nuclear norm of all dims)
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, range(input.dim())))}")
    if p == "nuc" and input.is_complex():  # the singular values of the complex matrix itself (not of its moduli)
        from ..linalg import matrix_norm
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)
    if input.is_complex():  # an entrywise norm: the norm of the moduli (abs carries the complex gradient)
        input = input.abs()
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"norm: Expected a floating point or complex tensor as input, got {input.dtype}")
    if input.dtype is dt.float16 or input.dtype is dt.bfloat16:  # float32 accumulation, as PyTorch (float16 squares overflow at 65504)
        if p == "nuc":  # (singular values: PyTorch has no float16/bfloat16 kernel)
            raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                               f"{'Half' if input.dtype is dt.float16 else 'BFloat16'}")
        return norm(input.float(), p, dim, keepdim).to(input.dtype)
    if p == "fro" or p is None:
        p = 2
    if not isinstance(p, str) and 1 <= p < math.inf:
        prm = {"ord": p, "keepdim": keepdim}
        if dim is not None:
            prm["dims"] = U.wrap_dims(dim, input.dim(), "norm")
        return dispatch(vector_norm_op, (input,), prm)
    if p == "nuc":  # the sum of the singular values (ember.linalg)
        from ..linalg import matrix_norm
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)
    if p == math.inf or p == "inf":
        return amax(input.abs(), dim if dim is not None else (), keepdim)
    if p == -math.inf:
        return amin(input.abs(), dim if dim is not None else (), keepdim)
    if p == 0:  # the count of nonzeros, through ops with a (zero) gradient, as PyTorch's
        return sum(input.sign().abs(), dim, keepdim)
    if p == 1:
        return sum(input.abs(), dim, keepdim)
    a = input.abs()
    if p < 0:  # a zero entry makes the sum infinite and the norm 0, with a zero gradient (PyTorch)
        zero = a == 0
        a = where(zero, math.inf, where(zero, 1.0, a) ** p)
        return sum(a, dim, keepdim) ** (1.0 / p)
    if 0 < p < 1:  # |x|^p has an infinite slope at 0: PyTorch's gradient there is 0, not nan
        zero = a == 0
        a = where(zero, 0.0, where(zero, 1.0, a) ** p)
        return sum(a, dim, keepdim) ** (1.0 / p)
    return sum(a ** p, dim, keepdim) ** (1.0 / p)


def _vector_norm_impl(xp, x, ord=2, dims=None, keepdim=False):
    if ord == 2:
        return xp.sqrt(xp.sum(x * x, axis=dims, keepdims=keepdim))
    a = xp.abs(x)
    if ord == 1:
        return xp.sum(a, axis=dims, keepdims=keepdim)
    return xp.sum(a ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)


# the p-norm (p >= 1, finite) over some dims: PyTorch's LinalgVectorNormBackward0, one pass forward;
# at a zero norm the gradient is 0 (the subgradient PyTorch uses)
vector_norm_op = defop("linalg_vector_norm", _vector_norm_impl, save=("inputs", "out"), family=RED,
                       node_name="LinalgVectorNormBackward0")


def _vector_norm_slope(ctx):
    """d norm / d x, with the norm expanded back to x's shape; (slope, dims, keepdim)."""
    x = ctx.inputs[0]
    p = ctx.params
    ord = p.get("ord", 2)
    dims = p.get("dims")
    dims = dims if dims is not None else tuple(range(x.dim()))
    keep = p.get("keepdim", False)
    if ord == 1:
        return x.sign(), dims, keep
    n = _expand_back(ctx.out, x.shape, dims, keep)
    zero = n == 0
    n = where(zero, 1.0, n)
    s = x / n if ord == 2 else x.sign() * (x.abs() / n) ** (ord - 1)
    return where(zero, 0.0, s), dims, keep


@vector_norm_op.def_vjp
def _(ctx, g):
    s, dims, keep = _vector_norm_slope(ctx)
    return _expand_back(g, s.shape, dims, keep) * s


@vector_norm_op.def_jvp
def _(ctx, t):
    s, dims, keep = _vector_norm_slope(ctx)
    return sum(s * t, dims, keep)


def dist(input, other, p=2):
    return norm(input - other, p)


class _AMinMax(tuple):
    """torch.return_types.aminmax: (min, max) with names."""

    @property
    def min(self):
        return self[0]

    @property
    def max(self):
        return self[1]


def aminmax(input, *, dim=None, keepdim=False, out=None):
    return U.write_out(_aminmax(input, dim=dim, keepdim=keepdim), out, "aminmax", (input,), exact=True)


def _aminmax(input, *, dim=None, keepdim=False):
    d = dim if dim is not None else ()
    return _AMinMax((amin(input, d, keepdim), amax(input, d, keepdim)))


from .elementwise import where, maximum, minimum, isnan, _cj  # noqa: E402
from .shape import cat  # noqa: E402
