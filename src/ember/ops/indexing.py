"""Indexing: __getitem__/__setitem__, gather/scatter, index_select/index_add, masked ops,
sort/topk and friends."""
import numpy as np

from .. import _dispatch as D
from .._dispatch import defop, dispatch
from . import _util as U
from .shape import select, slice_dim, unsqueeze, sum_to, view_op

IDX = "indexing"


# ----------------------------------------------------------------------------- advanced indexing


def _index_impl(xp, a, spec):
    try:
        return xp.ascontiguousarray(a[spec])  # NumPy may return permuted strides; PyTorch's result is dense
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None


index_op = defop("index", _index_impl, save=("shapes",), family=IDX)


def _index_put_impl(xp, a, v, spec, accumulate=False):
    out = a.copy(order="K")
    if v.dtype != a.dtype:
        v = v.astype(a.dtype)
    try:
        if accumulate:
            xp.add.at(out, spec, v)
        else:
            out[spec] = v
    except ValueError:
        raise RuntimeError(f"index_put: shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast "
                           f"to indexing result of shape {list(out[spec].shape)}") from None
    return out


index_put_op = defop("index_put", _index_put_impl, save=("shapes",), family=IDX)


def _index_backward_impl(xp, g, shape, spec):
    z = xp.zeros(shape, g.dtype)
    xp.add.at(z, spec, g)
    return z


index_backward_op = defop("index_backward", _index_backward_impl, family=IDX)
index_op.vjp = lambda ctx, g: dispatch(index_backward_op, (g,), {"shape": ctx.shapes[0],
                                                               "spec": ctx.params["spec"]})
index_op.jvp = lambda ctx, t: dispatch(index_op, (t,), ctx.params)
index_backward_op.vjp = lambda ctx, g: dispatch(index_op, (g,), {"spec": ctx.params["spec"]})
index_backward_op.jvp = lambda ctx, t: dispatch(index_backward_op, (t,), ctx.params)


@index_put_op.def_vjp
def _(ctx, g):
    p = ctx.params
    ga = gv = None
    if ctx.needs[0]:
        ga = g if p.get("accumulate") else dispatch(index_put_op, (g, g.new_zeros(())), {"spec": p["spec"]})
    if ctx.needs[1]:
        gv = sum_to(dispatch(index_op, (g,), {"spec": p["spec"]}), ctx.shapes[1])
    return ga, gv


@index_put_op.def_jvp
def _(ctx, ta, tv):
    p = ctx.params
    base = ta if ta is not None else ctx.out * 0
    val = tv if tv is not None else base.new_zeros(())
    return dispatch(index_put_op, (base, val), p)


def _to_np_index(item, dim_size=None):
    if isinstance(item, D.Tensor):
        a = item._data
        if a.dtype.kind not in "iub":
            raise IndexError(f"index: tensors used as indices must be long, int, byte or bool tensors, "
                             f"got {item.dtype}")
        return a
    if isinstance(item, range):  # a Python range indexes as the list of its values, as in PyTorch
        return np.arange(item.start, item.stop, item.step, dtype=np.int64)
    if isinstance(item, (list, tuple)):
        arr = np.asarray([x._data if isinstance(x, D.Tensor) else x for x in item])
        if arr.dtype.kind not in "iub":
            raise IndexError(f"index: tensors used as indices must be long, int, byte or bool tensors, "
                             f"got a list of {arr.dtype}")
        return arr
    if item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer, np.ndarray)):
        return item
    raise (IndexError if isinstance(item, float) else TypeError)(
        f"index: only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are valid "
        f"indices (got {type(item).__name__})")


def _normalize(idx, ndim):
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = 0
    for i in idx:
        if i is None or i is Ellipsis:
            continue
        if isinstance(i, D.Tensor) and i.dtype.category == 0:
            used += i.dim()
        elif isinstance(i, bool):
            continue
        else:
            used += 1
    if used > ndim:
        raise IndexError(f"index: too many indices for tensor of dimension {ndim} (got {used})")
    out = []
    for i in idx:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(i)
    return out


def _is_basic(i):
    return i is None or isinstance(i, (slice, int, np.integer)) and not isinstance(i, bool)


def _batched_index_items(idx):
    """True when a vmap-batched tensor is used as an index (its data lives one level down)."""
    if D.state.simple:
        return False
    for i in (idx if isinstance(idx, tuple) else (idx,)):
        if isinstance(i, D.Tensor) and i._wr is not None:
            return True
    return False


def _ints_first(items):
    """PyTorch applies the integer (and slice/None) indices first, as views, and the tensor indices to
    the result: x[0, :, idx] has shape (3, 2) for x of shape (2, 3, 4), where NumPy, counting the 0 as
    an advanced index apart from idx, gives (2, 3). Returns (basic items, advanced items on the view)
    when integers and tensor indices are mixed, else None (NumPy's rule then agrees)."""
    if not any(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in items):
        return None
    basic, adv = [], []
    for i in items:
        if _is_basic(i):
            basic.append(i)
            if not isinstance(i, (int, np.integer)):  # an integer's dim is gone from the view
                adv.append(slice(None))
        else:
            a = _to_np_index(i)
            if isinstance(a, np.ndarray):
                basic.extend([slice(None)] * (a.ndim if a.dtype.kind == "b" else 1))
            adv.append(i)
    return basic, adv


def getitem(x, idx):
    if _batched_index_items(idx):
        return batched_index(x, idx)
    items = _normalize(idx, x.dim())
    if all(_is_basic(i) for i in items):
        return _basic_getitem(x, items)
    split = _ints_first(items)
    if split is not None:
        x, items = _basic_getitem(x, split[0]), split[1]
    spec = tuple(_to_np_index(i) for i in items)
    return dispatch(index_op, (x,), {"spec": spec})


def _basic_getitem(x, items):
    r = x
    d = 0
    for i in items:
        if i is None:
            r = unsqueeze(r, d)
            d += 1
        elif isinstance(i, slice):
            if i != slice(None):
                size = r.shape[d]
                start, stop, step = i.indices(size)
                if i.step is not None and i.step <= 0:
                    raise ValueError(f"index: slice step must be greater than zero, got {i.step}")
                r = slice_dim(r, d, start, stop, step)
            d += 1
        else:
            size = r.shape[d]
            if not -size <= i < size:
                raise IndexError(f"index: index {i} is out of bounds for dimension {d} with size {size}")
            r = select(r, d, i)
    if r is x:
        return dispatch(view_op, (x,), {"shape": tuple(x.shape)})
    return r


def setitem(x, idx, value):
    from .inplace import inplace_apply
    if _batched_index_items(idx):
        return batched_index(x, idx, value, setitem=True)
    items = _normalize(idx, x.dim())
    if not U.is_tensor(value):
        if isinstance(value, (list, tuple)):
            from .._creation import tensor as _t
            value = _t(value, dtype=x.dtype)
        else:
            value = D._new_tensor(np.asarray(U.real_scalar(value, x._data.dtype), dtype=x._data.dtype))
    if items and all(_is_basic(i) for i in items):
        # basic indexing: x[idx] = v is a copy into the view x[idx], as in PyTorch (whose
        # autograd then records CopySlices on x, not IndexPutBackward0)
        try:
            _basic_getitem(x, items).copy_(value)
        except RuntimeError as e:
            raise RuntimeError(f"setitem (a copy into the indexed view of shape "
                               f"{list(_basic_getitem(x, items).shape)}): {e}") from None
        return
    split = _ints_first(items)
    if split is not None:
        x, items = _basic_getitem(x, split[0]), split[1]
    spec = tuple(_to_np_index(i) for i in items)
    if any(isinstance(i, np.ndarray) for i in spec) and not (
            value.dim() == 0 and len(spec) == 1 and spec[0].dtype.kind == "b"):
        _same_values(x, value)  # advanced indexing is index_put_ in PyTorch (no implicit cast), except
        #                         x[mask] = scalar tensor, which is masked_fill
    inplace_apply(index_put_op, x, (value,), {"spec": spec}, "index_put_")


def _same_values(input, values):
    if U.is_tensor(values) and values.dtype != input.dtype:
        raise RuntimeError(f"index_put: Index put requires the source and destination dtypes match, got "
                           f"{input.dtype} for the destination and {values.dtype} for the source")


def index_put(input, indices, values, accumulate=False):
    if _batched_index_items(tuple(indices)):  # index tensors batched by a transform (vmap)
        return _batched_index_put(input, tuple(indices), values, accumulate)
    _same_values(input, values)
    spec = tuple(_to_np_index(i) for i in indices)
    return dispatch(index_put_op, (input, values), {"spec": spec, "accumulate": accumulate})


def _batched_index_put(input, items, values, accumulate):
    """index_put with index tensors batched by vmap: at the batch level, integer index tensors get a
    batch arange in front (row b writes only into row b); the indices are params (arrays), so this
    runs one level down, as batched_index does for getitem."""
    lvl = None
    for it in items:
        w = it._wr if isinstance(it, D.Tensor) else None
        if w is not None and (lvl is None or w.index > lvl.index):
            lvl = w
    if getattr(lvl, "kind", None) != "vmap":   # another transform's wrapper: its values are the indices
        return index_put(input, tuple(D.unwrap_at(it, lvl) for it in items), values, accumulate)
    if not all(isinstance(it, D.Tensor) and it.dtype.category == 1 for it in items):
        raise RuntimeError("vmap: index_put with a batched index supports integer index tensors only (a batched "
                           "boolean mask gives a data-dependent shape); use where or masked_fill")
    from .._creation import arange
    size = lvl.size
    n = max(it.dim() for it in items)
    ar = arange(size).reshape((size,) + (1,) * n)
    phys = tuple(it._val if it._wr is lvl else it for it in items)
    xv = input._val if input._wr is lvl else _materialize(input, size)
    vv = values
    if isinstance(values, D.Tensor) and values._wr is lvl:
        vv = _pad_to(values._val, n + input.dim() - len(items))
    return lvl.wrap(index_put(xv, (ar,) + phys, vv, accumulate))


def index_put_(input, indices, values, accumulate=False):
    from .inplace import inplace_apply
    U.check_plain("index_put_", *[i for i in indices if U.is_tensor(i)])
    _same_values(input, values)
    spec = tuple(_to_np_index(i) for i in indices)
    return inplace_apply(index_put_op, input, (values,), {"spec": spec, "accumulate": accumulate},
                         "index_put_")


# ----------------------------------------------------------------------------- gather / scatter


def _check_index(op, x, dim, index):
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {index.dtype}")
    if index.size == 0:  # an empty index selects nothing, whatever its shape (PyTorch)
        return
    if index.ndim != x.ndim and not (index.ndim <= 1 and x.ndim <= 1):
        raise RuntimeError(f"{op}: Index tensor must have the same number of dimensions as input tensor "
                           f"(index {list(index.shape)}, input {list(x.shape)})")
    if index.ndim == x.ndim and any(i > s for d, (i, s) in enumerate(zip(index.shape, x.shape)) if d != dim):
        raise RuntimeError(f"{op}: Size does not match at dimension {dim}: expected index {list(index.shape)} "
                           f"to be smaller than self {list(x.shape)} apart from dimension {dim}")
    U.check_bounds(op, index, x.shape[dim] if x.ndim else 1, dim)


def _fit(a, shape, skip):
    """a[:shape] along every dim but ``skip`` (gather/scatter allow smaller index tensors)."""
    if a.shape == shape:
        return a
    return a[tuple(slice(None) if d == skip else slice(0, s) for d, s in enumerate(shape))]


def _gather_impl(xp, a, index, dim):
    _check_index("gather", a, dim, index)
    if index.size == 0:
        return xp.empty(index.shape, a.dtype)
    if a.ndim == 0 or index.ndim == 0:  # 0-dim operands: a 1-element vector here
        return xp.take(a.reshape(-1), index.reshape(-1)).reshape(index.shape)
    return xp.take_along_axis(_fit(a, index.shape, dim), index, axis=dim)


gather_op = defop("gather", _gather_impl, save=("inputs", "shapes"), family=IDX)
gather_op.out_like = 1   # the result has the index's shape (gather_like_rule)


@gather_op.def_vjp
def _(ctx, g):
    x, index = ctx.inputs
    d = ctx.params["dim"]
    from .._creation import zeros
    return zeros(ctx.shapes[0], dtype=g.dtype).scatter_add(d, index, g), None


gather_op.jvp = lambda ctx, t, ti: t.gather(ctx.params["dim"], ctx.inputs[1])


def _grid(index, dim):
    """Advanced-index tuple addressing out[..., index[...], ...] along dim."""
    idx = list(np.ogrid[tuple(slice(0, s) for s in index.shape)])
    idx[dim] = index
    return tuple(idx)


def _same_src(op, a, src):
    if type(src) is np.ndarray and src.dtype != a.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype (got {a.dtype} and {src.dtype})")


def _scatter_impl(xp, a, index, src, dim, reduce=None):
    _check_index("scatter", a, dim, index)
    _same_src("scatter", a, src)
    if index.size == 0:
        return a.copy(order="K")
    if a.ndim == 0 or index.ndim == 0:  # 0-dim operands: 1-element vectors here
        s = src.reshape(-1) if type(src) is np.ndarray else src
        return _scatter_impl(xp, a.reshape(-1), index.reshape(-1), s, 0, reduce).reshape(a.shape)
    out = a.copy(order="K")
    if type(src) is np.ndarray:
        src = _fit(src, index.shape, -1).astype(a.dtype, copy=False)
    if reduce is None:
        out[_grid(index, dim)] = src
    elif reduce in ("add", "sum"):
        xp.add.at(out, _grid(index, dim), src)
    elif reduce in ("multiply", "prod"):
        xp.multiply.at(out, _grid(index, dim), src)
    else:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    return out


scatter_op = defop("scatter", _scatter_impl, save=("inputs",), family=IDX,  # (value overload: Backward1)
                   node_name=lambda args, params: "ScatterBackward0" if isinstance(args[2], D.Tensor)
                   else "ScatterBackward1")


@scatter_op.def_vjp
def _(ctx, g):
    x, index, src = ctx.inputs
    d = ctx.params["dim"]
    if ctx.params.get("reduce") is not None:
        raise RuntimeError("scatter with reduce is not differentiable in ember")
    gx = g.scatter(d, index, 0.0) if ctx.needs[0] else None
    gs = g.gather(d, index) if ctx.needs[2] else None
    return gx, None, gs


@scatter_op.def_jvp
def _(ctx, tx, ti, ts):
    x, index, src = ctx.inputs
    d = ctx.params["dim"]
    base = tx if tx is not None else ctx.out * 0
    s = ts if ts is not None else (0.0 if not U.is_tensor(src) else src * 0)
    return base.scatter(d, index, s)


def _scatter_add_impl(xp, a, index, src, dim):
    _check_index("scatter_add", a, dim, index)
    _same_src("scatter_add", a, src)
    if index.size == 0:
        return a.copy(order="K")
    if a.ndim == 0 or index.ndim == 0:  # 0-dim operands: 1-element vectors here
        return _scatter_add_impl(xp, a.reshape(-1), index.reshape(-1), src.reshape(-1), 0).reshape(a.shape)
    out = a.copy(order="K")
    xp.add.at(out, _grid(index, dim), _fit(src, index.shape, -1).astype(a.dtype, copy=False))
    return out


scatter_add_op = defop("scatter_add", _scatter_add_impl, save=("inputs",), family=IDX)


@scatter_add_op.def_vjp
def _(ctx, g):
    x, index, src = ctx.inputs
    return (g if ctx.needs[0] else None), None, (g.gather(ctx.params["dim"], index) if ctx.needs[2] else None)


@scatter_add_op.def_jvp
def _(ctx, tx, ti, ts):
    x, index, src = ctx.inputs
    base = tx if tx is not None else ctx.out * 0
    return base.scatter_add(ctx.params["dim"], index, ts) if ts is not None else base


def gather(input, dim, index, *, sparse_grad=False, out=None):
    return U.write_out(_gather(input, dim, index), out, "gather", (input, index,), exact=True)


def _gather(input, dim, index, *, sparse_grad=False):
    return dispatch(gather_op, (input, index), {"dim": U.wrap_dim(dim, input.dim(), "gather")})


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    if src is None:
        src = value
    p = {"dim": U.wrap_dim(dim, input.dim(), "scatter")}
    if reduce is not None:
        p["reduce"] = reduce
    return dispatch(scatter_op, (input, index, src), p)


def scatter_add(input, dim, index, src):
    return dispatch(scatter_add_op, (input, index, src), {"dim": U.wrap_dim(dim, input.dim(), "scatter_add")})


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with src reduced into it at index along dim ('sum', 'prod', 'mean', 'amax', 'amin'),
    with or without the values of ``input`` at the scattered-to positions (``include_self``); 'sum'
    and 'mean' are composed from scatter_add (so differentiable)."""
    if reduce in ("prod", "amax", "amin"):  # a primitive of its own (ops/scatter_reduce.py)
        from .scatter_extreme import _scatter_reduce_extreme
        return _scatter_reduce_extreme(input, dim, index, src, reduce, include_self)
    if reduce not in ("sum", "mean"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    hit = None
    if not include_self or reduce == "mean":
        from .._creation import zeros
        hit = zeros(tuple(input.shape), dtype=input.dtype).scatter(dim, index, 1) != 0
    base = input if include_self else input.masked_fill(hit, 0)
    total = scatter_add(base, dim, index, src)
    if reduce == "sum":
        return _real_grad_only(total)
    from .._creation import ones_like
    count = scatter_add(hit.to(input.dtype) * int(include_self), dim, index, ones_like(src, dtype=input.dtype))
    count = count.masked_fill(~hit, 1)
    mean = total / count if input.is_floating_point() or input.is_complex() else \
        total.div(count, rounding_mode="floor")
    return _real_grad_only(mean.where(hit, input))


def _real_grad_only(out):
    """PyTorch's scatter_reduce has a real-only derivative (every reduce): a complex result that would
    need a gradient raises its error."""
    if out.requires_grad and out.is_complex():
        raise RuntimeError("scatter_reduce does not support automatic differentiation for outputs with complex "
                           "dtype.")
    return out


def take_along_dim(input, indices, dim=None):
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = U.wrap_dim(dim, input.dim(), "take_along_dim")
    if input.dim() and indices.numel() and (indices._wr is not None or bool((indices < 0).any())):
        indices = where(indices < 0, indices + input.shape[d], indices)  # negative: from the end
    if input.dim() != indices.dim():
        raise RuntimeError(f"take_along_dim: input and indices should have the same number of dimensions, "
                           f"but got {input.dim()} dimensions for input, and {indices.dim()} dimensions for "
                           f"indices")
    # input and indices broadcast against each other in every dim but ``dim`` (PyTorch)
    si, sx = list(indices.shape), list(input.shape)
    if input.dim() and (si[:d] + si[d + 1:] != sx[:d] + sx[d + 1:]):
        si[d] = sx[d] = 1
        try:
            b = list(np.broadcast_shapes(tuple(si), tuple(sx)))
        except ValueError:
            raise RuntimeError(f"take_along_dim: the shapes of input {list(input.shape)} and indices "
                               f"{list(indices.shape)} do not broadcast outside dim {d}") from None
        input = input.expand(*(b[:d] + [input.shape[d]] + b[d + 1:]))
        indices = indices.expand(*(b[:d] + [indices.shape[d]] + b[d + 1:]))
    return gather(input, d, indices)


def _index_select_impl(xp, a, index, dim):
    if index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape {list(index.shape)}")
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"index_select(): Expected dtype int32/int64 for index, got {index.dtype}")
    U.check_bounds("index_select", index, a.shape[dim] if a.ndim else 1, dim, IndexError)
    if a.ndim == 0:  # a 0-dim input stays 0-dim (PyTorch)
        return xp.take(a.reshape(1), index.reshape(-1), axis=0).reshape(())
    return xp.take(a, index, axis=dim)


index_select_op = defop("index_select", _index_select_impl, save=("inputs", "shapes"), family=IDX)


@index_select_op.def_vjp
def _(ctx, g):
    x, index = ctx.inputs
    from .._creation import zeros
    return zeros(ctx.shapes[0], dtype=g.dtype).index_add(ctx.params["dim"], index, g), None


index_select_op.jvp = lambda ctx, t, ti: t.index_select(ctx.params["dim"], ctx.inputs[1])


def _index_add_impl(xp, a, index, src, dim, alpha=1):
    U.check_bounds("index_add", index, a.shape[dim] if a.ndim else 1, dim, IndexError)
    if type(src) is np.ndarray and a.ndim and src.ndim:
        want = a.shape[:dim] + (index.size,) + a.shape[dim + 1:]
        if src.ndim != a.ndim or any(s != w for k, (s, w) in enumerate(zip(src.shape, want)) if k != dim):
            raise RuntimeError(f"index_add_(): source tensor shape must match self tensor shape, excluding the "
                               f"specified dimension. Got self.shape = {list(a.shape)} source.shape = "
                               f"{list(src.shape)}")
    if type(src) is np.ndarray:
        if src.dtype != a.dtype:
            raise RuntimeError(f"index_add_(): self ({a.dtype}) and source ({src.dtype}) must have the same "
                               f"scalar type")
        if src.ndim and index.size != src.shape[dim if src.ndim > dim else -1]:
            raise RuntimeError(f"index_add_(): Number of indices ({index.size}) should be equal to "
                               f"source.size(dim) ({src.shape[dim]}), for dim: {dim}")
    out = a.copy(order="K")
    if alpha != 1:
        src = src * alpha
    if a.ndim == 0:  # a 0-dim input is a 1-element vector here
        flat = out.reshape(1)
        xp.add.at(flat, index.reshape(-1), xp.asarray(src).reshape(-1).astype(a.dtype, copy=False))
        return flat.reshape(())
    xp.add.at(out, (slice(None),) * dim + (index,), src.astype(a.dtype, copy=False))
    return out


index_add_op = defop("index_add", _index_add_impl, save=("inputs",), family=IDX)


@index_add_op.def_vjp
def _(ctx, g):
    x, index, src = ctx.inputs
    a = ctx.params.get("alpha", 1)
    gs = g.index_select(ctx.params["dim"], index) if ctx.needs[2] else None
    if gs is not None and a != 1:
        gs = gs * a
    return (g if ctx.needs[0] else None), None, gs


@index_add_op.def_jvp
def _(ctx, tx, ti, ts):
    x, index, src = ctx.inputs
    base = tx if tx is not None else ctx.out * 0
    return base.index_add(ctx.params["dim"], index, ts, alpha=ctx.params.get("alpha", 1)) if ts is not None else base


def index_select(input, dim, index, *, out=None):
    return U.write_out(_index_select(input, dim, index), out, "index_select", (input, index,), exact=True)


def _index_select(input, dim, index):
    return dispatch(index_select_op, (input, index), {"dim": U.wrap_dim(dim, input.dim(), "index_select")})


def index_add(input, dim, index, source, *, alpha=1):
    return dispatch(index_add_op, (input, index, source),
                    {"dim": U.wrap_dim(dim, input.dim(), "index_add"), "alpha": alpha})


def index_copy(input, dim, index, source):
    """input with the slices at ``index`` along ``dim`` replaced by source's (index_fill then index_add:
    differentiable in input and source); a repeated index copies one of its slices, as PyTorch
    (never their sum).

    Differences from PyTorch: with repeated indices (which PyTorch documents as nondeterministic) ember copies
    the last slice and sends the gradient to it only; PyTorch sends it to every repeated slice."""
    if index._wr is not None:   # a batched index (vmap): the copy is a where over a scattered choice
        return _index_copy_where(input, dim, index, source)
    if index.numel() > 1:
        d = U.wrap_dim(dim, input.dim(), "index_copy") if input.dim() else 0
        flat = index._data.reshape(-1)
        n = input.shape[d] if input.dim() else 1
        wrapped = np.where(flat < 0, flat + n, flat)
        uniq, last = np.unique(wrapped[::-1], return_index=True)
        if len(uniq) != len(flat):  # keep the last occurrence of each index (NumPy's assignment order)
            keep = np.sort(len(flat) - 1 - last)
            index = D._new_tensor(flat[keep].astype(index._data.dtype))
            source = index_select(source, d, D._new_tensor(keep.astype(np.int64))) if source.dim() else source
    return index_add(index_fill(input, dim, index, 0), dim, index, source)


def _index_copy_where(input, dim, index, source):
    """index_copy from batchable ops: for each slot along dim, the last source slice that targets it
    (a scatter_reduce 'amax' of positions), then a where between that slice and input."""
    from .._creation import arange, full
    d = U.wrap_dim(dim, input.dim(), "index_copy") if input.dim() else 0
    n = input.shape[d] if input.dim() else 1
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{input.dtype} and (source) {source.dtype}")
    raw = U.raw_values(index)
    if raw.size and (raw.min() < -n or raw.max() >= n):
        bad = int(raw.min()) if raw.min() < -n else int(raw.max())
        raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {d} with size {n}")
    flat = index.reshape(-1).to(U.dt.int64)
    flat = where(flat < 0, flat + n, flat)
    last = full((n,), -1, dtype=U.dt.int64).scatter_reduce(0, flat, arange(flat.numel()), "amax")
    if not input.dim():
        return where(last.reshape(()) >= 0, source.reshape(()), input)
    shape = [1] * input.dim()
    shape[d] = -1
    sel = index_select(source, d, last.clamp(min=0))
    return where((last >= 0).reshape(shape), sel, input)


def index_fill(input, dim, index, value):
    # a masked_fill whose mask is scattered from the index (so it batches and differentiates through
    # scatter and masked_fill)
    d = U.wrap_dim(dim, input.dim(), "index_fill")
    n = input.shape[d] if input.dim() else 1
    raw = U.raw_values(index)   # (under vmap: every batch row, for the checks only)
    if raw.dtype.kind not in "iu":
        raise IndexError(f"index_fill(): Expected dtype int64 for index, got {index.dtype}")
    if raw.size and (raw.min() < -n or raw.max() >= n):
        bad = int(raw.min()) if raw.min() < -n else int(raw.max())
        raise IndexError(f"index_fill: index {bad} is out of bounds for dimension {d} with size {n}")
    from .._creation import zeros
    flat = index.reshape(-1).to(U.dt.int64)
    flat = where(flat < 0, flat + n, flat)
    mask = zeros(n, dtype=U.dt.bool_).scatter(0, flat, True)
    shape = [1] * input.dim()
    if input.dim():
        shape[d] = -1
    return masked_fill(input, mask.reshape(shape), value)


def _fits(small, big):
    """Whether shape ``small`` broadcasts to shape ``big`` exactly (without growing it)."""
    return len(small) <= len(big) and all(m == 1 or m == b for m, b in zip(small[::-1], big[::-1]))


def _masked_fill_impl(xp, a, mask, value):
    if mask.dtype.kind != "b":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype}")
    v = U.real_scalar(value, a.dtype) if not isinstance(value, np.ndarray) else value.astype(a.dtype)
    if a.dtype.kind == "f" and type(v) in (float, int, np.ndarray) and _fits(mask.shape, a.shape):
        # a copy of a (its layout kept) written where the mask is set: the values np.where picks,
        # in two cheap passes instead of np.where's three-operand broadcast (about 1.7x faster)
        r = a.copy(order="K")
        xp.copyto(r, v, where=mask)
        return r
    try:
        r = xp.where(mask, v, a)
    except ValueError:
        raise U.broadcast_error("masked_fill", a, mask) from None
    if r.shape != a.shape:
        raise RuntimeError(f"masked_fill: the mask of shape {list(mask.shape)} must be broadcastable "
                           f"to the input of shape {list(a.shape)}")
    return r.astype(a.dtype, copy=False)


masked_fill_op = defop("masked_fill", _masked_fill_impl, save=("inputs",), family=IDX)


@masked_fill_op.def_vjp
def _(ctx, g):
    x, mask, value = ctx.inputs
    gx = dispatch(masked_fill_op, (g, mask, 0.0)) if ctx.needs[0] else None  # (where(mask, 0, g))
    gv = where(mask, g, 0.0).sum() if ctx.needs[2] else None
    return gx, None, gv


@masked_fill_op.def_jvp
def _(ctx, tx, tm, tv):
    x, mask, value = ctx.inputs
    a = tx if tx is not None else ctx.out * 0
    return where(mask, 0.0 if tv is None else tv, a)


def masked_fill(input, mask, value):
    if isinstance(value, complex) and not input.is_complex():
        raise RuntimeError(f"masked_fill: value cannot be converted to type {input.dtype} without overflow: "
                           f"{value}")
    if U.is_tensor(value) and value.dim() != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value.dim()} dimension(s).")
    if mask._data.shape != input._data.shape and U.is_tensor(mask):  # out of place: the broadcast shape
        try:
            shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
        except ValueError:
            raise U.broadcast_error("masked_fill", input._data, mask._data) from None
        if shape != tuple(input.shape):
            input = input.expand(*shape)
    return dispatch(masked_fill_op, (input, mask, value))


def masked_select(input, mask, *, out=None):
    return U.write_out(_masked_select(input, mask), out, "masked_select", (input, mask,), exact=True)


def _masked_select(input, mask):
    U.check_plain("masked_select", input, mask)
    if mask.dtype is not U.dt.bool_:  # (an integer mask would index by position: a silent wrong answer)
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    from .shape import broadcast_tensors
    try:
        x, m = broadcast_tensors(input, mask)
    except RuntimeError:
        raise RuntimeError(f"masked_select: the mask of shape {list(mask.shape)} is not broadcastable with the "
                           f"input of shape {list(input.shape)}") from None
    return dispatch(index_op, (x,), {"spec": (m._data,)})


def masked_scatter(input, mask, source):
    # the positions where mask is True (broadcast) take source's leading elements in row-major order: a
    # gather of source at the running count of the mask, then a where (batchable, differentiable)
    if mask.dtype is not U.dt.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got {input.dtype} "
                           f"and {source.dtype}")
    from .shape import broadcast_tensors
    try:
        x, m = broadcast_tensors(input, mask)
    except RuntimeError:
        raise RuntimeError(f"masked_scatter: the mask of shape {list(mask.shape)} is not broadcastable with the "
                           f"input of shape {list(input.shape)}") from None
    raw = U.raw_values(m)  # (under vmap: every batch row, for the check only)
    rows = raw.reshape(-1, max(m.numel(), 1)) if m.numel() else raw.reshape(1, 0)
    need = int(rows.sum(1).max()) if rows.size else 0
    if need > source.numel():
        raise RuntimeError(f"masked_scatter: Number of elements of source ({source.numel()}) < number of ones in "
                           f"mask ({need})")
    if need == 0:
        return x.clone()
    fm = m.reshape(-1)
    pos = (fm.to(U.dt.int64).cumsum(0) - 1).clamp(min=0)
    return where(fm, source.reshape(-1).gather(0, pos), x.reshape(-1)).reshape(tuple(x.shape))


def take(input, index, *, out=None):
    return U.write_out(_take(input, index), out, "take", (input, index,), exact=True)


def _take(input, index):
    if index._wr is not None:  # a batched index: advanced indexing has the batching rules
        return getitem(input.reshape(-1), index)
    a, n = index._data, input.numel()
    if a.dtype.kind not in "iu":
        raise IndexError(f"take: expected a long index tensor, got {index.dtype}")
    if a.size and (a.min() < -n or a.max() >= n):
        bad = int(a.min()) if a.min() < -n else int(a.max())
        raise IndexError(f"take: out of range: tried to access index {bad} on a tensor of {n} elements")
    if a.ndim == 0:  # a 0-dim index gives a 0-dim result
        return dispatch(index_op, (input.reshape(-1),), {"spec": (a.reshape(1),)}).reshape(())
    return dispatch(index_op, (input.reshape(-1),), {"spec": (index._data,)})


def _nonzero_impl(xp, a):
    return xp.argwhere(a).astype(np.int64)


nonzero_op = defop("nonzero", _nonzero_impl, differentiable=False, family=IDX)


def nonzero(input, *, as_tuple=False):
    r = dispatch(nonzero_op, (input,))
    if as_tuple:
        if input.dim() == 0:  # a 0-dim input is a 1-element vector here: (tensor([0]),) when nonzero
            return (dispatch(nonzero_op, (input.reshape(1),)).reshape(-1),)
        return tuple(r[:, i] for i in range(input.dim()))
    return r


argwhere_op = defop("argwhere", _nonzero_impl, differentiable=False, family=IDX)


def argwhere(input):
    # nonzero(input) outside vmap; under vmap each batch row's result is computed and the rows stacked
    # when their counts agree, as torch.func.vmap does (nonzero itself refuses there, in both libraries)
    return dispatch(argwhere_op, (input,))


# ----------------------------------------------------------------------------- sort & co


def _sort_impl(xp, a, dim, descending=False, stable=False):
    if a.dtype.kind == "c":
        raise RuntimeError(f" Sort does not support complex dtypes on CPU ({a.dtype})")
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    key = a.astype(np.float32) if a.dtype == U.BF16 else a  # (ml_dtypes' bfloat16 sorts NaN in place)
    if descending:
        n = a.shape[dim]
        fl = xp.flip(key, dim)
        idx = xp.flip(xp.argsort(fl, axis=dim, kind="stable"), dim)
        idx = (n - 1) - idx
    else:
        idx = xp.argsort(key, axis=dim, kind="stable")
    return xp.take_along_axis(a, idx, axis=dim), idx.astype(np.int64, copy=False)


sort_op = defop("sort", _sort_impl, nout=2, diff_outputs=(0,), save=("shapes", "out"), family=IDX)


def _scatter_back(ctx, g):
    d = ctx.params["dim"]
    idx = ctx.outs[1]
    from .._creation import zeros
    return zeros(ctx.shapes[0], dtype=g.dtype).scatter(d, idx, g)


sort_op.vjp = lambda ctx, g, gi: _scatter_back(ctx, g)
sort_op.jvp = lambda ctx, t: (t.gather(ctx.params["dim"], ctx.outs[1]), None)


def sort(input, dim=-1, descending=False, stable=False):
    from .reduce import _MinMax
    d = U.wrap_dim(dim, input.dim(), "sort") if input.dim() else 0
    return _MinMax(dispatch(sort_op, (input,), {"dim": d, "descending": descending}))


def argsort(input, dim=-1, descending=False, stable=False):
    return sort(input, dim, descending, stable)[1]


def msort(input):
    return sort(input, 0)[0]


def _topk_impl(xp, a, k, dim, largest=True, sorted=True):
    if a.dtype.kind == "c":
        raise RuntimeError(f" topk does not support complex dtypes on CPU ({a.dtype})")
    n = a.shape[dim] if a.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk: selected index k={k} out of range for dimension {dim} of size {n}")
    if a.ndim == 0:  # k is 0 or 1: the value itself either way, as PyTorch
        return a.copy(), xp.zeros((), np.int64)
    v, i = _sort_impl(xp, a, dim, descending=largest)
    sl = (slice(None),) * dim + (slice(0, k),)
    return xp.ascontiguousarray(v[sl]), xp.ascontiguousarray(i[sl])  # fresh, contiguous (as PyTorch's)


topk_op = defop("topk", _topk_impl, nout=2, diff_outputs=(0,), save=("shapes", "out"), family=IDX)
topk_op.vjp = lambda ctx, g, gi: _scatter_back(ctx, g)
topk_op.jvp = sort_op.jvp


def topk(input, k, dim=-1, largest=True, sorted=True):
    from .reduce import _MinMax
    d = U.wrap_dim(dim, input.dim(), "topk") if input.dim() else 0
    return _MinMax(dispatch(topk_op, (input,), {"k": k, "dim": d, "largest": largest}))


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    return U.write_out(_kthvalue(input, k, dim, keepdim), out, "kthvalue", (input,), exact=True)


def _kthvalue(input, k, dim=-1, keepdim=False):
    from .reduce import _MinMax
    if input.is_complex():
        U.no_complex("kthvalue_cpu", input)
    d = U.wrap_dim(dim, input.dim(), "kthvalue")
    n = input.shape[d] if input.dim() else 1
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size (input shape "
                         f"{list(input.shape)})")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue: selected number k={k} out of range for dimension {d} of size {n}")
    if input.dim() == 0:  # the value itself, index 0
        return _MinMax((input.clone(), D._new_tensor(np.zeros((), np.int64))))
    v, i = sort(input, dim)
    v, i = v.select(d, k - 1).contiguous(), i.select(d, k - 1).contiguous()
    if keepdim:
        v, i = v.unsqueeze(d), i.unsqueeze(d)
    return _MinMax((v, i))


def median(input, dim=None, keepdim=False):
    from .reduce import _MinMax
    if input.is_complex():  # (PyTorch's kernel names)
        U.no_complex("median_cpu" if dim is None else "median_out", input)
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:  # PyTorch: nan
            return D._new_tensor(np.array(np.nan, dtype=input._data.dtype))
        return sort(flat)[0][(flat.numel() - 1) // 2]
    d = U.wrap_dim(dim, input.dim(), "median")
    if input.dim() and input.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size (input shape "
                         f"{list(input.shape)})")
    return kthvalue(input, ((input.shape[d] if input.dim() else 1) + 1) // 2, d, keepdim)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    U.check_plain("unique", input)
    a = input._data
    if a.dtype.kind == "c":
        U.no_complex("unique", a)
    res = np.unique(a, return_inverse=return_inverse, return_counts=return_counts, axis=dim)
    if not isinstance(res, tuple):
        return D._new_tensor(res)
    out = [D._new_tensor(np.asarray(res[0]))]
    k = 1
    if return_inverse:
        out.append(D._new_tensor(res[k].reshape(a.shape if dim is None else -1).astype(np.int64)))
        k += 1
    if return_counts:
        out.append(D._new_tensor(res[k].astype(np.int64)))
    return tuple(out)


def _bincount_impl(xp, a, w=None, minlength=0):
    r = xp.bincount(a, w, minlength)
    if w is not None and w.dtype == np.float32:  # PyTorch: float32 weights give float32 counts, others float64
        r = r.astype(np.float32)
    return r


bincount_op = defop("bincount", _bincount_impl, differentiable=False, family=IDX)


def bincount(input, weights=None, minlength=0):
    raw = U.raw_values(input)   # (under vmap: every batch row, for the checks only)
    if input.dim() != 1 or raw.dtype.kind not in "iu":
        raise RuntimeError(f"bincount: only 1-d non-negative integral inputs are supported, got shape "
                           f"{list(input.shape)} and dtype {input.dtype}")
    if raw.size and raw.min() < 0:
        raise RuntimeError(f"bincount: input must be non-negative, got {int(raw.min())}")
    if weights is not None and tuple(weights.shape) != tuple(input.shape):
        raise RuntimeError(f"bincount: weights should be 1-d and have the same length as input (input of "
                           f"shape {list(input.shape)}, weights of shape {list(weights.shape)})")
    args = (input,) if weights is None else (input, weights)
    return dispatch(bincount_op, args, {"minlength": minlength})


def _searchsorted_impl(xp, s, v=None, side="left", out_int32=False, scalar=None):
    """Binary search of ``v`` (or the Python number ``scalar``) in the last dim of ``s``: one sorted
    sequence (``s`` 1-D) or one per leading index (``s`` N-D, its leading dims those of ``v``)."""
    dt = np.int32 if out_int32 else np.int64
    if s.ndim <= 1:
        return np.asarray(np.searchsorted(s.reshape(-1), scalar if v is None else v, side=side), dtype=dt)
    shape = s.shape[:-1] if v is None else v.shape
    res = [np.searchsorted(s[i], scalar if v is None else v[i], side=side) for i in np.ndindex(s.shape[:-1])]
    return np.stack(res).reshape(shape).astype(dt) if res else np.zeros(shape, dt)


searchsorted_op = defop("searchsorted", _searchsorted_impl, differentiable=False, family=IDX)


def searchsorted_rule(op, vals, bd, params, size):
    """Each batch row searches its own sequence: the batch becomes a leading dim of the sequence (a
    logical 1-D sequence turns into one sequence per row, its values flattened per row)."""
    from ._batching import _materialize, _prod
    s = vals[0] if bd[0] else _materialize(vals[0], size)
    if len(vals) == 1:       # a Python number searched in every row's sequence
        return dispatch(op, (s,), params), True
    v = vals[1] if bd[1] else _materialize(vals[1], size)
    if s.dim() == 2:
        shape = tuple(v.shape)
        return dispatch(op, (s, v.reshape(size, _prod(shape[1:]))), params).reshape(shape), True
    return dispatch(op, (s, v), params), True


searchsorted_op.batch = searchsorted_rule


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    if side is not None and side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if side == "left" and right:
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                           "while right was True")
    side = side or ("right" if right else "left")
    seq = sorted_sequence
    for t in (seq, values):
        if U.is_tensor(t) and t.is_complex():  # (no order on complex numbers, as PyTorch's CPU kernel)
            raise NotImplementedError(f"\"searchsorted_out_cpu\" not implemented for '{t.dtype}' (searchsorted of "
                                      f"a {seq.dtype} sequence of shape {list(seq.shape)})")
    vshape = tuple(values.shape) if U.is_tensor(values) else ()
    if sorter is not None:
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq.shape)} and sorter tensor {list(sorter.shape)}")
        seq = seq.gather(-1, sorter)
    if seq.dim() > 1 and tuple(seq.shape[:-1]) != vshape[:-1]:
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(vshape)}")
    p = {"side": side, "out_int32": out_int32}
    if U.is_tensor(values):
        r = dispatch(searchsorted_op, (seq, values), p)
    else:
        r = dispatch(searchsorted_op, (seq,), dict(p, scalar=values))
    return U.write_out(r, out)


def _isin_impl(xp, a, b, invert=False):
    return xp.isin(a, b, invert=invert)


isin_op = defop("isin", _isin_impl, differentiable=False, family=IDX)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` is in ``test_elements`` (either may be a number)."""
    for v in (elements, test_elements):
        if U.is_tensor(v) and v.is_complex() or isinstance(v, complex):
            a = v._data if U.is_tensor(v) else np.asarray(v)
            raise RuntimeError(f"Unsupported input type encountered for isin(): {U.torch_scalar_name(a)}")
    if not U.is_tensor(elements):  # a number: the result is 0-dim
        elements = D._new_tensor(np.asarray(elements))
    return dispatch(isin_op, (elements, test_elements), {"invert": invert})


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    if boundaries.dim() != 1:
        raise RuntimeError(f"bucketize: boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


from .elementwise import where  # noqa: E402


# ----------------------------------------------------------------------------- batching rules (vmap)

from ._batching import (_pad_to, _materialize, _ln, _loop_note, dim_shift_rule, gather_like_rule,  # noqa: E402
                        elementwise_rule, fallback_rule)


def _flat_batch_index(a, idx, dim, size):
    """(a viewed as (B*n, rest...) with dim moved first, idx shifted per sample and flattened)."""
    from .._creation import arange
    am = a.movedim(dim + 1, 1)
    n = am.shape[1]
    rest = tuple(am.shape[2:])
    offs = (arange(size, dtype=idx.dtype) * n).reshape((size,) + (1,) * (idx.dim() - 1))
    return am.reshape((size * n,) + rest), (idx + offs).reshape(-1), n, rest


def index_select_rule(op, vals, bd, params, size):
    a, idx = vals
    ba, bi = bd
    n = _ln(a, ba)
    dim = params["dim"] % max(n, 1)
    if n == 0:  # a logical 0-dim input (its 1-element index selects it): one value a row
        a2 = (a if ba else _materialize(a, size)).reshape(size, 1)
        if bi:
            return a2.gather(1, idx.reshape(size, 1)).reshape(size), True
        return dispatch(op, (a2, idx), {"dim": 1}).reshape(size), True
    if not bi:
        return dispatch(op, (a, idx), {"dim": dim + 1}), True
    if not ba:
        a = _materialize(a, size)
    flat, gidx, _, rest = _flat_batch_index(a, idx, dim, size)
    r = dispatch(op, (flat, gidx), {"dim": 0})
    k = idx.shape[1] if idx.dim() > 1 else 1
    return r.reshape((size, k) + rest).movedim(1, dim + 1), True


def index_add_rule(op, vals, bd, params, size):
    a, idx, src = vals
    ba, bi, bs = bd
    n = _ln(a, ba)
    dim = params["dim"] % max(n, 1)
    if not ba:
        a = _materialize(a, size)
    if n == 0:  # a logical 0-dim input (a 1-element vector here): its one value a row
        s2 = (src if bs else _materialize(src, size)).reshape(size, -1)
        r, _ = index_add_rule(op, (a.reshape(size, 1), idx.reshape(size, -1) if bi else idx.reshape(-1), s2),
                              (True, bi, True), dict(params, dim=0), size)
        return r.reshape(size), True
    if not bi:
        if not bs:
            src = _materialize(src, size)
        return dispatch(op, (a, idx, src), dict(params, dim=dim + 1)), True
    if not bs:
        src = _materialize(src, size)
    flat, gidx, nn_, rest = _flat_batch_index(a, idx, dim, size)
    sm = src.movedim(dim + 1, 1)
    sm = sm.reshape((-1,) + tuple(sm.shape[2:]))
    r = dispatch(op, (flat, gidx, sm), dict(params, dim=0))
    return r.reshape((size, nn_) + rest).movedim(1, dim + 1), True


def masked_fill_rule(op, vals, bd, params, size):
    vals = list(vals)
    bd = list(bd)
    if not bd[0] and any(bd[1:]):
        n = max(_ln(v, b) for v, b in zip(vals, bd) if isinstance(v, D.Tensor))
        a = vals[0]
        a = a.reshape((1,) * (n - a.dim()) + tuple(a.shape)) if a.dim() < n else a
        vals[0] = _materialize(a, size)
        bd[0] = True
    return elementwise_rule(op, vals, bd, params, size)


def index_rule(op, vals, bd, params, size):
    """x[spec] with x batched: a leading full slice; when the advanced indices are split by a
    slice NumPy puts their dims first, so the batch dim is moved back to the front."""
    if any(bd[1:]):
        return fallback_rule(op, vals, bd, params, size)
    import numpy as np
    spec = params["spec"]
    items = spec if isinstance(spec, tuple) else (spec,)
    adv = [i for i, s in enumerate(items) if isinstance(s, (np.ndarray, list))]
    r = dispatch(op, (vals[0],), dict(params, spec=(slice(None),) + items))
    if adv and adv != list(range(adv[0], adv[0] + len(adv))):
        shapes = [np.shape(items[i]) if getattr(items[i], "dtype", None) != bool else
                  (int(np.count_nonzero(items[i])),) for i in adv]
        nd = len(np.broadcast_shapes(*shapes))
        r = r.movedim(nd, 0)
    return r, True


def _adv_split(items):
    """True when NumPy would move the advanced-index dims to the front after a leading slice (the
    advanced indices are separated by a slice, or a bool mask is involved)."""
    adv = [i for i, s in enumerate(items) if isinstance(s, (np.ndarray, list))]
    if any(getattr(items[i], "dtype", None) == bool for i in adv):
        return True
    return bool(adv) and adv != list(range(adv[0], adv[0] + len(adv)))


def index_put_rule(op, vals, bd, params, size):
    """x[spec] = v on a batch: a leading full slice in spec, v aligned to the indexed region."""
    items = params["spec"] if isinstance(params["spec"], tuple) else (params["spec"],)
    if _adv_split(items):
        return fallback_rule(op, vals, bd, params, size)
    a, v = vals
    a = a if bd[0] else _materialize(a, size)
    if bd[1]:
        region = len(a.shape) - 1 - sum(1 for s in items if s is not None and not isinstance(s, slice)
                                        and not isinstance(s, (np.ndarray, list)) and s is not Ellipsis)
        adv = [s for s in items if isinstance(s, (np.ndarray, list))]
        if adv:  # the advanced indices' dims replace theirs
            region += len(np.broadcast_shapes(*[np.shape(s) for s in adv])) - len(adv)
        v = _pad_to(v, region)
    return dispatch(op, (a, v), dict(params, spec=(slice(None),) + items)), True


def index_backward_rule(op, vals, bd, params, size):
    items = params["spec"] if isinstance(params["spec"], tuple) else (params["spec"],)
    if _adv_split(items):
        return fallback_rule(op, vals, bd, params, size)
    return dispatch(op, (vals[0],), dict(params, shape=(size,) + tuple(params["shape"]),
                                         spec=(slice(None),) + items)), True


def batched_index(x, idx, value=None, setitem=False):
    """x[idx] (or x[idx] = value) when an index tensor is batched by vmap. A single integer index
    tensor becomes index_select (which has a batching rule); anything else loops over the batch."""
    items = idx if isinstance(idx, tuple) else (idx,)
    lvl = None
    for it in items:
        w = it._wr if isinstance(it, D.Tensor) else None
        if w is not None and (lvl is None or w.index > lvl.index):
            lvl = w
    if getattr(lvl, "kind", None) != "vmap":
        items = tuple(D.unwrap_at(it, lvl) for it in items)
        if setitem:
            x[items] = value
            return None
        return x[items]
    if all(isinstance(it, D.Tensor) and it.dtype.category == 1 for it in items):  # integer tensors
        # integer index tensors on the leading dims: one advanced index with a batch arange in front
        from .._creation import arange
        size = lvl.size
        n = max(it.dim() for it in items)
        ar = arange(size).reshape((size,) + (1,) * n)
        phys = tuple(it._val if it._wr is lvl else it for it in items)
        xb = isinstance(x, D.Tensor) and x._wr is lvl
        if not setitem:
            xv = x._val if xb else _materialize(x, size)
            return lvl.wrap(xv[(ar,) + phys])
        if not xb:
            raise RuntimeError("vmap: in-place indexing (x[idx] = v) with a batched index needs x to be "
                               "batched too; use the out-of-place index_put")
        if isinstance(value, D.Tensor) and value._wr is lvl:
            value = _pad_to(value._val, n + x.dim() - len(items))
        x._val[(ar,) + phys] = value
        x._bump("index_put_")
        return None
    _loop_note("indexing with batched index tensors")
    from .shape import stack
    size = lvl.size
    xb = x._wr is lvl
    if setitem and not xb:
        raise RuntimeError("vmap: in-place indexing (x[idx] = v) with a batched index needs x to be batched "
                           "too; use the out-of-place index_put")
    xv = x._val if xb else x
    vb = isinstance(value, D.Tensor) and value._wr is lvl
    outs = []
    for b in range(size):
        xi = xv.select(0, b) if xb else x
        ii = tuple(it._val.select(0, b) if isinstance(it, D.Tensor) and it._wr is lvl else it for it in items)
        if setitem:
            xi[ii] = value._val.select(0, b) if vb else value
        else:
            outs.append(xi[ii])
    if setitem:
        x._bump("index_put_")
        return None
    shapes = {tuple(o.shape) for o in outs}
    if len(shapes) > 1:
        raise RuntimeError(f"vmap: indexing with a batched boolean mask gives results of different shapes "
                           f"{sorted(shapes)} across the batch (data-dependent shape); use ember.where or "
                           f"masked_fill instead")
    return lvl.wrap(stack(outs))


def _isin_rule(op, vals, bd, params, size):
    """A shared test set: isin over the whole batch at once. A batched one: each row's elements are
    looked up in that row's sorted test elements (sort, searchsorted, gather: batched ops)."""
    a, b = vals
    ba, bb = bd
    if not bb:
        return dispatch(op, (a, b), params), True
    a = a if ba else _materialize(a, size)
    rows_a, rows_b = a.reshape(size, -1), b.reshape(size, -1)
    m = rows_b.shape[1]
    if m == 0 or rows_a.shape[1] == 0:
        from .._creation import zeros
        hit = zeros(tuple(rows_a.shape), dtype=U.dt.bool_)
    else:
        ct = U.dt.promote_types(rows_a.dtype, rows_b.dtype)
        if ct is U.dt.bool_:
            ct = U.dt.uint8
        rows_a, rows_b = rows_a.to(ct), rows_b.to(ct)
        srt = rows_b.sort(1)[0]
        pos = searchsorted(srt, rows_a).clamp(max=m - 1)
        hit = srt.gather(1, pos) == rows_a
    if params.get("invert"):
        hit = ~hit
    return hit.reshape(a.shape), True


def _bincount_rule(op, vals, bd, params, size):
    """Each row counted into its own block of bins (row b's values shifted by b * n): one bincount.
    Every row must have the same number of bins n (PyTorch's vmap stacks the rows' results)."""
    a = vals[0] if bd[0] else _materialize(vals[0], size)
    raw = U.raw_values(a)
    m = params.get("minlength", 0)
    lens = {max(m, int(r.max()) + 1) for r in raw.reshape(-1, a.shape[-1])} if a.shape[-1] else {m}
    if len(lens) > 1:
        raise RuntimeError(f"vmap: bincount gives results of different lengths {sorted(lens)} across the batch "
                           f"(a data-dependent shape: the largest value differs between the rows)")
    n = lens.pop()
    from .._creation import arange
    flat = (a + (arange(size, dtype=a.dtype) * n).reshape(size, 1)).reshape(-1)
    args = (flat,)
    if len(vals) > 1:
        args += ((vals[1] if bd[1] else _materialize(vals[1], size)).reshape(-1),)
    return dispatch(op, args, dict(params, minlength=size * n)).reshape(size, n), True


def _argwhere_rule(op, vals, bd, params, size):
    """Every batch row's nonzero indices, stacked: the rows must have the same count (a batch of
    results with different shapes cannot be stacked; torch.func.vmap refuses those too)."""
    a = vals[0]
    raw = U.raw_values(a)
    per_row = a.numel() // size if size else 0
    counts = {int(c) for c in np.count_nonzero(raw.reshape(-1, per_row), axis=1)} if per_row else {0}
    if len(counts) > 1:
        raise RuntimeError(f"vmap: argwhere gives results of different shapes across the batch (a data-dependent "
                           f"shape: the rows have {sorted(counts)} nonzero elements); use a masked computation instead")
    k = counts.pop()
    r = dispatch(op, (a,), params)   # (row, logical indices...) in row-major order: k entries a row
    return r[:, 1:].reshape(size, k, a.dim() - 1), True


def nonzero_rule(op, vals, bd, params, size):
    raise RuntimeError(f"vmap: {op.name} has an output whose shape depends on the data, so it cannot be "
                       f"batched (use a masked computation instead)")


index_op.batch = index_rule
index_put_op.batch = index_put_rule
index_backward_op.batch = index_backward_rule
index_select_op.batch = index_select_rule
index_add_op.batch = index_add_rule
masked_fill_op.batch = masked_fill_rule
nonzero_op.batch = nonzero_rule
isin_op.batch = _isin_rule
argwhere_op.batch = _argwhere_rule
bincount_op.batch = _bincount_rule
for _op in (gather_op, scatter_op, scatter_add_op, sort_op, topk_op):
    _op.batch = gather_like_rule
