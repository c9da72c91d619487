"""Views (sharing memory with their input) and joins/copies: view/reshape, permute, expand,
squeeze/unsqueeze, select, slice, diagonal, as_strided, cat/stack, repeat, flip, roll,
tril/triu, clone, dtype casts."""
import numpy as np

from .. import _dispatch as D
from .. import _dtype as dt
from .._dispatch import defop, dispatch
from . import _util as U

VIEW = "view"


def _infer_shape(shape, numel, op="view"):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred (shape {list(shape)})")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"{op}: invalid shape dimension {s} in {list(shape)}")
    if neg:
        rest = 1
        for i, s in enumerate(shape):
            if i != neg[0]:
                rest *= s
        if rest == 0 or numel % rest:
            raise RuntimeError(f"{op}: shape '{U.fmt_shape([s for s in shape])}' is invalid for input of "
                               f"size {numel}")
        shape[neg[0]] = numel // rest
    n = 1
    for s in shape:
        n *= s
    if n != numel:
        raise RuntimeError(f"{op}: shape '{U.fmt_shape(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _view_impl(xp, a, shape):
    try:
        return a.reshape(shape, copy=False)
    except ValueError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least "
                           "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                           "instead.") from None


view_op = defop("view", _view_impl, view=True, save=("shapes",), family=VIEW)
view_op.vjp = lambda ctx, g: g.reshape(ctx.shapes[0])
view_op.jvp = lambda ctx, t: t.reshape(ctx.params["shape"])

reshape_copy_op = defop("_unsafe_view", lambda xp, a, shape: xp.reshape(a, shape), save=("shapes",),
                        family=VIEW, node_name="UnsafeViewBackward0")
reshape_copy_op.vjp = view_op.vjp
reshape_copy_op.jvp = view_op.jvp


def view(input, *shape, size=None, dtype=None):
    if dtype is not None and not shape and size is None:
        return view_dtype(input, dtype)
    if len(shape) == 1 and isinstance(shape[0], dt.dtype):
        return view_dtype(input, shape[0])
    shape = _infer_shape(U.shape_tuple(shape, "view", kw=size), input.numel())
    return dispatch(view_op, (input,), {"shape": shape})


def view_dtype(input, dtype):
    U.check_plain("view(dtype)", input)
    a = input._data.view(dtype.np)
    return D._new_tensor(a)


def reshape(input, *sizes, shape=None):
    shape = _infer_shape(U.shape_tuple(sizes, "reshape", kw=shape), input.numel(), "reshape")
    a = input._data
    try:
        a.reshape(shape, copy=False)
        return dispatch(view_op, (input,), {"shape": shape})
    except (ValueError, AttributeError):
        return dispatch(reshape_copy_op, (input,), {"shape": shape})


def _permute_impl(xp, a, dims):
    return xp.transpose(a, dims)


permute_op = defop("permute", _permute_impl, view=True, family=VIEW)
permute_op.vjp = lambda ctx, g: g.permute(tuple(np.argsort(ctx.params["dims"])))
permute_op.jvp = lambda ctx, t: t.permute(ctx.params["dims"])
# transpose and t are PyTorch ops of their own (TransposeBackward0, TBackward0): thin registry ops
# with permute's rules, so that graphs and profiler tables name them as PyTorch does
transpose_op = defop("transpose", _permute_impl, view=True, family=VIEW)
t_op = defop("t", _permute_impl, view=True, family=VIEW)
for _op in (transpose_op, t_op):
    _op.vjp, _op.jvp = permute_op.vjp, permute_op.jvp


def permute(input, *args, dims=None):
    dims = U.shape_tuple(args, "permute", kw=dims)
    n = input.dim()
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                           f"match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {n} is not equal to len(dims) = {len(dims)}")
    dims = tuple(U.wrap_dim(d, n, "permute") for d in dims)
    if len(set(dims)) != n:
        raise RuntimeError(f"permute(): duplicate dims are not allowed (dims {list(dims)} repeat a dim).")
    return dispatch(permute_op, (input,), {"dims": dims})


def transpose(input, dim0, dim1):
    n = input.dim()
    if n == 0:
        return dispatch(transpose_op, (input,), {"dims": ()})
    d0, d1 = U.wrap_dim(dim0, n, "transpose"), U.wrap_dim(dim1, n, "transpose")
    dims = list(range(n))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return dispatch(transpose_op, (input,), {"dims": tuple(dims)})


swapaxes = swapdims = transpose


def t(input):
    n = input.dim()
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return dispatch(t_op, (input,), {"dims": (1, 0) if n == 2 else tuple(range(n))})


def movedim(input, source, destination):
    n = input.dim()
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should "
                           f"contain the same number of dims as destination ({dst} dims)")
    src = [U.wrap_dim(d, n, "movedim") for d in src]
    dst = [U.wrap_dim(d, n, "movedim") for d in dst]
    for what, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{what}` ({ds})")
    order = [d for d in range(n) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, *order)


moveaxis = movedim


def _expand_impl(xp, a, shape):
    if a.size == int(np.prod(shape)) and a.shape == tuple(shape)[len(shape) - a.ndim:]:
        return a.reshape(shape)  # nothing repeated (same shape, new size-1 dims): a writable view, as PyTorch's
    return xp.broadcast_to(a, shape)


expand_op = defop("expand", _expand_impl, view=True, save=("shapes",), family=VIEW)
expand_op.vjp = lambda ctx, g: sum_to(g, ctx.shapes[0])
expand_op.jvp = lambda ctx, t: t.expand(ctx.params["shape"])


def expand(input, *sizes, size=None):
    sizes = U.shape_tuple(sizes, "expand", kw=size)
    if any(s < -1 for s in sizes):
        raise RuntimeError(f"expand: invalid size {min(sizes)} in {list(sizes)} (sizes must be non-negative, "
                           f"or -1 to keep a dimension)")
    shp = input.shape
    n = len(sizes)
    if n < len(shp):
        raise RuntimeError(f"expand({input.dtype.name.capitalize()}Tensor{{{list(shp)}}}, size={list(sizes)}): "
                           f"the number of sizes provided ({n}) must be greater or equal to the number "
                           f"of dimensions in the tensor ({len(shp)})")
    out = []
    off = n - len(shp)
    for i, s in enumerate(sizes):
        if i < off:
            if s < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension {i}")
            out.append(s)
        else:
            cur = shp[i - off]
            if s == -1:
                out.append(cur)
            elif cur == s or cur == 1:
                out.append(s)
            else:
                raise RuntimeError(f"expand: The expanded size of the tensor ({s}) must match the existing size "
                                   f"({cur}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                                   f"Tensor sizes: {list(shp)}")
    return dispatch(expand_op, (input,), {"shape": tuple(out)})


def broadcast_to(input, size):
    return expand(input, size)


def broadcast_shapes(*shapes):
    from .._tensor import Size
    try:
        return Size(np.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {shapes}") from None


def broadcast_tensors(*tensors):
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)


def sum_to(g, shape):
    """Sum g down to ``shape`` (undo broadcasting): the gradient rule of every broadcast."""
    shape = tuple(shape)
    gs = g.shape
    if tuple(gs) == shape:
        return g
    lead = len(gs) - len(shape)
    if lead < 0:  # a node called by hand with a smaller gradient: nothing to reduce (as PyTorch)
        return g
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gs[i + lead] != 1)
    from .reduce import sum as _sum
    r = _sum(g, dims, keepdim=True) if dims else g
    if lead:
        r = r.reshape(shape)
    return r


def sum_to_size(input, *size):
    size = U.shape_tuple(size, "sum_to_size")
    try:
        np.broadcast_shapes(size, tuple(input.shape))
        ok = len(size) <= input.dim()
    except ValueError:
        ok = False
    if not ok or np.broadcast_shapes(size, tuple(input.shape)) != tuple(input.shape):
        raise RuntimeError(f"sum_to_size: size {list(size)} is not expandable to size {list(input.shape)}")
    return sum_to(input, size)


def _squeeze_impl(xp, a, dims):
    return xp.squeeze(a, axis=dims)


squeeze_op = defop("squeeze", _squeeze_impl, view=True, save=("shapes",), family=VIEW)
squeeze_op.vjp = lambda ctx, g: g.reshape(ctx.shapes[0])
squeeze_op.jvp = lambda ctx, t: dispatch(squeeze_op, (t,), ctx.params)
# squeeze(dim) and squeeze(dims) are PyTorch overloads with nodes of their own (SqueezeBackward1/2):
# thin registry ops with squeeze's rules
squeeze_dim_op = defop("squeeze_dim", _squeeze_impl, view=True, save=("shapes",), family=VIEW,
                       node_name="SqueezeBackward1")
squeeze_dims_op = defop("squeeze_dims", _squeeze_impl, view=True, save=("shapes",), family=VIEW,
                        node_name="SqueezeBackward2")
squeeze_dim_op.vjp = squeeze_dims_op.vjp = squeeze_op.vjp
squeeze_dim_op.jvp = lambda ctx, t: dispatch(squeeze_dim_op, (t,), ctx.params)
squeeze_dims_op.jvp = lambda ctx, t: dispatch(squeeze_dims_op, (t,), ctx.params)


def squeeze(input, dim=None):
    shp = input.shape
    n = len(shp)
    if dim is None:
        return dispatch(squeeze_op, (input,), {"dims": tuple(i for i, s in enumerate(shp) if s == 1)})
    dims = tuple(d for d in U.wrap_dims(dim, n, "squeeze") if n and shp[d] == 1)
    return dispatch(squeeze_dims_op if isinstance(dim, (tuple, list)) else squeeze_dim_op, (input,),
                    {"dims": dims})


def _unsqueeze_impl(xp, a, dim):
    return xp.expand_dims(a, dim)


unsqueeze_op = defop("unsqueeze", _unsqueeze_impl, view=True, family=VIEW)
unsqueeze_op.vjp = lambda ctx, g: g.squeeze(ctx.params["dim"])
unsqueeze_op.jvp = lambda ctx, t: t.unsqueeze(ctx.params["dim"])


def unsqueeze(input, dim):
    return dispatch(unsqueeze_op, (input,), {"dim": U.wrap_dim(dim, input.dim() + 1, "unsqueeze")})


def ravel(input):
    return reshape(input, -1)


def flatten(input, start_dim=0, end_dim=-1):
    n = input.dim()
    if n == 0:
        return reshape(input, 1)
    s = U.wrap_dim(start_dim, n, "flatten")
    e = U.wrap_dim(end_dim, n, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input.shape
    m = 1
    for d in range(s, e + 1):
        m *= shp[d]
    return reshape(input, tuple(shp[:s]) + (m,) + tuple(shp[e + 1:]))


def unflatten(input, dim, sizes):
    n = input.dim()
    d = U.wrap_dim(dim, n, "unflatten")
    shp = input.shape
    sizes = list(sizes)
    if -1 in sizes:
        known = 1
        for s in sizes:
            if s != -1:
                known *= s
        sizes[sizes.index(-1)] = shp[d] // known
    p = 1
    for s in sizes:
        p *= s
    if p != shp[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of "
                           f"dim {dim} ({shp[d]}) in the input tensor")
    return reshape(input, tuple(shp[:d]) + tuple(sizes) + tuple(shp[d + 1:]))


def _zeros_arr(xp, shape, dtype, like=None):
    return xp.zeros(shape, dtype)


def _select_impl(xp, a, dim, index):
    return a[(slice(None),) * dim + (index, Ellipsis)]  # the Ellipsis keeps a 0-d result a view


select_op = defop("select", _select_impl, view=True, save=("shapes",), family=VIEW)


def _select_backward_impl(xp, g, shape, dim, index):
    z = xp.zeros(shape, g.dtype)
    z[(slice(None),) * dim + (index,)] = g
    return z


select_backward_op = defop("select_backward", _select_backward_impl, family=VIEW)
select_op.vjp = lambda ctx, g: dispatch(select_backward_op, (g,), dict(shape=ctx.shapes[0], **ctx.params))
select_op.jvp = lambda ctx, t: dispatch(select_op, (t,), ctx.params)
select_backward_op.vjp = lambda ctx, g: dispatch(select_op, (g,), {"dim": ctx.params["dim"],
                                                                 "index": ctx.params["index"]})
select_backward_op.jvp = lambda ctx, t: dispatch(select_backward_op, (t,), ctx.params)


def select(input, dim, index):
    n = input.dim()
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = U.wrap_dim(dim, n, "select")
    size = input.shape[d]
    index = index.__index__()
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} "
                         f"at dimension {d}")
    if index < 0:
        index += size
    return dispatch(select_op, (input,), {"dim": d, "index": index})


def _slice_impl(xp, a, dim, start, stop, step):
    return a[(slice(None),) * dim + (slice(start, stop, step),)]


slice_op = defop("slice", _slice_impl, view=True, save=("shapes",), family=VIEW)


def _slice_backward_impl(xp, g, shape, dim, start, stop, step):
    z = xp.zeros(shape, g.dtype)
    z[(slice(None),) * dim + (slice(start, stop, step),)] = g
    return z


slice_backward_op = defop("slice_backward", _slice_backward_impl, family=VIEW)
slice_op.vjp = lambda ctx, g: dispatch(slice_backward_op, (g,), dict(shape=ctx.shapes[0], **ctx.params))
slice_op.jvp = lambda ctx, t: dispatch(slice_op, (t,), ctx.params)
slice_backward_op.vjp = lambda ctx, g: dispatch(
    slice_op, (g,), {k: ctx.params[k] for k in ("dim", "start", "stop", "step")})
slice_backward_op.jvp = lambda ctx, t: dispatch(slice_backward_op, (t,), ctx.params)


def slice_dim(input, dim, start, stop, step=1):
    """input[..., start:stop:step, ...] along dim (normalised to non-negative bounds)."""
    if step <= 0:
        raise ValueError("step must be greater than zero")
    d = U.wrap_dim(dim, input.dim(), "slice")
    size = input.shape[d]
    start, stop, step = slice(start, stop, step).indices(size)
    if start == 0 and stop >= size and step == 1:
        return dispatch(view_op, (input,), {"shape": tuple(input.shape)})
    return dispatch(slice_op, (input,), {"dim": d, "start": start, "stop": max(stop, start), "step": step})


def narrow(input, dim, start, length):
    if input.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if U.is_tensor(start) and (start.dim() != 0 or start.dtype.category != 1):   # (1: integer)
        raise RuntimeError(f"narrow(): start must be an 0-dim integral Tensor, got a {start.dtype.name} tensor of "
                           f"shape {list(start.shape)}.")
    d = U.wrap_dim(dim, input.dim(), "narrow")
    size = input.shape[d]
    start = start.__index__()
    if start < 0:
        start += size
    if start < 0 or start > size:
        raise IndexError(f"narrow: start ({start}) out of range for dimension {d} of size {size}")
    if start + length > size or length < 0:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_dim(input, d, start, start + length, 1)


def unbind(input, dim=0):
    d = U.wrap_dim(dim, input.dim(), "unbind")
    return tuple(select(input, d, i) for i in range(input.shape[d]))


def split(tensor, split_size_or_sections=None, dim=0, *, split_size=None):
    if split_size is not None:  # Tensor.split's name for it
        split_size_or_sections = split_size
    d = U.wrap_dim(dim, tensor.dim(), "split")
    size = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and size:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                               f"size of {size}")
        sizes = [min(step, size - i) for i in range(0, size, step)] if step and size else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != size:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input "
                               f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    out = []
    o = 0
    for s in sizes:
        out.append(narrow(tensor, d, o, s))
        o += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = U.wrap_dim(dim, input.dim(), "chunk")
    size = input.shape[d]
    if size == 0:  # PyTorch: `chunks` empty pieces
        return tuple(narrow(input, d, 0, 0) for _ in range(chunks))
    step = -(-size // chunks)
    return split(input, step, d)


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None, tensor_indices_or_sections=None):
    if tensor_indices_or_sections is not None:
        indices_or_sections = tensor_indices_or_sections
    if sections is not None or indices is not None:
        indices_or_sections = sections if sections is not None else list(indices)
    if U.is_tensor(indices_or_sections):  # a 0-dim tensor of sections or a 1-D tensor of indices
        t = indices_or_sections
        if t.dtype.is_floating_point or t.dim() > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor of integers, but got a {t.dim()}-D {t.dtype} tensor")
        indices_or_sections = int(t.item()) if t.dim() == 0 else [int(v) for v in t.tolist()]
    d = U.wrap_dim(dim, input.dim(), "tensor_split")
    size = input.shape[d]
    if U.is_tensor(indices_or_sections):  # a 0-dim tensor is a count of sections, a 1-D one indices
        if indices_or_sections.dtype.is_floating_point or indices_or_sections.dim() > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor of integers, but got a tensor with "
                               f"{indices_or_sections.dim()} dims of {indices_or_sections.dtype}")
        v = indices_or_sections.tolist()
        indices_or_sections = v if isinstance(v, list) else int(v)
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        q, r = divmod(size, n)
        sizes = [q + 1] * r + [q] * (n - r)
    else:
        idx = [0] + list(indices_or_sections) + [size]
        sizes = [max(0, min(b, size) - min(a, size)) for a, b in zip(idx[:-1], idx[1:])]
    return split(input, sizes, d)


def _diag_impl(xp, a, offset, dim1, dim2):
    v = xp.diagonal(a, offset, dim1, dim2)
    if not v.flags.writeable and a.flags.writeable:
        v.flags.writeable = True  # NumPy hands out a read-only view; PyTorch's is writable (x.diagonal().add_(eps))
    return v


diagonal_op = defop("diagonal", _diag_impl, view=True, save=("shapes",), family=VIEW)


def _diag_backward_impl(xp, g, shape, offset, dim1, dim2):
    z = xp.zeros(shape, g.dtype)
    v = xp.diagonal(z, offset, dim1, dim2)
    v.flags.writeable = True
    v[...] = g
    return z


diagonal_backward_op = defop("diagonal_backward", _diag_backward_impl, family=VIEW)
diagonal_op.vjp = lambda ctx, g: dispatch(diagonal_backward_op, (g,), dict(shape=ctx.shapes[0], **ctx.params))
diagonal_op.jvp = lambda ctx, t: dispatch(diagonal_op, (t,), ctx.params)
diagonal_backward_op.vjp = lambda ctx, g: dispatch(
    diagonal_op, (g,), {k: ctx.params[k] for k in ("offset", "dim1", "dim2")})
diagonal_backward_op.jvp = lambda ctx, t: dispatch(diagonal_backward_op, (t,), ctx.params)


def diagonal(input, offset=0, dim1=0, dim2=1):
    n = input.dim()
    d1, d2 = U.wrap_dim(dim1, n, "diagonal"), U.wrap_dim(dim2, n, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return dispatch(diagonal_op, (input,), {"offset": offset, "dim1": d1, "dim2": d2})


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _as_strided_impl(xp, a, size, stride, offset, in_stride=None):
    isz = a.itemsize
    root = _root(a)
    start = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: negative sizes or strides are not supported (size {list(size)}, "
                           f"stride {list(stride)})")
    if all(s > 0 for s in size):  # the last element addressed must lie inside the storage
        need = start + (offset + sum((n - 1) * st for n, st in zip(size, stride)) + 1) * isz
        if start + offset * isz < 0 or need > root.nbytes:
            raise RuntimeError(f"as_strided: sizes {list(size)}, strides {list(stride)}, storage offset "
                               f"{start // isz + offset} and itemsize {isz} require a storage of {need} bytes, "
                               f"out of bounds for a storage of {root.nbytes} bytes")
    return np.ndarray(size, a.dtype, buffer=root, offset=start + offset * isz,
                      strides=tuple(s * isz for s in stride))


as_strided_op = defop("as_strided", _as_strided_impl, view=True, save=("shapes",), family=VIEW)


def _as_strided_scatter_impl(xp, base, src, size, stride, offset):
    # the geometry addresses a contiguous layout of base: a non-contiguous base (a transposed
    # incoming gradient in CopySlices' backward) is laid out contiguously first
    out = base.copy(order="C")
    v = _as_strided_impl(xp, out, size, stride, offset)
    v[...] = src
    return out


as_strided_scatter_op = defop("as_strided_scatter", _as_strided_scatter_impl, family=VIEW,
                              node_name="CopySlices")


def _as_strided_index(xp, shape, in_stride, size, stride, offset):
    """For each element of the as_strided view, the flat index of the input element at the same
    storage position (-1 where the view reaches memory outside the input), the input laid out
    with its own strides (``in_stride``; None: contiguous)."""
    n = int(np.prod(shape))
    if in_stride is None:
        return _as_strided_impl(xp, xp.arange(n).reshape(shape), size, stride, offset)
    in_ext = 1 + sum((s - 1) * abs(st) for s, st in zip(shape, in_stride)) if n else 0
    out_ext = offset + 1 + sum((s - 1) * st for s, st in zip(size, stride)) if 0 not in size else 0
    store = xp.full(max(in_ext, out_ext, 1), -1, np.int64)
    isz = store.itemsize
    np.lib.stride_tricks.as_strided(store, shape, tuple(st * isz for st in in_stride))[...] = \
        xp.arange(n).reshape(shape)
    return np.lib.stride_tricks.as_strided(store[offset:], size, tuple(st * isz for st in stride))


def _as_strided_backward_impl(xp, g, shape, size, stride, offset, in_stride=None):
    # overlapping windows accumulate: add through a flat index map of the input's elements
    z = xp.zeros(shape, g.dtype)
    idx = _as_strided_index(xp, shape, in_stride, size, stride, offset).reshape(-1)
    gf = g.reshape(-1)
    if in_stride is not None:
        keep = idx >= 0
        idx, gf = idx[keep], gf[keep]
    xp.add.at(z.reshape(-1), idx, gf)
    return z


as_strided_backward_op = defop("as_strided_backward", _as_strided_backward_impl, family=VIEW)
as_strided_op.vjp = lambda ctx, g: dispatch(as_strided_backward_op, (g,), dict(shape=ctx.shapes[0], **ctx.params))
as_strided_op.jvp = lambda ctx, t: dispatch(as_strided_op, (t,), ctx.params)


@as_strided_backward_op.def_vjp
def _(ctx, g):
    p = ctx.params
    if p.get("in_stride") is None:
        return dispatch(as_strided_op, (g,), {k: p[k] for k in ("size", "stride", "offset")})
    # the input was not contiguous: read g (input-shaped) through the same element map
    from .._creation import tensor
    idx = _as_strided_index(np, tuple(g.shape), p["in_stride"], p["size"], p["stride"], p["offset"])
    keep = tensor(idx >= 0)
    return reshape(g, (-1,))[tensor(np.maximum(idx, 0))] * keep
as_strided_backward_op.jvp = lambda ctx, t: dispatch(as_strided_backward_op, (t,), ctx.params)


@as_strided_scatter_op.def_vjp
def _(ctx, g):
    p = ctx.params
    geo = {"size": p["size"], "stride": p["stride"], "offset": p["offset"]}
    gb = gs = None
    if ctx.needs[0]:
        gb = dispatch(as_strided_scatter_op, (g, g.new_zeros(p["size"])), geo)
    if ctx.needs[1]:
        gs = dispatch(as_strided_op, (g.contiguous(),), geo)
        gs = sum_to(gs, ctx.shapes[1]) if tuple(gs.shape) != tuple(ctx.shapes[1]) else gs
    return gb, gs


as_strided_scatter_op.save = ("shapes",)


@as_strided_scatter_op.def_jvp
def _(ctx, tb, ts):
    p = ctx.params
    base = tb if tb is not None else ctx.out * 0
    src = ts if ts is not None else D._new_tensor(np.zeros(p["size"], base.dtype.np))
    return dispatch(as_strided_scatter_op, (base, src), p)


def as_strided(input, size, stride, storage_offset=None):
    size, stride = tuple(size), tuple(stride)
    off = (input.storage_offset() if storage_offset is None else storage_offset) - input.storage_offset()
    params = {"size": size, "stride": stride, "offset": off}
    if not input.is_contiguous() and input.dim():
        # backward maps gradients through storage positions, so it needs the input's layout
        params["in_stride"] = input.stride()
    return dispatch(as_strided_op, (input,), params)


# ----------------------------------------------------------------------------- joins


def _cat_impl(xp, *arrs, dim):
    arrs = [a for a in arrs if not (a.ndim == 1 and a.shape[0] == 0)] or list(arrs[:1])
    dtype = arrs[0].dtype
    for a in arrs[1:]:
        if a.dtype is not dtype:
            dtype = U.result_dtype(*arrs).np
            break
    ref = arrs[0]
    for i, a in enumerate(arrs):
        if a.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {a.ndim}")
        for d in range(ref.ndim):
            if d != dim and a.shape[d] != ref.shape[d]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. Expected size "
                                   f"{ref.shape[d]} but got size {a.shape[d]} for tensor number {i} in "
                                   f"the list.")
    return xp.concatenate(arrs, axis=dim, dtype=dtype)


cat_op = defop("cat", _cat_impl, save=("shapes",), family="join")


@cat_op.def_vjp
def _(ctx, g):
    d = ctx.params["dim"]
    out = []
    o = 0
    for need, shp in zip(ctx.needs, ctx.shapes):
        if len(shp) == 1 and shp[0] == 0 and g.dim() != 1:  # a legacy 1-d empty input: an empty gradient
            out.append(g.new_zeros((0,)) if need else None)
            continue
        n = shp[d]
        out.append(narrow(g, d, o, n) if need else None)
        o += n
    return tuple(out)


@cat_op.def_jvp
def _(ctx, *ts):
    d = ctx.params["dim"]
    parts = [t if t is not None else D._new_tensor(np.zeros(s, ctx.out.dtype.np))
             for t, s in zip(ts, ctx.shapes)]
    return cat(parts, d)


def cat(tensors, dim=0, *, out=None):
    if U.is_tensor(tensors):
        raise TypeError(f"cat(): argument 'tensors' must be a sequence of Tensors, not a Tensor of shape "
                        f"{list(tensors.shape)}")
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        if not U.is_tensor(x):
            raise TypeError(f"cat(): argument 'tensors' must be a sequence of Tensors, but element {i} is "
                            f"{type(x).__name__}")
    ref = next((x for x in tensors if not (x.dim() == 1 and x.shape[0] == 0)), tensors[0])
    if ref.dim() == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = U.wrap_dim(dim, ref.dim(), "cat")
    return U.write_out(dispatch(cat_op, tuple(tensors), {"dim": d}), out, "cat", tuple(tensors))


concat = concatenate = cat


def _stack_impl(xp, *arrs, dim):
    s = arrs[0].shape
    for i, a in enumerate(arrs):
        if a.shape != s:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s)} at entry 0 "
                               f"and {list(a.shape)} at entry {i}")
    if any(a.dtype is not arrs[0].dtype for a in arrs):
        dtype = U.result_dtype(*arrs).np
        arrs = [a.astype(dtype) for a in arrs]
    return xp.stack(arrs, axis=dim)


stack_op = defop("stack", _stack_impl, family="join")
stack_op.vjp = lambda ctx, g: tuple(select(g, ctx.params["dim"], i) if n else None
                                    for i, n in enumerate(ctx.needs))


@stack_op.def_jvp
def _(ctx, *ts):
    parts = [t if t is not None else ctx.out.select(ctx.params["dim"], 0) * 0 for t in ts]
    return stack(parts, ctx.params["dim"])


def stack(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = U.wrap_dim(dim, tensors[0].dim() + 1, "stack")
    return U.write_out(dispatch(stack_op, tuple(tensors), {"dim": d}), out)


def _nonempty(name, tensors):
    tensors = list(tensors) if isinstance(tensors, (list, tuple)) else tensors
    if isinstance(tensors, list) and not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors):
    tensors = _nonempty("hstack", tensors)
    return cat(tensors, 0 if tensors[0].dim() == 1 else 1)


def vstack(tensors):
    tensors = _nonempty("vstack", tensors)
    return cat([x.reshape(1, -1) if x.dim() == 1 else x for x in tensors], 0)


def dstack(tensors):
    tensors = _nonempty("dstack", tensors)
    # each input as atleast_3d: (N,) -> (1, N, 1), (M, N) -> (M, N, 1)
    return cat([x.reshape(1, -1, 1) if x.dim() <= 1 else (x.unsqueeze(-1) if x.dim() == 2 else x)
                for x in tensors], 2)


def column_stack(tensors):
    return cat([x.reshape(-1, 1) if x.dim() <= 1 else x for x in tensors], 1)


def _repeat_impl(xp, a, repeats):
    return xp.tile(a.reshape((1,) * (len(repeats) - a.ndim) + a.shape), repeats)


repeat_op = defop("repeat", _repeat_impl, save=("shapes",), family="join")


@repeat_op.def_vjp
def _(ctx, g):
    reps = ctx.params["repeats"]
    shp = ctx.shapes[0]
    full = (1,) * (len(reps) - len(shp)) + tuple(shp)
    inter = []
    for r, s in zip(reps, full):
        inter += [r, s]
    gr = g.reshape(inter)
    gr = gr.sum(tuple(range(0, 2 * len(reps), 2)))
    return gr.reshape(shp)


repeat_op.jvp = lambda ctx, t: dispatch(repeat_op, (t,), ctx.params)


def repeat(input, *sizes, repeats=None):
    sizes = U.shape_tuple(sizes, "repeat", nonneg=True, kw=repeats)
    if len(sizes) < input.dim():
        raise RuntimeError(f"repeat: Number of dimensions of repeat dims ({len(sizes)}) can not be smaller "
                           f"than number of dimensions of tensor ({input.dim()})")
    return dispatch(repeat_op, (input,), {"repeats": sizes})


def tile(input, *args, dims=None):
    """The tensor tiled dims times along each dim: ``tile(input, dims)`` as a function,
    ``Tensor.tile(*dims)`` or ``.tile(dims)`` as a method."""
    dims = U.shape_tuple(args, "tile", nonneg=True, kw=dims)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:  # repeat_interleave(repeats): the indices 0.. each repeated repeats[i] times
        from .._creation import arange
        return repeat_interleave(arange(input.shape[0] if input.dim() else 1), input, 0, output_size=output_size)
    if dim is None:
        input = input.reshape(-1)
        dim = 0
    d = U.wrap_dim(dim, input.dim(), "repeat_interleave")
    n = input.shape[d] if input.dim() else 1
    if U.is_tensor(repeats):
        r = U.raw_values(repeats)   # (under vmap: every batch row, for the checks and the output size)
        if r.size and r.min() < 0:
            raise RuntimeError(f"repeat_interleave: Repeats must be non-negative, got {int(r.min())}")
        if repeats.dim() > 1:
            raise RuntimeError(f"repeat_interleave: repeats must be 0-dim or 1-dim tensor, got shape "
                               f"{list(repeats.shape)}")
        if repeats.dim() == 1 and repeats.shape[0] == 1:   # one count for every slice
            repeats = repeats.reshape(())
        if repeats.dim() == 1 and repeats.shape[0] != n:
            raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats.shape[0]} and input.size({d}) = {n}")
        rows = r.reshape(-1, repeats.numel()) if repeats.numel() else np.zeros((1, 0), np.int64)
        totals = {int(t) * (n if repeats.dim() == 0 else 1) for t in rows.sum(1)}
        if len(totals) > 1:
            raise RuntimeError(f"vmap: repeat_interleave gives results of different sizes {sorted(totals)} across the "
                               f"batch (a data-dependent shape: the repeats' sums differ between the rows)")
        total = totals.pop()
    else:
        if repeats < 0:
            raise RuntimeError(f"repeat_interleave: Repeats must be non-negative, got {repeats}")
        total = repeats * n
    if output_size is not None and total != output_size:
        raise RuntimeError(f"repeat_interleave: allocated size does not match required size (output_size="
                           f"{output_size}, the repeats give {total})")
    if not U.is_tensor(repeats):
        x = input.unsqueeze(d + 1)
        shape = list(x.shape)
        shape[d + 1] = repeats
        x = x.expand(shape)
        # a new dense tensor, as PyTorch's (the flattened expand can be a stride-0 view, or the input itself)
        return clone(flatten(x, d, d + 1), memory_format=_contiguous_format())
    from .indexing import index_select, searchsorted
    from .._creation import arange
    if repeats._wr is None:
        idx = D._new_tensor(np.repeat(np.arange(n), np.broadcast_to(repeats._data, (n,))))
    else:   # batched repeats: slot j of the result comes from the first i whose running total exceeds j
        rep = repeats.expand(n) if repeats.dim() == 0 else repeats
        idx = searchsorted(rep.cumsum(0), arange(total, dtype=rep.dtype), right=True)
    return index_select(input, d, idx)


flip_op = defop("flip", lambda xp, a, dims: xp.flip(a, dims).copy(), family="join")
flip_op.vjp = lambda ctx, g: g.flip(ctx.params["dims"])
flip_op.jvp = flip_op.vjp


def flip(input, *args, dims=None):
    dims = U.shape_tuple(args, "flip", kw=dims) if args or dims is not None else ()
    return dispatch(flip_op, (input,), {"dims": U.wrap_dims(dims, input.dim(), "flip")})


def fliplr(input):
    if input.dim() < 2:
        raise RuntimeError(f"fliplr: Input must be >= 2-d (got {input.dim()}-d).")
    return flip(input, 1)


def flipud(input):
    if input.dim() < 1:
        raise RuntimeError("flipud: Input must be >= 1-d.")
    return flip(input, 0)


roll_op = defop("roll", lambda xp, a, shifts, dims: xp.roll(a, shifts, dims), family="join")
roll_op.vjp = lambda ctx, g: dispatch(roll_op, (g,), {"shifts": tuple(-s for s in ctx.params["shifts"]),
                                                      "dims": ctx.params["dims"]})
roll_op.jvp = lambda ctx, t: dispatch(roll_op, (t,), ctx.params)


def roll(input, shifts, dims=None):
    if not isinstance(shifts, int) and len(shifts) == 0:
        raise RuntimeError("`shifts` required")
    if dims is None:
        flat = input.reshape(-1)
        s = shifts if isinstance(shifts, int) else shifts[0]
        return dispatch(roll_op, (flat,), {"shifts": (s,), "dims": (0,)}).reshape(input.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    return dispatch(roll_op, (input,), {"shifts": shifts,
                                        "dims": tuple(U.wrap_dim(d, input.dim(), "roll") for d in dims)})


def rot90(input, k=1, dims=(0, 1)):
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = (U.wrap_dim(d, input.dim(), "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"rot90: expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    k %= 4
    if k == 1:
        return flip(input, d1).transpose(d0, d1)
    if k == 2:
        return flip(input, d0, d1)
    if k == 3:
        return flip(input, d0).transpose(d0, d1)
    return input.clone()


def _tri_impl(f):
    def impl(xp, a, diagonal=0):
        if a.ndim < 2:
            raise RuntimeError(f"{f.__name__}: input tensor must have at least 2 dimensions")
        return f(a, diagonal)
    return impl


tril_op = defop("tril", _tri_impl(np.tril), family="join")
triu_op = defop("triu", _tri_impl(np.triu), family="join")
tril_op.vjp = lambda ctx, g: g.tril(ctx.params.get("diagonal", 0))
tril_op.jvp = tril_op.vjp
triu_op.vjp = lambda ctx, g: g.triu(ctx.params.get("diagonal", 0))
triu_op.jvp = triu_op.vjp


def tril(input, diagonal=0):
    return dispatch(tril_op, (input,), {"diagonal": diagonal})


def triu(input, diagonal=0):
    return dispatch(triu_op, (input,), {"diagonal": diagonal})


def _constant_pad_impl(xp, a, pad, value=0.0):
    """pad = (last_lo, last_hi, second_last_lo, ...) as F.pad; negative entries crop."""
    k = len(pad) // 2
    crop = [slice(None)] * a.ndim
    shape = list(a.shape)
    inner = [slice(None)] * a.ndim
    for i in range(k):
        d = a.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        crop[d] = slice(max(-lo, 0), a.shape[d] - max(-hi, 0))
        n = max(a.shape[d] - max(-lo, 0) - max(-hi, 0), 0)
        shape[d] = n + max(lo, 0) + max(hi, 0)
        inner[d] = slice(max(lo, 0), max(lo, 0) + n)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"constant_pad_nd: the padding {list(pad)} makes a negative size {shape} of input "
                           f"{list(a.shape)}")
    from .._memory_format import is_channels_last
    if is_channels_last(a):  # the output keeps the input's layout, as PyTorch's
        out = xp.full((shape[0], shape[2], shape[3], shape[1]), value, dtype=a.dtype).transpose(0, 3, 1, 2)
    else:
        out = xp.full(shape, value, dtype=a.dtype)
    out[tuple(inner)] = a[tuple(crop)]
    return out


# F.pad(mode="constant"): PyTorch's ConstantPadNdBackward0; the vjp crops (pads by the negated widths)
constant_pad_op = defop("constant_pad_nd", _constant_pad_impl, family="join")
constant_pad_op.vjp = lambda ctx, g: dispatch(constant_pad_op, (g,), {"pad": tuple(-p for p in ctx.params["pad"])})
constant_pad_op.jvp = lambda ctx, t: dispatch(constant_pad_op, (t,), {"pad": ctx.params["pad"]})


def constant_pad(input, pad, value=0.0):
    return dispatch(constant_pad_op, (input,), {"pad": tuple(int(p) for p in pad), "value": value})


# ----------------------------------------------------------------------------- copies and casts


def _clone_impl(xp, a, memory_format=None):
    from .._memory_format import copy_in_format
    return copy_in_format(xp, a, memory_format)


clone_op = defop("clone", _clone_impl, family="elementwise")
clone_op.vjp = lambda ctx, g: g
clone_op.jvp = lambda ctx, t: t.clone()


def _contiguous_format():
    from .._memory_format import contiguous_format
    return contiguous_format


def clone(input, *, memory_format=None):
    return dispatch(clone_op, (input,), {"memory_format": memory_format} if memory_format else {})


def _to_copy_impl(xp, a, dtype, in_dtype=None, memory_format=None):
    from .._memory_format import cast_in_format
    if a.dtype.kind == "c" and np.dtype(dtype).kind == "b":  # nonzero in either part (PyTorch: no warning)
        a = a != 0
    elif a.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=2)
        a = a.real
    return cast_in_format(xp, a, dtype, memory_format)


to_copy_op = defop("_to_copy", _to_copy_impl, save=("shapes",), family="elementwise")


def _cast(t, d):
    """t in dtype d; complex into real takes the real part (no warning: a rule's own cast)."""
    if t._data.dtype.kind == "c" and d.category != 3:
        t = t.real
    return t.to(d)


to_copy_op.vjp = lambda ctx, g: _cast(g, ctx.params["in_dtype"])

to_copy_op.jvp = lambda ctx, t: _cast(t, dt.FROM_NP[np.dtype(ctx.params["dtype"])])


def to_dtype(input, dtype, memory_format=None, copy=False):
    if input.dtype is dtype and memory_format is None and not copy:
        return input
    p = {"dtype": dtype.np, "in_dtype": input.dtype}
    if memory_format is not None:
        p["memory_format"] = memory_format
    return dispatch(to_copy_op, (input,), p)


def contiguous(input, memory_format=None):
    from .._memory_format import contiguous_format, is_contiguous
    mf = memory_format or contiguous_format
    if is_contiguous(input, mf):
        return input
    return clone(input, memory_format=mf)


# ----------------------------------------------------------------------------- batching rules (vmap)
# (rule signature and helpers: ember.ops._batching)

from ._batching import (_pad_to, _materialize, dim_shift_rule, elementwise_rule)  # noqa: E402


def view_rule(op, vals, bd, params, size):
    x = vals[0]
    shape = (size,) + tuple(params["shape"])
    try:
        return dispatch(op, (x,), {"shape": shape}), True
    except RuntimeError:
        return dispatch(reshape_copy_op, (x,), {"shape": shape}), True


def permute_rule(op, vals, bd, params, size):
    return dispatch(op, (vals[0],), {"dims": (0,) + tuple(d + 1 for d in params["dims"])}), True


def expand_rule(op, vals, bd, params, size):
    shape = tuple(params["shape"])
    x = _pad_to(vals[0], len(shape))
    return dispatch(op, (x,), {"shape": (size,) + shape}), True


def repeat_rule(op, vals, bd, params, size):
    reps = tuple(params["repeats"])
    x = _pad_to(vals[0], len(reps))
    return dispatch(op, (x,), {"repeats": (1,) + reps}), True


def cat_rule(op, vals, bd, params, size):
    if op.name == "cat":  # legacy: 1-d empty tensors are skipped by cat
        keep = [(v, b) for v, b in zip(vals, bd) if tuple(v.shape[1 if b else 0:]) != (0,)]
        if keep and len(keep) < len(vals):
            vals, bd = [k[0] for k in keep], [k[1] for k in keep]
    return dim_shift_rule(op, vals, bd, params, size)


def _numel(shape):
    n = 1
    for v in shape:
        n *= v
    return n


def as_strided_rule(op, vals, bd, params, size):
    """Raw-memory geometry per sample: each sample starts one batch stride further."""
    x = vals[0]
    p = dict(params, size=(size,) + tuple(params["size"]), stride=(x.stride(0),) + tuple(params["stride"]))
    return dispatch(op, (x,), p), True


def as_strided_scatter_rule(op, vals, bd, params, size):
    base = (vals[0] if bd[0] else _materialize(vals[0], size)).contiguous()
    src = vals[1] if bd[1] else _materialize(vals[1], size)
    per = _numel(base.shape[1:])
    p = dict(params, size=(size,) + tuple(params["size"]), stride=(per,) + tuple(params["stride"]))
    return dispatch(op, (base, src), p), True


def as_strided_backward_rule(op, vals, bd, params, size):
    shape = tuple(params["shape"])
    p = dict(params, shape=(size,) + shape, size=(size,) + tuple(params["size"]),
             stride=(_numel(shape),) + tuple(params["stride"]))
    return dispatch(op, (vals[0],), p), True


view_op.batch = reshape_copy_op.batch = view_rule
as_strided_op.batch = as_strided_rule
as_strided_scatter_op.batch = as_strided_scatter_rule
as_strided_backward_op.batch = as_strided_backward_rule
permute_op.batch = transpose_op.batch = t_op.batch = permute_rule
# (the padded dims are the trailing ones: a leading batch dim passes through)
constant_pad_op.batch = lambda op, vals, bd, params, size: (dispatch(op, tuple(vals), params), True)
expand_op.batch = expand_rule
repeat_op.batch = repeat_rule
cat_op.batch = stack_op.batch = cat_rule
for _op in (squeeze_op, squeeze_dim_op, squeeze_dims_op, unsqueeze_op, select_op, select_backward_op, slice_op, slice_backward_op, diagonal_op,
            diagonal_backward_op, flip_op, roll_op):
    _op.batch = dim_shift_rule  # dims shift by one; shape params gain the batch size
tril_op.batch = triu_op.batch = elementwise_rule  # they act on the last two dims
