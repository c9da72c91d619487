"""dtypes and PyTorch's type-promotion rules.

An ember dtype wraps a NumPy dtype. Promotion follows PyTorch, which differs from NumPy in
two places: an integer combined with a floating type gives that floating type (NumPy widens
to a float that holds every integer), and operands are ranked in three groups — tensors with
dimensions, zero-dim tensors, Python numbers — where a lower group only matters when it is of
a higher category (bool < integer < floating).
"""
import ml_dtypes
import numpy as np

__all__ = ["dtype", "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
           "bool_", "complex64", "complex128", "promote_types", "get_default_dtype", "set_default_dtype"]


class dtype:
    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "category")

    def __init__(self, name, np_dtype, category):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == 2
        self.is_signed = self.np.kind in "ifc"
        self.category = category  # 0 bool, 1 integer, 2 floating, 3 complex

    @property
    def is_complex(self):
        return self.category == 3

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self):
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self):
        """The complex dtype whose parts are this floating dtype (torch.float64 -> complex128)."""
        if self.category == 3:
            return self
        c = _REAL_TO_COMPLEX.get(self)
        if c is None:
            raise RuntimeError(f"ember has no complex dtype with {self.name} parts (complex32/ComplexHalf is "
                               f"not supported)" if self.category == 2 else
                               f"to_complex is only defined for floating dtypes, got {self.name}")
        return c


float16 = dtype("float16", np.float16, 2)
# bfloat16: the NumPy dtype of ml_dtypes (NumPy's kind 'V'); kernels compute in float32 and round once
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2)
bfloat16.is_signed = True
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
uint8 = dtype("uint8", np.uint8, 1)
bool_ = dtype("bool", np.bool_, 0)
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)
_COMPLEX_TO_REAL = {complex64: float32, complex128: float64}
_REAL_TO_COMPLEX = {float32: complex64, float64: complex128}

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_, bfloat16, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL}
FROM_NP = {d.np: d for d in ALL}


def _by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype, what="array"):
    try:
        return FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"can't convert {what} of type {np_dtype}: the only supported types are "
                        "complex128, complex64, float64, float32, float16, int64, int32, int16, int8, uint8, "
                        "and bool") from None


def canonical(a):
    """``a`` with NumPy's own instance of its dtype. An array that went through pickle carries an
    equal but distinct dtype object, and ember compares dtypes by identity on its hot paths
    (a module unpickled then failed with "expected ... the same dtype, but got float32 and
    float32"): such an array is viewed with the canonical dtype (no copy)."""
    d = FROM_NP.get(a.dtype)
    return a if d is None or a.dtype is d.np else a.view(d.np)


_default = [float32]


def get_default_dtype():
    return _default[0]


def set_default_dtype(d):
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


_promote_cache = {}


def promote_types(a, b):
    """The smallest dtype both a and b can be cast to, by PyTorch's lattice."""
    key = (a, b)
    r = _promote_cache.get(key)
    if r is None:
        if a is b:
            r = a
        elif a.category != b.category and max(a.category, b.category) == 3:
            c, o = (a, b) if a.category == 3 else (b, a)
            # complex with a float: the wider of the two part types (complex64 + float64 -> complex128)
            r = promote_types(c.to_real(), o).to_complex() if o.category == 2 else c
        elif a.category != b.category and max(a.category, b.category) == 2:
            r = a if a.category == 2 else b
        elif a is bfloat16 or b is bfloat16:  # with float16: float32 (neither holds the other); else the wider
            o = b if a is bfloat16 else a
            r = float32 if o is float16 else o
        else:
            r = FROM_NP[np.promote_types(a.np, b.np)]
        _promote_cache[key] = r
    return r


_SCALAR_DTYPE = {bool: bool_, int: int64}


def scalar_dtype(x):
    """The dtype a Python number takes when it stands alone (torch.tensor(x))."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return int64
    if isinstance(x, float):
        return _default[0]
    if isinstance(x, complex):
        return default_complex()
    if isinstance(x, np.generic):
        return from_numpy_dtype(x.dtype)
    raise TypeError(f"expected a Python number, got {type(x).__name__}")


def default_complex():
    """The dtype of Python complex data: complex64, or complex128 when the default dtype is float64."""
    return complex128 if _default[0] is float64 else complex64


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if lower.category == 3 and higher.category < 3:
        # a complex operand of a lower group makes the result complex with the higher group's
        # floating width (float64 tensor + 1j -> complex128; float32 tensor + complex128 0-dim -> complex64)
        return higher.to_complex() if higher.category == 2 else lower
    if higher.category >= 2:
        return higher
    if higher is bool_ or lower.category == 2:
        return promote_types(higher, lower)
    return higher


def result_type_of(dim_dtypes, zero_dtypes, scalars):
    """PyTorch's result type: tensors with dims, then zero-dim tensors, then Python numbers."""
    dim_r = zero_r = wrap_r = None
    for d in dim_dtypes:
        dim_r = d if dim_r is None else promote_types(dim_r, d)
    for d in zero_dtypes:
        zero_r = d if zero_r is None else promote_types(zero_r, d)
    for s in scalars:
        d = scalar_dtype(s)
        if isinstance(s, np.generic) and d.category == 2:
            d = _default[0]
        elif isinstance(s, np.generic) and d.category == 3:
            d = default_complex()
        wrap_r = d if wrap_r is None else promote_types(wrap_r, d)
    return _combine(dim_r, _combine(zero_r, wrap_r))


def can_cast(from_, to):
    """PyTorch's rule for in-place results: no float into integer, no integer into bool."""
    return from_.category <= to.category


class finfo:
    """torch.finfo: the limits of a floating dtype (the default dtype when none is given)."""

    def __init__(self, type=None):
        d = get_default_dtype() if type is None else type
        if not isinstance(d, dtype) or d.category < 2:
            raise TypeError("ember.finfo() requires a floating point input type. Use ember.iinfo to handle "
                            f"{d!r}")
        d = d.to_real()  # (a complex dtype: the limits of its parts, as PyTorch)
        i = ml_dtypes.finfo(d.np) if d is bfloat16 else np.finfo(d.np)
        self.bits, self.dtype = int(i.bits), d.name
        self.eps, self.max, self.min = float(i.eps), float(i.max), float(i.min)
        self.tiny = self.smallest_normal = float(i.smallest_normal)
        self.resolution = 10.0 ** -int(i.precision)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """torch.iinfo: the limits of an integer dtype."""

    def __init__(self, type):
        if not isinstance(type, dtype) or type.category != 1:
            raise TypeError(f"ember.iinfo() requires an integer input type. Use ember.finfo to handle {type!r}")
        i = np.iinfo(type.np)
        self.bits, self.min, self.max, self.dtype = int(i.bits), int(i.min), int(i.max), type.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
