"""scatter_reduce with reduce='prod', 'amax' or 'amin' (one registry primitive, with or without the
input's own values: include_self), and index_reduce built on it and on the sum/mean path.

Gradients follow PyTorch: for amax/amin the gradient of each output is shared evenly by every
participating element equal to it; for prod each element gets the product of the others in its
group (exact when some of them are zero, never a 0/0)."""
import math

import numpy as np

from .._dispatch import defop, dispatch
from . import _util as U
from .indexing import _check_index, _fit, _grid, IDX
from ._batching import dim_shift_rule as _dim_shift_rule

_REDUCERS = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _identity(reduce, dtype):
    if reduce == "prod":
        return 1
    if dtype.kind == "f" or dtype == U.BF16:
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _impl(xp, a, index, src, dim, reduce, include_self=True):
    _check_index("scatter_reduce", a, dim, index)
    if a.dtype != src.dtype:
        raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype (got {a.dtype} and "
                           f"{src.dtype})")
    if a.dtype.kind == "c" and reduce != "prod":  # no complex ordering: PyTorch has no such kernel
        U.no_complex(f"scatter_gather_tensor_cpu_reduce_{reduce}", a)
    out = a.copy(order="K")
    src = _fit(src, index.shape, -1)
    where = _grid(index, dim)
    if not include_self:
        out[where] = _identity(reduce, a.dtype)
    _REDUCERS[reduce].at(out, where, src)
    return out


scatter_reduce_op = defop("scatter_reduce", _impl, save=("inputs", "out"), family=IDX,
                          node_name="ScatterReduceBackward0")
scatter_reduce_op.batch = _dim_shift_rule
scatter_reduce_op.real_grad_only = True  # PyTorch: no derivative for complex outputs (prod included)


def _hit(ctx):
    """Where some src element lands (a constant mask)."""
    x, index, _ = ctx.inputs
    from .._creation import zeros
    return zeros(tuple(x.shape), dtype=x.dtype).scatter(ctx.params["dim"], index, 1.0) != 0


def _self_takes_part(ctx):
    if ctx.params.get("include_self", True):
        return None
    return ~_hit(ctx)


def _slopes(ctx):
    """(slope of the output in each input element, slope in each src element), PyTorch's rules."""
    from .elementwise import where
    x, index, src = ctx.inputs
    d = ctx.params["dim"]
    reduce = ctx.params["reduce"]
    out = ctx.out
    part = _self_takes_part(ctx)
    src = src if tuple(src.shape) == tuple(index.shape) else _narrow_to(src, index.shape)
    if reduce in ("amax", "amin"):
        sw = x == out
        if part is not None:
            sw = sw & part
        rw = src == out.gather(d, index)
        count = sw.to(out.dtype).scatter_add(d, index, rw.to(out.dtype))
        share = 1.0 / where(count == 0, 1.0, count)
        return sw * share, rw * share.gather(d, index)
    # prod: the product of the other members of the group
    zs = x == 0
    if part is not None:
        zs = zs & part
    zr = src == 0
    zeros = zs.to(out.dtype).scatter_add(d, index, zr.to(out.dtype))
    one_x = where(zs if part is None else (zs | ~part), 1.0, x)
    nz = dispatch(scatter_reduce_op, (one_x, index, where(zr, 1.0, src)),
                  {"dim": d, "reduce": "prod", "include_self": True})
    safe_x = where(x == 0, 1.0, x)
    safe_s = where(zr, 1.0, src)
    sx = where(x == 0, where(zeros == 1, nz, 0.0), where(zeros == 0, out / safe_x, 0.0))
    if part is not None:
        sx = sx * part
    zg, nzg, og = zeros.gather(d, index), nz.gather(d, index), out.gather(d, index)
    ss = where(zr, where(zg == 1, nzg, 0.0), where(zg == 0, og / safe_s, 0.0))
    return sx, ss


def _narrow_to(t, shape):
    from .shape import narrow
    for i, s in enumerate(shape):
        if t.shape[i] != s:
            t = narrow(t, i, 0, s)
    return t


@scatter_reduce_op.def_vjp
def _(ctx, g):
    x, index, src = ctx.inputs
    d = ctx.params["dim"]
    sx, ss = _slopes(ctx)
    gx = g * sx if ctx.needs[0] else None
    gs = None
    if ctx.needs[2]:
        gs = g.gather(d, index) * ss
        if tuple(gs.shape) != tuple(src.shape):  # src larger than index: the rest has no effect
            from .shape import constant_pad
            pad = []
            for i in reversed(range(src.dim())):
                pad += [0, src.shape[i] - gs.shape[i]]
            gs = constant_pad(gs, pad, 0.0)
    return gx, None, gs


@scatter_reduce_op.def_jvp
def _(ctx, tx, ti, ts):
    x, index, src = ctx.inputs
    d = ctx.params["dim"]
    sx, ss = _slopes(ctx)
    a = tx * sx if tx is not None else ctx.out * 0
    if ts is None:
        return a
    ts = ts if tuple(ts.shape) == tuple(index.shape) else _narrow_to(ts, index.shape)
    return a.scatter_add(d, index, ts * ss)


def _scatter_reduce_extreme(input, dim, index, src, reduce, include_self=True):
    if input.dim() == 0:  # a 0-dim tensor scatters like a 1-element vector
        r = _scatter_reduce_extreme(input.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce, include_self)
        return r.reshape(())
    d = U.wrap_dim(dim, input.dim(), "scatter_reduce")
    return dispatch(scatter_reduce_op, (input, index, src), {"dim": d, "reduce": reduce,
                                                             "include_self": bool(include_self)})


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with source's slices reduced into the slices index names along dim ('prod', 'mean',
    'amax', 'amin'): scatter_reduce with the index spread over source's shape."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                           f"{reduce}.")
    n = input.dim()
    d = U.wrap_dim(dim, max(n, 1), "index_reduce")
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, got {index.dim()}-D")
    if index.dtype.name not in ("int64", "int32"):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got {index.dtype}")
    if source.dim() != n and not (n == 0 and source.dim() <= 1):
        raise IndexError(f"index_reduce_(): Source/destination tensor must have same number of dimensions "
                         f"(got {source.dim()} and {n})")
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({input.dtype}) and source ({source.dtype}) must have the "
                           f"same scalar type")
    if input.is_complex():
        # PyTorch's CPU kernels: complex prod/mean only into an N-d input's own values, never amax/amin;
        # the first of its kernels that lacks complex raises; its derivative is real-only
        kernel = ("index_reduce_func_exclude_input_init" if not include_self else "index_func_" if n <= 1 else
                  {"amax": "maximum_cpu", "amin": "minimum_cpu"}.get(reduce))
        if kernel:
            U.no_complex(kernel, input._data)
        from ..autograd.grad_mode import is_grad_enabled
        if is_grad_enabled() and (input.requires_grad or source.requires_grad):
            raise RuntimeError("index_reduce does not support automatic differentiation for outputs with complex "
                               "dtype.")
    if n == 0:
        x, s, idx = input.reshape(1), source.reshape(1), index.reshape(-1)
        return index_reduce(x, 0, idx, s, reduce, include_self=include_self).reshape(())
    if index.numel() != (source.shape[d] if source.dim() else 1):
        raise IndexError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                         f"source.size(dim) ({source.shape[d]})")
    for i in range(n):
        if i != d and source.shape[i] != input.shape[i]:
            raise RuntimeError(f"index_reduce_(): source and destination slices have different shapes "
                               f"({list(source.shape)} and {list(input.shape)} at dim {i})")
    shape = [1] * n
    shape[d] = index.numel()
    idx = index.long().reshape(-1)
    a = U.raw_values(index)  # (every row under vmap)
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < -input.shape[d] or hi >= input.shape[d]:
            raise IndexError(f"index_reduce(): index out of range for dimension {d} with size {input.shape[d]}")
    idx = idx % input.shape[d] if input.shape[d] else idx
    full_idx = idx.reshape(tuple(shape)).expand(tuple(source.shape))
    if reduce == "mean":
        from .indexing import scatter_reduce
        return scatter_reduce(input, d, full_idx, source, "mean", include_self=include_self)
    return _scatter_reduce_extreme(input, d, full_idx, source, reduce, include_self)


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Reduce consecutive segments of data along axis ('sum', 'mean', 'max', 'min', 'prod'), the segments
    given by their lengths or offsets (per leading index when those are N-D); ``initial`` takes part in
    every segment's reduction and is the value of an empty one (else the reduction's identity; mean:
    nan). Composed of index_add/index_reduce, so differentiable in data."""
    from .._creation import arange, full, zeros
    from .shape import reshape
    from .elementwise import where
    if reduce not in ("sum", "mean", "max", "min", "prod"):
        raise RuntimeError(f"segment_reduce: unsupported reduction {reduce!r} (sum, mean, max, min or prod)")
    if data.is_complex():
        U.no_complex("_segment_reduce_cpu", data._data)
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet (as in PyTorch)")
    if (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce(): exactly one of lengths or offsets must be given")
    ax = U.wrap_dim(axis, data.dim(), "segment_reduce")
    if lengths is None:
        lengths = offsets[..., 1:] - offsets[..., :-1]
    if lengths.dim() != ax + 1 or tuple(lengths.shape[:ax]) != tuple(data.shape[:ax]):
        raise RuntimeError(f"segment_reduce(): Expected lengths/offsets of shape {list(data.shape[:ax])} + [segments] "
                           f"for data of shape {list(data.shape)} and axis {ax}, got {list(lengths.shape)}")
    n = data.shape[ax]
    if not unsafe:
        lv = U.raw_values(lengths) if U.is_tensor(lengths) and lengths._wr is not None and \
            getattr(lengths._wr, "kind", None) == "vmap" and lengths._val._wr is None else None
        if lv is not None:  # lengths batched by vmap: every row's values checked at once
            bad_neg, bad_sum = lv.size and (lv < 0).any(), lv.size and (lv.sum(-1) != n).any()
        else:
            bad_neg = lengths.numel() and bool((lengths < 0).any())
            bad_sum = lengths.numel() and bool((lengths.sum(-1) != n).any())
        if bad_neg:
            raise RuntimeError("segment_reduce(): lengths contains negative value!")
        if bad_sum:
            raise RuntimeError(f"segment_reduce(): Expected all rows of lengths along axis to sum to data.size(axis) "
                               f"= {n}")
    lead = tuple(data.shape[:ax])
    rest = tuple(data.shape[ax + 1:])
    b = 1
    for s in lead:
        b *= s
    segs = lengths.shape[-1]
    ends = lengths.long().reshape(b, segs).cumsum(-1)                      # (B, S)
    pos = arange(n)
    seg_of = (ends.unsqueeze(1) <= pos.reshape(1, n, 1)).sum(-1)           # (B, L): segment of each position
    # positions past the last segment (lengths summing to less than the size) land in a spare row per
    # leading index, dropped at the end
    flat_idx = (seg_of + arange(b).reshape(b, 1) * (segs + 1)).reshape(-1)  # (B * L,)
    x = reshape(data, (b * n,) + rest)
    ident = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}[reduce]
    start = ident if initial is None else initial
    base = full((b * (segs + 1),) + rest, start, dtype=data.dtype)
    if reduce in ("sum", "mean"):
        out = base.index_add(0, flat_idx, x)
        if reduce == "mean":
            cnt = zeros((b * (segs + 1),), dtype=data.dtype).index_add(0, flat_idx,
                                                                      full((b * n,), 1.0, dtype=data.dtype))
            cnt = cnt.reshape((b * (segs + 1),) + (1,) * len(rest))
            empty = cnt == 0
            out = where(empty, math.nan if initial is None else float(initial), out / where(empty, 1.0, cnt))
    else:
        red = {"max": "amax", "min": "amin", "prod": "prod"}[reduce]
        out = index_reduce(base, 0, flat_idx, x, red, include_self=True)
    out = reshape(out, (b, segs + 1) + rest).narrow(1, 0, segs)
    return reshape(out, lead + (segs,) + rest)

