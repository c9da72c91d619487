"""Shape and layout functions PyTorch has beyond shape.py, each composed of registry ops (their
rules come from the primitives they call): atleast_1d/2d/3d, hsplit/vsplit/dsplit,
split_with_sizes, unsafe_split/unsafe_chunk, diagflat, the *_copy twins of the views, the
select/slice/diagonal/as_strided scatters (one as_strided_scatter primitive under all four),
constant_pad_nd, fill, combinations, unravel_index, nonzero_static."""
import itertools

import numpy as np

from .. import _dispatch as D
from .._dispatch import dispatch
from . import _util as U
from . import shape as _S


# ----------------------------------------------------------------------------- detach under transforms

# Tensor.detach() of a tensor a transform wraps (vmap, func.grad) runs this op, so that the levels
# see it: a view with no history (non-differentiable, so no node and no tangent), batched as any
# elementwise op
detach_op = D.defop("detach", lambda xp, a: a.view(), view=True, differentiable=False, family="elementwise")


# ----------------------------------------------------------------------------- atleast_nd


def _atleast(tensors, fn, name):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(fn(t) for t in tensors[0])
    if len(tensors) == 1:
        return fn(tensors[0])
    return tuple(fn(t) for t in tensors)


def _a1(t):
    return _S.reshape(t, (1,)) if t.dim() == 0 else t


def _a2(t):
    if t.dim() == 0:
        return _S.reshape(t, (1, 1))
    return _S.unsqueeze(t, 0) if t.dim() == 1 else t


def _a3(t):
    n = t.dim()
    if n == 0:
        return _S.reshape(t, (1, 1, 1))
    if n == 1:
        return _S.unsqueeze(_S.unsqueeze(t, 0), -1)
    return _S.unsqueeze(t, -1) if n == 2 else t


def atleast_1d(*tensors):
    return _atleast(tensors, _a1, "atleast_1d")


def atleast_2d(*tensors):
    return _atleast(tensors, _a2, "atleast_2d")


def atleast_3d(*tensors):
    return _atleast(tensors, _a3, "atleast_3d")


# ----------------------------------------------------------------------------- splits


def _dir_split(input, indices_or_sections, dim, name, min_dim):
    if input.dim() < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, but got a tensor "
                           f"with {input.dim()} dimensions!")
    if isinstance(indices_or_sections, int):
        size = input.shape[dim]
        if indices_or_sections <= 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {indices_or_sections}!")
    return _S.tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    return _dir_split(input, indices_or_sections, 0 if input.dim() == 1 else 1, "hsplit", 1)


def vsplit(input, indices_or_sections):
    return _dir_split(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    return _dir_split(input, indices_or_sections, 2, "dsplit", 3)


def split_with_sizes(input, split_sizes, dim=0):
    if isinstance(split_sizes, int) or not all(isinstance(s, int) for s in split_sizes):
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' must be a sequence of ints, got "
                        f"{split_sizes!r}")
    if any(s < 0 for s in split_sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={list(split_sizes)}")
    return _S.split(input, list(split_sizes), dim)


def unsafe_split(input, split_size, dim=0):
    return _S.split(input, split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return split_with_sizes(input, split_sizes, dim)


def unsafe_chunk(input, chunks, dim=0):
    return _S.chunk(input, chunks, dim)


def diagflat(input, offset=0):
    from .linalg import diag
    return diag(_S.reshape(input, (-1,)), offset)


# ----------------------------------------------------------------------------- *_copy


def _copies(x):
    if isinstance(x, (tuple, list)):
        return tuple(_S.clone(t, memory_format=_contiguous()) for t in x)
    return _S.clone(x, memory_format=_contiguous())


def _contiguous():
    from .._memory_format import contiguous_format
    return contiguous_format


def alias_copy(input):
    return _copies(input)


def as_strided_copy(input, size, stride, storage_offset=None):
    return _copies(_S.as_strided(input, size, stride, storage_offset))


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return _copies(_S.diagonal(input, offset, dim1, dim2))


def expand_copy(input, size, *, implicit=False):
    return _copies(_S.expand(input, tuple(size)))


def narrow_copy(input, dim, start, length):
    if input.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if dim >= input.dim():
        raise RuntimeError(f"narrow_copy(): Expected dim < {input.dim()} (the input's dims), got dim {dim}")
    return _copies(_S.narrow(input, dim, start, length))


def permute_copy(input, dims):
    return _copies(_S.permute(input, tuple(dims)))


def select_copy(input, dim, index):
    return _copies(_S.select(input, dim, index))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    return _copies(_S.slice_dim(input, dim, start, end, step))


def split_copy(input, split_size, dim=0):
    return _copies(_S.split(input, split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    return _copies(split_with_sizes(input, split_sizes, dim))


def squeeze_copy(input, dim=None):
    return _copies(_S.squeeze(input, dim))


def t_copy(input):
    return _copies(_S.t(input))


def transpose_copy(input, dim0, dim1):
    return _copies(_S.transpose(input, dim0, dim1))


def unbind_copy(input, dim=0):
    return _copies(_S.unbind(input, dim))


def unfold_copy(input, dimension, size, step):
    return _copies(input.unfold(dimension, size, step))


def unsqueeze_copy(input, dim):
    return _copies(_S.unsqueeze(input, dim))


def values_copy(input):
    return _copies(input)


def view_copy(input, *size, dtype=None):
    if len(size) == 1 and not isinstance(size[0], int) and not isinstance(size[0], (tuple, list, D.Tensor)) \
            and size[0] is not None and dtype is None:
        dtype, size = size[0], ()
    if dtype is not None:
        return _copies(_S.view_dtype(input, dtype))
    return _copies(_S.view(input, *size))


# ----------------------------------------------------------------------------- scatters


def _scatter_into(input, src, size, stride, offset, name):
    """input with src written over input.as_strided(size, stride, offset) (input made contiguous):
    the as_strided_scatter primitive (rules for both inputs, vmap) serves every *_scatter."""
    if not U.is_tensor(src):
        raise TypeError(f"{name}(): argument 'src' must be Tensor, not {type(src).__name__}")
    if tuple(src.shape) != tuple(size):
        raise RuntimeError(f"{name}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(size)}")
    if src.dtype != input.dtype:
        src = src.to(input.dtype)
    base = _S.contiguous(input)
    return dispatch(_S.as_strided_scatter_op, (base, src),
                    {"size": tuple(size), "stride": tuple(stride), "offset": offset})


def _cstrides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return list(reversed(st))


def select_scatter(input, src, dim, index):
    n = input.dim()
    if n == 0:
        raise IndexError("select_scatter() cannot be applied to a 0-dim tensor.")
    d = U.wrap_dim(dim, n, "select_scatter")
    size = input.shape[d]
    index = index.__index__()
    if not -size <= index < size:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size {list(input.shape)} "
                         f"at dimension {d}")
    index %= size
    st = _cstrides(tuple(input.shape))
    shape = tuple(input.shape[:d]) + tuple(input.shape[d + 1:])
    return _scatter_into(input, src, shape, tuple(st[:d] + st[d + 1:]), index * st[d], "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    n = input.dim()
    if n == 0:
        raise IndexError("slice_scatter() cannot be applied to a 0-dim tensor.")
    d = U.wrap_dim(dim, n, "slice_scatter")
    size = input.shape[d]
    b, e, s = slice(start, end, step).indices(size)
    length = len(range(b, e, s))
    st = _cstrides(tuple(input.shape))
    shape = list(input.shape)
    shape[d] = length
    stride = list(st)
    stride[d] = st[d] * s
    return _scatter_into(input, src, tuple(shape), tuple(stride), b * st[d] if length else 0, "slice_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    n = input.dim()
    d1, d2 = U.wrap_dim(dim1, n, "diagonal_scatter"), U.wrap_dim(dim2, n, "diagonal_scatter")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    shp = tuple(input.shape)
    st = _cstrides(shp)
    if offset >= 0:
        length = max(0, min(shp[d1], shp[d2] - offset))
        off = offset * st[d2]
    else:
        length = max(0, min(shp[d1] + offset, shp[d2]))
        off = -offset * st[d1]
    keep = [i for i in range(n) if i not in (d1, d2)]
    shape = tuple(shp[i] for i in keep) + (length,)
    stride = tuple(st[i] for i in keep) + (st[d1] + st[d2],)
    return _scatter_into(input, src, shape, stride, off if length else 0, "diagonal_scatter")


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    off = 0 if storage_offset is None else storage_offset
    return _scatter_into(input, src, tuple(size), tuple(stride), off, "as_strided_scatter")


# ----------------------------------------------------------------------------- padding, fill


def constant_pad_nd(input, pad, value=0):
    return _S.constant_pad(input, list(pad), value)


def fill(input, value):
    """A new tensor of input's shape and dtype filled with value (a number or a 0-dim tensor, whose
    gradient is the sum of the output's)."""
    from .._creation import full, zeros
    from .elementwise import where
    if U.is_tensor(value):
        if value.dim() != 0:
            raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        v = value.to(input.dtype)
    else:
        v = full((), value, dtype=input.dtype)
    # where with an all-false mask: input's gradient is zero (PyTorch's), value's the sum
    return where(zeros(tuple(input.shape), dtype=_bool()), input, v)


def _bool():
    from .. import bool as b
    return b


# ----------------------------------------------------------------------------- combinations, indices


def combinations(input, r=2, with_replacement=False):
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        from .._creation import empty
        return empty((0,), dtype=input.dtype)
    n = input.shape[0]
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(gen(range(n), r)), dtype=np.int64).reshape(-1, r)
    from .indexing import index_select
    out = index_select(input, 0, D._new_tensor(idx.reshape(-1)))
    return _S.reshape(out, idx.shape)


def unravel_index(indices, shape):
    from .._creation import as_tensor
    if not U.is_tensor(indices):
        indices = as_tensor(indices)
    if indices.is_floating_point() or indices.is_complex() or indices.dtype.name == "bool":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    numel = 1
    for s in shape:
        numel *= s
    a = U.raw_values(indices)  # (every row under vmap)
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < -numel or hi >= numel:
            raise ValueError(f"'indices' must be in range [{-numel}, {numel - 1}]")
    idx = indices.long()
    idx = idx % numel if numel else idx
    out = []
    for s in reversed(shape):
        out.append(idx.remainder(s) if s else idx)
        idx = idx.div(s, rounding_mode="floor") if s else idx
    return tuple(reversed(out))


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero() cut or padded (with fill_value) to ``size`` rows: a shape known in advance, so it is
    composed without data-dependent shapes (a stable sort puts the nonzero positions first) and
    batches under vmap."""
    from .._creation import arange, full
    from .indexing import sort
    from .elementwise import where
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    n = input.dim()
    flat = _S.reshape(input, (-1,)) != 0
    numel = flat.shape[0]
    order = sort((~flat).to(_int64()), 0, stable=True)[1]
    if size > numel:
        order = _S.cat([order, full((size - numel,), 0, dtype=order.dtype)], 0)
    else:
        order = _S.narrow(order, 0, 0, size)
    valid = arange(size) < flat.sum()
    if n == 0:
        return where(_S.unsqueeze(valid, -1), full((size, 0), 0, dtype=order.dtype), fill_value)
    coords = _S.stack(list(unravel_index(order, tuple(input.shape))), -1) if numel else \
        full((size, n), 0, dtype=order.dtype)
    return where(_S.unsqueeze(valid, -1), coords, full((), fill_value, dtype=order.dtype))


def _int64():
    from .. import int64
    return int64


# ----------------------------------------------------------------------------- put, unique_consecutive


def put(input, index, source, accumulate=False):
    """input with source's values written at the flat positions index names (added with accumulate):
    index_put on the flattened tensor."""
    from .indexing import index_put
    if index.dtype.name != "int64":
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {index.dtype}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{input.dtype} and source.dtype = {source.dtype}")
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    idx = _S.reshape(index, (-1,))
    a = U.raw_values(index)  # (every row under vmap)
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    idx = idx % n if n else idx
    flat = _S.reshape(input, (-1,))
    src = _S.reshape(source, (-1,))
    if D.state.levels:
        # under a transform (vmap: a batched index) scatter/scatter_add, which batch with their index,
        # instead of index_put, whose index is a Python-level argument
        from .indexing import scatter, scatter_add
        return _S.reshape(scatter_add(flat, 0, idx, src) if accumulate else scatter(flat, 0, idx, src),
                          tuple(input.shape))
    return _S.reshape(index_put(flat, (idx,), src, accumulate), tuple(input.shape))


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The first element of every run of equal consecutive elements (or slices along dim), with the
    index of each element's run and the run lengths. Plain tensors only, as unique()."""
    U.check_plain("unique_consecutive", input)
    a = input._data
    if a.dtype.kind == "c":
        U.no_complex("unique", a)
    if dim is None:
        flat = a.reshape(-1)
        n = flat.shape[0]
        start = np.ones(n, bool)
        if n:
            start[1:] = flat[1:] != flat[:-1]
        vals = flat[start]
        inv = (np.cumsum(start) - 1).reshape(a.shape)
    else:
        d = U.wrap_dim(dim, a.ndim, "unique_consecutive")
        m = np.moveaxis(a, d, 0)
        n = m.shape[0]
        start = np.ones(n, bool)
        if n:
            start[1:] = (m[1:] != m[:-1]).reshape(n - 1, int(np.prod(m.shape[1:]))).any(1)
        vals = np.moveaxis(m[start], 0, d)
        inv = np.cumsum(start) - 1
    counts = np.diff(np.append(np.flatnonzero(start), n)) if n else np.zeros(0, np.int64)
    out = [D._new_tensor(np.ascontiguousarray(vals))]
    if return_inverse:
        out.append(D._new_tensor(inv.astype(np.int64)))
    if return_counts:
        out.append(D._new_tensor(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)
