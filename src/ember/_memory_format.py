"""Memory formats: contiguous (NCHW) and channels_last (NHWC memory viewed as NCHW).

Strides are real: a channels_last tensor is an NHWC array transposed to NCHW, so stride()
reports (C*H*W, 1, W*C, C) as PyTorch does and NumPy's order='K' ops keep the layout.
"""
import numpy as np


class memory_format:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
_ALL = {m.name: m for m in (contiguous_format, channels_last, channels_last_3d, preserve_format)}

_PERM = {channels_last: ((0, 2, 3, 1), (0, 3, 1, 2)), channels_last_3d: ((0, 2, 3, 4, 1), (0, 4, 1, 2, 3))}


def _by_name(name):
    return _ALL[name]


def _check_rank(a, mf):
    need = 4 if mf is channels_last else 5
    if a.ndim != need:
        raise RuntimeError(f"required rank {need} tensor to use {mf.name} format")


def is_contiguous_array(a, mf=None):
    if mf is None or mf is contiguous_format or mf is preserve_format:
        return a.flags.c_contiguous
    if mf in _PERM:
        if a.ndim != (4 if mf is channels_last else 5):
            return False
        return a.transpose(_PERM[mf][0]).flags.c_contiguous
    raise TypeError(f"unknown memory format {mf!r}")


def is_contiguous(t, mf=None):
    if t._meta:  # flags from the recorded strides (a descriptor only: nothing is read)
        d = t._data
        desc = np.lib.stride_tricks.as_strided(np.zeros(1, d.dtype), d.shape,
                                               tuple(s * d.itemsize for s in t.stride()))
        return is_contiguous_array(desc, mf)
    return is_contiguous_array(t._data, mf)


def is_channels_last(a):
    """PyTorch's suggest_memory_format() == channels_last for a 4-d array: the strides order the
    dims N, H, W, C (outermost to innermost), ambiguous size-1 cases resolved as PyTorch does."""
    if a.ndim != 4:
        return False
    st = a.strides
    if st[1] == 0:
        return False
    sz = a.shape
    lo = 0
    for d in (1, 3, 2, 0):
        if sz[d] == 0 or st[d] < lo:
            return False
        if d == 0 and lo == st[1]:
            return False
        lo = st[d] * sz[d] if sz[d] > 1 else st[d]
    return True


def suggest_memory_format(a):
    return channels_last if is_channels_last(a) else contiguous_format


def empty_array(xp, shape, dtype, mf=None, fill=None):
    if mf is None or mf is contiguous_format or mf is preserve_format:
        a = xp.empty(shape, dtype) if fill is None else xp.full(shape, fill, dtype)
        return a
    fwd, back = _PERM[mf]
    if len(shape) != len(fwd):
        raise RuntimeError(f"required rank {len(fwd)} tensor to use {mf.name} format")
    phys = tuple(shape[i] for i in fwd)
    a = xp.empty(phys, dtype) if fill is None else xp.full(phys, fill, dtype)
    return a.transpose(back)


def like_array(xp, a, dtype, mf, fill=None):
    if mf is preserve_format:
        if is_channels_last(a):
            return empty_array(xp, a.shape, dtype, channels_last, fill)
        r = xp.empty_like(a, dtype=dtype)  # order='K' keeps other dense layouts
        if fill is not None:
            r.fill(fill)
        return r
    return empty_array(xp, a.shape, dtype, mf, fill)


def copy_in_format(xp, a, mf=None):
    if mf is None or mf is preserve_format:
        if is_channels_last(a):
            return a.transpose(0, 2, 3, 1).copy().transpose(0, 3, 1, 2)
        return a.copy(order="K")
    if mf is contiguous_format:
        return xp.ascontiguousarray(a) if not a.flags.c_contiguous else a.copy()
    fwd, back = _PERM[mf]
    _check_rank(a, mf)
    return xp.ascontiguousarray(a.transpose(fwd)).transpose(back)


def cast_in_format(xp, a, dtype, mf=None):
    if mf is None or mf is preserve_format:
        if is_channels_last(a):
            return a.transpose(0, 2, 3, 1).astype(dtype).transpose(0, 3, 1, 2)
        return a.astype(dtype, order="K")
    if mf is contiguous_format:
        return a.astype(dtype, order="C")
    fwd, back = _PERM[mf]
    _check_rank(a, mf)
    return a.transpose(fwd).astype(dtype, order="C").transpose(back)
