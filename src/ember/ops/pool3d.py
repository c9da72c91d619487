"""3-d and adaptive/fractional max pooling, 3-d average pooling, max unpooling.

Max pooling of any kind is one non-differentiable primitive that finds, for every output cell,
the flat spatial index of its window's maximum (PyTorch's ``indices``), and a differentiable
``gather`` of those positions: the gradient is gather's (a scatter-add), forward mode and vmap
come with it. The windows are given per spatial dim as index tables (output cell x window slot,
-1 for a slot outside the input), so one kernel serves strided/dilated/padded windows, adaptive
ones (uneven sizes) and fractional ones (random starts, per plane). Average pooling in 3-d is a
primitive of its own (strided slice sums, its backward their adjoint); max_unpool is a scatter into
zeros.
"""
import numpy as np

from .. import _dispatch as D
from .. import _dtype as dt
from .._dispatch import defop, dispatch
from . import _util as U
from .nn import NN, _tuple, _pool_out, _avg_divisor, _adaptive_matrix


# ----------------------------------------------------------------------------- the argmax kernel


def _argmax_core(xp, x, tables, op):
    """x (..., *sp); tables[d]: int array (P|1, O_d, K_d), P the number of planes (prod of the
    leading dims). Returns int64 flat spatial indices of each window's maximum, (..., *O)."""
    nsp = len(tables)
    lead = x.shape[:x.ndim - nsp]
    sp = x.shape[x.ndim - nsp:]
    if x.dtype == U.BF16:  # (float32 holds bfloat16 exactly: the same maxima)
        x = x.astype(np.float32)
    if x.dtype.kind not in "fiu":
        raise RuntimeError(f"{op}: not implemented for {dt.FROM_NP[x.dtype].name} input")
    P = int(np.prod(lead)) if lead else 1
    xf = x.reshape((P,) + tuple(sp))
    outs = tuple(t.shape[1] for t in tables)
    ks = tuple(t.shape[2] for t in tables)
    if P == 0 or any(o == 0 for o in outs):
        return xp.zeros(tuple(lead) + outs, np.int64)
    # index arrays broadcast to (P, O0, K0, O1, K1, ...)
    ix = [xp.arange(P).reshape((P,) + (1,) * (2 * nsp))]
    valid = None
    for d, t in enumerate(tables):
        shape = [t.shape[0]] + [1] * (2 * nsp)
        shape[1 + 2 * d], shape[2 + 2 * d] = t.shape[1], t.shape[2]
        tt = t.reshape(shape)
        ok = tt >= 0
        valid = ok if valid is None else valid & ok
        ix.append(xp.maximum(tt, 0))
    vals = xf[tuple(ix)]
    if not bool(valid.all()):
        low = -np.inf if x.dtype.kind == "f" or x.dtype == U.BF16 else np.iinfo(x.dtype).min
        vals = xp.where(valid, vals, xp.asarray(low, x.dtype))
    # (P, O0, K0, O1, K1, ...) -> (P, O0, O1, ..., K0, K1, ...)
    perm = (0,) + tuple(1 + 2 * d for d in range(nsp)) + tuple(2 + 2 * d for d in range(nsp))
    vals = vals.transpose(perm).reshape((vals.shape[0],) + outs + (-1,))
    if vals.shape[0] != P:
        vals = xp.broadcast_to(vals, (P,) + vals.shape[1:])
    k = xp.argmax(vals, axis=-1)  # the first maximum in scan order (a NaN wins, as in PyTorch)
    kd = np.unravel_index(k, ks)
    flat = xp.zeros((P,) + outs, np.int64)
    mult = 1
    for d in range(nsp - 1, -1, -1):
        t = tables[d]
        oshape = [1] * (1 + nsp)
        oshape[1 + d] = t.shape[1]
        o_idx = xp.arange(t.shape[1]).reshape(oshape)
        p_idx = xp.arange(t.shape[0]).reshape([t.shape[0]] + [1] * nsp)
        flat += t[p_idx, o_idx, kd[d]].astype(np.int64) * mult
        mult *= sp[d]
    return flat.reshape(tuple(lead) + outs)


def _window_argmax_impl(xp, x, *, tables):
    return _argmax_core(xp, x, [np.asarray(t, np.int64)[None] for t in tables], "max_pool")


# tables: per trailing spatial dim a tuple of O tuples of K input positions (-1: outside)
window_argmax_op = defop("window_argmax", _window_argmax_impl, family=NN, differentiable=False)
# (the leading dims are free: a vmap dim passes through)
window_argmax_op.batch = lambda op, vals, bd, params, size: (dispatch(op, tuple(vals), params), True)


def _fractional_seq(xp, u, n, o, k):
    """Window starts of a fractional max pool along one dim, per plane: (P, o) from u (P,)."""
    if o == 1:
        return xp.full((u.shape[0], 1), n - k, np.int64)
    alpha = (n - k) / (o - 1)
    i = xp.arange(o - 1)
    # truncated toward zero (a C cast), as PyTorch: the same as floor for samples in [0, 1)
    seq = (xp.trunc((i[None, :] + u[:, None]) * alpha) - xp.trunc(u[:, None] * alpha)).astype(np.int64)
    return xp.concatenate([seq, xp.full((u.shape[0], 1), n - k, np.int64)], axis=1)


def _fractional_impl(xp, x, samples, *, kernel, out):
    nsp = len(kernel)
    lead = x.shape[:x.ndim - nsp]
    sp = x.shape[x.ndim - nsp:]
    P = int(np.prod(lead)) if lead else 1
    # PyTorch's sample order: 2-d pooling takes (width, height), 3-d (time, height, width)
    u = samples.reshape(P, nsp).astype(np.float64)
    if nsp == 2:
        u = u[:, ::-1]
    tables = []
    for d in range(nsp):
        st = _fractional_seq(xp, u[:, d], sp[d], out[d], kernel[d])
        tables.append(st[:, :, None] + xp.arange(kernel[d]))
    return _argmax_core(xp, x, tables, "fractional_max_pool")


# the random starts come in as a tensor of samples in [0, 1), one per plane and spatial dim
fractional_argmax_op = defop("fractional_max_pool_argmax", _fractional_impl, family=NN, differentiable=False)


@fractional_argmax_op.def_batch
def _(op, vals, bd, params, size):
    from .nn import _bm
    x, s = vals
    nsp = len(params["kernel"])
    x = _bm(x, bd[0], size)
    s = _bm(s, bd[1], size)
    lead = tuple(x.shape[:x.dim() - nsp])
    return dispatch(op, (x, s.reshape(lead + (nsp,))), params), True


# PyTorch's CPU kernel named in its NotImplementedError for complex input (observed), by op
_COMPLEX_KERNEL = {
    "adaptive_max_pool1d": "adaptive_max_pool2d", "adaptive_max_pool2d": "adaptive_max_pool2d",
    "adaptive_max_pool3d": "adaptive_max_pool3d_cpu", "fractional_max_pool2d": "fractional_max_pool2d_out_frame",
    "fractional_max_pool3d": "fractional_max_pool3d_out_frame", "max_unpool1d": "max_unpool2d",
    "max_unpool2d": "max_unpool2d", "max_unpool3d": "max_unpool3d", "prelu": "prelu_cpu",
    "rrelu": "rrelu_with_noise_out_cpu", "multi_margin_loss": "multi_margin_loss_cpu_kernel",
    "multilabel_margin_loss": "multilabel_margin_loss_forward_out_frame",
    "linear_cross_entropy": "log_softmax_lastdim_kernel_impl",
}


def float_only(op, *ts, name=None):
    """PyTorch's error for a kernel without integer support, naming the op and the dtype (for complex
    input PyTorch's NotImplementedError naming its kernel)."""
    for t in ts:
        if t is not None and t.is_complex() and op in _COMPLEX_KERNEL:
            U.no_complex(_COMPLEX_KERNEL[op], t)
        if t is not None and not t.dtype.is_floating_point:  # (bfloat16 included)
            raise RuntimeError(f"\"{name or op}\" not implemented for '{t.dtype.name}' ({op} expects floating point "
                               f"inputs)")


def _take(x, idx, nsp):
    """The values of x (..., *sp) at the flat spatial indices idx (..., *O), differentiably."""
    lead = tuple(idx.shape[:idx.dim() - nsp])
    n_in = int(np.prod(tuple(x.shape[x.dim() - nsp:])))
    n_out = int(np.prod(tuple(idx.shape[idx.dim() - nsp:])))
    out = x.reshape(lead + (n_in,)).gather(-1, idx.reshape(lead + (n_out,)))
    return out.reshape(tuple(idx.shape))


# ----------------------------------------------------------------------------- max_pool3d


def _geometry_table(n, k, s, p, d, o):
    pos = (np.arange(o) * s - p)[:, None] + np.arange(k) * d
    pos[(pos < 0) | (pos >= n)] = -1
    return tuple(tuple(int(v) for v in row) for row in pos)


def _check_dims(op, input, nsp):
    if not U.is_tensor(input):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{op}: Expected {nsp + 1}D or {nsp + 2}D (batch mode) tensor for input, got input of "
                           f"size {U.fmt_shape(input.shape)}")


def _check_nonempty(op, input, nsp):
    """Every dim but an optional leading batch dim must have positive length (PyTorch's 3-d pools)."""
    sh = tuple(input.shape)
    first = 1 if len(sh) == nsp + 2 else 0
    for i in range(first, len(sh)):
        if sh[i] == 0:
            raise RuntimeError(f"{op}(): Expected input's non-batch dimensions to have positive length, but input "
                               f"has a shape of {list(sh)} and non-batch dimension {i - first} has length zero!")


def _max_pool_nd(op, nsp, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    _check_dims(op, input, nsp)
    if input.is_complex():
        U.no_complex(f"max_pool{nsp}d", input)
    _check_nonempty(op, input, nsp)
    k = _tuple(kernel_size, nsp, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _tuple(stride, nsp, "stride", op)
    p = _tuple(padding, nsp, "padding", op)
    d = _tuple(dilation, nsp, "dilation", op)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got {list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride must be greater than zero, but got {list(s)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got {list(d)}")
    if any(pp < 0 or pp > kk // 2 for pp, kk in zip(p, k)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={list(p)}, "
                           f"kernel_size={list(k)}")
    sp = tuple(input.shape[-nsp:])
    out = tuple(_pool_out(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in zip(sp, k, s, p, d))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, input.shape[-nsp - 1:]))}). Calculated "
                           f"output size: ({'x'.join(map(str, (input.shape[-nsp - 1],) + out))}). Output size is "
                           f"too small")
    tables = tuple(_geometry_table(*a) for a in zip(sp, k, s, p, d, out))
    idx = dispatch(window_argmax_op, (input,), {"tables": tables})
    val = _take(input, idx, nsp)
    return (val, idx) if return_indices else val


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool_nd("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode,
                        return_indices)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ----------------------------------------------------------------------------- adaptive pooling


def _adaptive_out(op, input, output_size, nsp):
    if isinstance(output_size, (list, tuple)) and U.is_tensor(input) and input.dim() <= len(output_size):
        # PyTorch's Python-level check (before its kernel's dims check): a ValueError
        raise ValueError(f"{op}: Input dimension should be at least {len(output_size) + 1}, got input of size "
                         f"{U.fmt_shape(input.shape)} for output_size {list(output_size)}")
    _check_dims(op, input, nsp)
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != nsp:
            raise RuntimeError(f"{op}: output_size must be {nsp}")
        out = tuple(output_size)
    else:
        out = (output_size,) * nsp
    sp = tuple(input.shape[-nsp:])
    out = tuple(n if o is None else int(o) for n, o in zip(sp, out))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(out)}")
    if input.numel() == 0 and any(v == 0 for v in input.shape[-nsp:]):
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                           f"sizes {U.fmt_shape(input.shape)} with dimension {input.dim() - nsp} being empty")
    return sp, out


def _adaptive_table(n, o):
    if o == 0:
        return ()
    st = (np.arange(o) * n) // o
    en = -((-(np.arange(1, o + 1) * n)) // o)
    K = int((en - st).max())
    pos = st[:, None] + np.arange(K)
    pos[pos >= en[:, None]] = -1
    return tuple(tuple(int(v) for v in row) for row in pos)


def _adaptive_max(op, nsp, input, output_size, return_indices):
    sp, out = _adaptive_out(op, input, output_size, nsp)
    float_only(op, input)
    if any(o == 0 for o in out):
        from .._creation import zeros
        shp = tuple(input.shape[:input.dim() - nsp]) + out
        val = zeros(shp, dtype=input.dtype)
        return (val, zeros(shp, dtype=dt.int64)) if return_indices else val
    tables = tuple(_adaptive_table(n, o) for n, o in zip(sp, out))
    idx = dispatch(window_argmax_op, (input,), {"tables": tables})
    val = _take(input, idx, nsp)
    return (val, idx) if return_indices else val


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_avg_pool3d(input, output_size):
    op = "adaptive_avg_pool3d"
    sp, out = _adaptive_out(op, input, output_size, 3)
    if input.is_complex():  # PyTorch: complex only for a 1x1x1 output (a mean), no complex kernel otherwise
        if tuple(out) != (1, 1, 1):
            from ._util import no_complex
            no_complex("adaptive_avg_pool3d_cpu", input._data)
        return input.mean((-3, -2, -1), keepdim=True)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}: not implemented for '{input.dtype}' (a floating point input is expected)")
    from .._creation import tensor
    y = input
    nd = input.dim()
    for d, (n, o) in enumerate(zip(sp, out)):
        if n == o:
            continue
        m = tensor(_adaptive_matrix(n, o, input.dtype.np).T)  # (n, o)
        y = (y.movedim(nd - 3 + d, -1) @ m).movedim(-1, nd - 3 + d)
    return y.contiguous() if y is not input else input.clone()


# ----------------------------------------------------------------------------- fractional max pooling


def _fractional(op, nsp, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    _check_dims(op, input, nsp)
    float_only(op, input)
    if _random_samples is not None and _random_samples.dtype != input.dtype:
        raise RuntimeError(f"{op}: Expect _random_samples to have the same dtype as input (got "
                           f"{_random_samples.dtype.name} and {input.dtype.name})")
    k = _tuple(kernel_size, nsp, "kernel_size", op)
    sp = tuple(input.shape[-nsp:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
        ratio = _tuple_f(output_ratio, nsp)
        if any(not 0 < r < 1 for r in ratio):
            raise ValueError(f"{op}: output_ratio must be between 0 and 1 (got {output_ratio})")
        out = tuple(int(n * r) for n, r in zip(sp, ratio))
    else:
        out = _tuple(output_size, nsp, "output_size", op)
    for n, o, kk in zip(sp, out, k):
        if o + kk - 1 > n:
            raise RuntimeError(f"{op}: output_size ({list(out)}) + kernel_size ({list(k)}) - 1 must be at most the "
                               f"input size ({list(sp)})")
    lead = tuple(input.shape[:input.dim() - nsp])
    batched = input.dim() == nsp + 2
    if _random_samples is None:
        from .._creation import rand
        shape = (lead[0], lead[1], nsp) if batched else (1, lead[0], nsp)
        _random_samples = rand(*shape, dtype=input.dtype)
    else:
        want = (lead[0] if batched else 1, lead[-1], nsp)
        if tuple(_random_samples.shape) != want:
            raise RuntimeError(f"{op}: Expected _random_samples of shape {list(want)}, got "
                               f"{U.fmt_shape(_random_samples.shape)}")
    samples = _random_samples.detach() if _random_samples.requires_grad else _random_samples
    if not batched:
        samples = samples.reshape(lead + (nsp,))
    idx = dispatch(fractional_argmax_op, (input, samples), {"kernel": k, "out": out})
    val = _take(input, idx, nsp)
    return (val, idx) if return_indices else val


def _tuple_f(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(float(x) for x in v) if len(v) == n else (float(v[0]),) * n
    return (float(v),) * n


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


# ----------------------------------------------------------------------------- avg_pool3d


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    op = "avg_pool3d"
    nsp = 3
    _check_dims(op, input, nsp)
    U.no_lowp("avg_pool3d_out_frame", input)
    _check_nonempty(op, input, nsp)
    if input.is_complex():
        U.no_complex("avg_pool3d_out_frame", input)
    if input.dtype.np.kind not in "fiu":
        raise RuntimeError(f"\"{op}\" not implemented for '{dt.FROM_NP[input.dtype.np].name}'")
    k = _tuple(kernel_size, nsp, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _tuple(stride, nsp, "stride", op)
    p = _tuple(padding, nsp, "padding", op)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got {list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride must be greater than zero, but got {list(s)}")
    if any(pp < 0 or pp > kk // 2 for pp, kk in zip(p, k)):
        raise RuntimeError(f"{op}: pad should be at most half of kernel size, but got pad={list(p)}, "
                           f"kernel_size={list(k)}")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    sp = tuple(input.shape[-nsp:])
    out = tuple(_pool_out(n, kk, ss, pp, 1, ceil_mode) for n, kk, ss, pp in zip(sp, k, s, p))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, input.shape[-nsp - 1:]))}). Calculated "
                           f"output size: ({'x'.join(map(str, (input.shape[-nsp - 1],) + out))}). Output size is "
                           f"too small")
    params = {"kernel": k, "stride": s, "pad": p, "out": out, "count_include_pad": bool(count_include_pad),
              "divisor_override": divisor_override}
    return dispatch(avg_pool_nd_op, (input,), params)


def _avg_den(sp, kernel, stride, pad, out, cip, dov):
    if dov:
        return np.float64(dov)
    dv = [_avg_divisor(np, n, kk, ss, pp, o, cip) for n, kk, ss, pp, o in zip(sp, kernel, stride, pad, out)]
    den = dv[0]
    for d in dv[1:]:
        den = den[..., None] * d
    return den


def _avg_nd_impl(xp, x, *, kernel, stride, pad, out, count_include_pad, divisor_override):
    """Average pooling of the trailing len(kernel) dims (any leading dims): the sum of one strided
    slice of the zero-padded input per window offset, times PyTorch's divisor."""
    nsp = len(kernel)
    lead = x.shape[:x.ndim - nsp]
    sp = x.shape[x.ndim - nsp:]
    hi = [max(pp, (o - 1) * ss + kk - n - pp) for n, kk, ss, pp, o in zip(sp, kernel, stride, pad, out)]
    xpd = xp.zeros(lead + tuple(n + pp + h for n, pp, h in zip(sp, pad, hi)), x.dtype)
    xpd[(Ellipsis,) + tuple(slice(pp, pp + n) for pp, n in zip(pad, sp))] = x
    acc = None
    for off in np.ndindex(*kernel):  # the window offsets, each a whole-tensor slice
        v = xpd[(Ellipsis,) + tuple(slice(o, o + (m - 1) * ss + 1, ss) for o, m, ss in zip(off, out, stride))]
        acc = v.copy() if acc is None else acc.__iadd__(v)
    den = _avg_den(sp, kernel, stride, pad, out, count_include_pad, divisor_override)
    if x.dtype.kind != "f":  # integers: PyTorch's truncating division
        return xp.trunc(acc / den).astype(x.dtype)
    return (acc * (1.0 / den)).astype(x.dtype, copy=False)


def _avg_nd_bwd_impl(xp, g, *, in_sp, kernel, stride, pad, out, count_include_pad, divisor_override):
    nsp = len(kernel)
    lead = g.shape[:g.ndim - nsp]
    den = _avg_den(in_sp, kernel, stride, pad, out, count_include_pad, divisor_override)
    gs = (g * (1.0 / den)).astype(g.dtype, copy=False)
    hi = [max(pp, (o - 1) * ss + kk - n - pp) for n, kk, ss, pp, o in zip(in_sp, kernel, stride, pad, out)]
    dst = xp.zeros(lead + tuple(n + pp + h for n, pp, h in zip(in_sp, pad, hi)), g.dtype)
    for off in np.ndindex(*kernel):
        dst[(Ellipsis,) + tuple(slice(o, o + (m - 1) * ss + 1, ss) for o, m, ss in zip(off, out, stride))] += gs
    return xp.ascontiguousarray(dst[(Ellipsis,) + tuple(slice(pp, pp + n) for pp, n in zip(pad, in_sp))])


avg_pool_nd_op = defop("avg_pool3d", _avg_nd_impl, save=("shapes",), family=NN, node_name="AvgPool3DBackward0")
avg_pool_nd_bwd_op = defop("avg_pool3d_backward", _avg_nd_bwd_impl, family=NN)


@avg_pool_nd_op.def_vjp
def _(ctx, g):
    nsp = len(ctx.params["kernel"])
    return dispatch(avg_pool_nd_bwd_op, (g,), dict(ctx.params, in_sp=tuple(ctx.shapes[0][-nsp:])))


@avg_pool_nd_bwd_op.def_vjp
def _(ctx, v):
    p = dict(ctx.params)
    del p["in_sp"]
    return dispatch(avg_pool_nd_op, (v,), p)


avg_pool_nd_op.jvp = lambda ctx, t: dispatch(avg_pool_nd_op, (t,), ctx.params)
avg_pool_nd_bwd_op.jvp = lambda ctx, t: dispatch(avg_pool_nd_bwd_op, (t,), ctx.params)
# the pooled dims are the trailing ones: a vmap dim in front passes through
avg_pool_nd_op.batch = lambda op, vals, bd, params, size: (dispatch(op, tuple(vals), params), True)
avg_pool_nd_bwd_op.batch = lambda op, vals, bd, params, size: (dispatch(op, tuple(vals), params), True)


# ----------------------------------------------------------------------------- max_unpool


def _max_unpool(op, nsp, input, indices, kernel_size, stride, padding, output_size):
    _check_dims(op, input, nsp)
    float_only(op, input)
    k = _tuple(kernel_size, nsp, "kernel_size", op)
    s = k if stride is None else _tuple(stride, nsp, "stride", op)
    p = _tuple(padding, nsp, "padding", op)
    sp = tuple(input.shape[-nsp:])
    default = tuple((n - 1) * ss - 2 * pp + kk for n, ss, pp, kk in zip(sp, s, p, k))
    if output_size is None:
        out = default
    else:
        out = tuple(int(v) for v in output_size)
        if len(out) == nsp + 2 or len(out) == nsp + 1:
            out = out[-nsp:]
        if len(out) != nsp:
            raise ValueError(f"{op}: output_size should be a sequence containing {nsp} or {nsp + 2} elements, but it "
                             f"has a length of '{len(output_size)}'")
        for o, dd, ss in zip(out, default, s):
            if not dd - ss < o < dd + ss:
                raise ValueError(f"{op}: invalid output_size \"{list(out)}\" (dim should be in the range "
                                 f"{[dd - ss for dd, ss in zip(default, s)]} to {[dd + ss for dd, ss in zip(default, s)]})")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input tensor "
                           f"({U.fmt_shape(input.shape)}) but got indices tensor with shape: "
                           f"{U.fmt_shape(indices.shape)}")
    if indices.dtype.np.kind not in "iu":
        raise RuntimeError(f"{op}: expected indices to be an integer (int64) tensor, got {indices.dtype}")
    n_out = int(np.prod(out))
    ia = indices._data if not indices._meta else None  # (under vmap a batched value: scatter checks)
    if not D.state.levels and ia is not None and ia.size and (ia.min() < 0 or ia.max() >= n_out):
        bad = int(ia.max()) if ia.max() >= n_out else int(ia.min())
        raise RuntimeError(f"{op}: Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, out))})")
    lead = tuple(input.shape[:input.dim() - nsp])
    from .._creation import zeros
    z = zeros(lead + (n_out,), dtype=input.dtype)
    n_in = int(np.prod(sp))
    res = z.scatter(-1, indices.reshape(lead + (n_in,)), input.reshape(lead + (n_in,)))
    return res.reshape(lead + out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)

