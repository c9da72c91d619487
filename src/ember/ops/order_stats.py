"""Order statistics composed of registry ops (sort, gather, comparisons): mode and nanmedian.
The values come from a gather at the chosen index, so the gradient goes to that one element, as
PyTorch's does."""
from . import _util as U
from . import _results
from . import shape as _S


def _arange_along(x, d):
    from .._creation import arange
    n = x.shape[d]
    shape = [1] * x.dim()
    shape[d] = n
    return _S.reshape(arange(n), tuple(shape))


def mode(input, dim=-1, keepdim=False):
    """The most frequent value of each slice along dim (the smallest of equally frequent ones) and
    the index of its last occurrence."""
    from .elementwise import where
    x = input
    if x.dim() == 0:
        x = _S.reshape(x, (1,))
    d = U.wrap_dim(dim, x.dim(), "mode")
    if x.is_complex():  # PyTorch: no complex kernel, but a 0-dim input is its own mode
        if input.dim() == 0:
            from .._creation import zeros
            from .. import _dtype as _dt
            return _results.mode(input.clone(), zeros((), dtype=_dt.int64))
        U.no_complex("mode_cpu", x._data)
    if x.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size (input shape "
                         f"{list(input.shape)})")
    # counts[..., j, ...] = how many elements of j's slice equal x[j] (pairwise, along a new last dim)
    a = _S.unsqueeze(_S.movedim(x, d, -1), -1)
    counts = (a == _S.transpose(a, -1, -2)).sum(-1)        # (..., n) with dim d moved last
    counts = _S.movedim(counts, -1, d)
    most = counts.amax(d, keepdim=True)
    top = x.amax(d, keepdim=True)
    best = where(counts == most, x, top).amin(d, keepdim=True)   # the smallest most-frequent value
    pos = _arange_along(x, d)
    idx = where(x == best, pos, -1).amax(d, keepdim=True)       # its last occurrence
    val = x.gather(d, idx)
    if not keepdim or input.dim() == 0:
        val, idx = val.squeeze(d), idx.squeeze(d)
    return _results.mode(val, idx)


def nanmedian(input, dim=None, keepdim=False):
    """The lower median of the non-NaN values (NaN where a slice has none), with its index."""
    from .indexing import sort
    from .elementwise import isnan
    if input.is_complex():  # (PyTorch's kernel names)
        U.no_complex("median_cpu" if dim is None else "median_out", input)
    if dim is None:
        flat = _S.reshape(input, (-1,))
        if flat.numel() == 0:
            from .._creation import full
            return full((), float("nan"), dtype=input.dtype)
        return nanmedian(flat, 0).values
    x = input if input.dim() else _S.reshape(input, (1,))
    d = U.wrap_dim(dim, x.dim(), "nanmedian")
    if x.shape[d] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero size (input shape "
                         f"{list(input.shape)})")
    v, i = sort(x, d, stable=True)          # NaNs sort last
    c = (~isnan(x)).sum(d, keepdim=True)
    k = (c - 1).clamp_min(0).div(2, rounding_mode="floor")
    val, idx = v.gather(d, k), i.gather(d, k)
    if not keepdim or input.dim() == 0:
        val, idx = val.squeeze(d), idx.squeeze(d)
    return _results.nanmedian(val, idx)
