"""Helpers shared by the op families: promotion on raw arrays, dim checks, error wording."""
import numpy as np

from .. import _dispatch as D
from .. import _dtype as dt

_ndarray = np.ndarray
_promo_cache = {}
# bfloat16 (ml_dtypes, NumPy kind 'V'): ml_dtypes' ufuncs compute each element in float32 and round
# once, as PyTorch's CPU kernels do; what needs a float32 pass (reductions, products, scalars kept
# in float32) goes through bf16_f32 below. Checks for it sit on the paths a 'V' dtype already takes.
BF16 = dt.bfloat16.np
_F32 = np.dtype(np.float32)


def bf16_f32(fn, *arrays, **kw):
    """fn on the bfloat16 arrays cast to float32 (others as they are), rounded once to bfloat16."""
    r = fn(*(x.astype(_F32) if type(x) is _ndarray and x.dtype == BF16 else x for x in arrays), **kw)
    return r.astype(BF16) if hasattr(r, "astype") and r.dtype == _F32 else r


_F16 = np.dtype(np.float16)


def is_lowp(a):
    """float16 or bfloat16: PyTorch's CPU kernels compute these in float32 (its opmath type)."""
    return a.dtype == _F16 or a.dtype == BF16


def no_lowp(kernel, *arrays):
    """PyTorch's CPU build has no float16/bfloat16 kernel named ``kernel``: its NotImplementedError."""
    for a in arrays:
        a = getattr(a, "_data", a)  # (tensors or arrays)
        if type(a) is _ndarray and (a.dtype == _F16 or a.dtype == BF16):
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{'Half' if a.dtype == _F16 else 'BFloat16'}'")


def refuse_lowp(op, kernel):
    """Wrap a registry op's impl so that float16/bfloat16 arrays get PyTorch's NotImplementedError
    for ``kernel`` (ops whose CPU kernels PyTorch builds for float32/float64 only)."""
    impl = op.impl

    def checked(xp, *arrays, **kw):
        no_lowp(kernel, *arrays)
        return impl(xp, *arrays, **kw)
    op.impl = checked
    return op


def lowp_f32(fn, *arrays, **kw):
    """fn on the float16/bfloat16 arrays cast to float32 (others as they are), each float32 result
    (or tuple member) rounded once to that dtype: PyTorch's opmath for accumulating kernels (sums,
    products, norms, convolutions, pooling) on these dtypes."""
    low = next(x.dtype for x in arrays if type(x) is _ndarray and (x.dtype == _F16 or x.dtype == BF16))
    r = fn(*(x.astype(_F32) if type(x) is _ndarray and x.dtype == low else x for x in arrays), **kw)

    def back(v):
        if isinstance(v, np.float32):  # (NumPy's scalar result of a 0-dim reduction or 1-D product)
            return np.asarray(v).astype(low)
        return v.astype(low) if type(v) is _ndarray and v.dtype == _F32 else v
    return tuple(back(v) for v in r) if type(r) is tuple else back(r)


def _key(x):
    t = type(x)
    if t is _ndarray:
        return (x.dtype, x.ndim == 0)
    if t is float or t is int or t is bool or t is complex:
        return t
    if isinstance(x, np.generic):
        k = x.dtype.kind
        return float if k == "f" or x.dtype == BF16 else (bool if k == "b" else (complex if k == "c" else int))
    if isinstance(x, _ndarray):
        return (x.dtype, x.ndim == 0)
    raise TypeError(f"expected a Tensor or a Python number, got {type(x).__name__}")


def result_dtype(*xs):
    """PyTorch's result type of arrays (with their dims) and Python numbers, as an ember dtype."""
    key = (_key(xs[0]), _key(xs[1])) if len(xs) == 2 else tuple(_key(x) for x in xs)
    r = _promo_cache.get(key)
    if r is None:
        dims, zeros, scalars = [], [], []
        for k, x in zip(key, xs):
            if type(k) is tuple:
                (zeros if k[1] else dims).append(dt.FROM_NP[k[0]])
            else:
                scalars.append(k(0) if k is not bool else False)
        r = dt.result_type_of(dims, zeros, scalars)
        _promo_cache[key] = r
    return r


def promote(a, b, floating=False):
    """Cast array operands to the PyTorch result type (Python numbers stay weak)."""
    r = result_dtype(a, b)
    if floating and r.category < 2:
        r = dt.get_default_dtype()
    t = r.np
    if type(a) is _ndarray and a.dtype is not t:
        a = a.astype(t)
    if type(b) is _ndarray and b.dtype is not t:
        b = b.astype(t)
    if type(a) is not _ndarray:
        if isinstance(a, np.generic):  # NumPy scalars are weak like Python numbers (NEP 50 aside)
            a = a.item()
        if floating and not isinstance(a, (float, complex)):  # (a complex number stays complex)
            a = float(a)
    if type(b) is not _ndarray:
        if isinstance(b, np.generic):
            b = b.item()
        if floating and not isinstance(b, (float, complex)):  # (a complex number stays complex)
            b = float(b)
    if t is BF16:  # a number meets bfloat16 as PyTorch casts it: rounded to bfloat16 first
        if type(a) is not _ndarray:
            a = np.asarray(a, np.float32).astype(BF16)
        if type(b) is not _ndarray:
            b = np.asarray(b, np.float32).astype(BF16)
    return a, b


def check_int_divisor(op, a, b):
    """Integer division by zero raises in PyTorch (NumPy would return 0 with a warning)."""
    if type(b) is _ndarray:
        if b.dtype.kind in "iub" and (type(a) is not _ndarray or a.dtype.kind in "iub") and not b.all():
            raise RuntimeError(f"{op}: ZeroDivisionError (integer division by zero, dtype {b.dtype})")
    elif b == 0 and type(b) in (int, bool) and type(a) is _ndarray and a.dtype.kind in "iub":
        raise RuntimeError(f"{op}: ZeroDivisionError (integer division by zero, dtype {a.dtype})")


def wrap_int_scalars(a, b):
    """Python ints that overflow the other operand's integer dtype, as 0-d arrays of that dtype
    wrapped around (two's complement), which is what PyTorch's scalar conversion gives."""
    def conv(x, other):
        if type(x) is int and type(other) is _ndarray and other.dtype.kind in "iu":
            if not -2 ** 63 <= x < 2 ** 64:
                raise RuntimeError(f"value {x} cannot be converted to type "
                                   f"{dt.FROM_NP[other.dtype].name} without overflow")
            return np.array(x & 0xFFFFFFFFFFFFFFFF, np.uint64).astype(other.dtype)
        return x
    return conv(a, b), conv(b, a)


_TORCH_SCALAR = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def torch_scalar_name(a):
    """PyTorch's C++ name of an array's, a tensor's or a dtype's scalar type, for its messages: Float,
    Long, ComplexDouble, ..."""
    d = getattr(a, "dtype", a)
    name = d.name if isinstance(getattr(d, "name", None), str) else np.dtype(d).name
    return _TORCH_SCALAR.get(name, name)


def no_complex(kernel, a):
    """PyTorch's error for a kernel without a complex implementation (e.g. "lt_cpu")."""
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_scalar_name(a)}' ({a.dtype.name})")


def real_scalar(value, np_dtype):
    """A Python number for an array of ``np_dtype``: a complex number into a real array keeps its real
    part when its imaginary part is 0 and raises otherwise, as PyTorch's scalar conversion does."""
    if type(value) is complex and np.dtype(np_dtype).kind != "c":
        if value.imag:
            raise RuntimeError(f"value cannot be converted to type {dt.FROM_NP[np.dtype(np_dtype)].name} without "
                               f"overflow (a complex value {value} into a real tensor)")
        return value.real
    return value


def float_only(op, a, complex_ok=False):
    """The array itself when floating; PyTorch has no integer kernel for ``op`` (it raises), and no
    complex one unless ``complex_ok``."""
    if a.dtype.kind == "c" and not complex_ok:
        no_complex(op + "_cpu", a)
    if a.dtype.kind not in "fc" and a.dtype != BF16:
        raise RuntimeError(f"{op}: not implemented for dtype {dt.FROM_NP[a.dtype].name} (a floating point "
                           f"input is expected)")
    return a


def to_float(a):
    """Integer/bool arrays become the default float dtype (torch.exp(int_tensor) is float32);
    floating (bfloat16 included) and complex arrays stay as they are."""
    if a.dtype.kind not in "fc" and a.dtype != BF16:
        return a.astype(dt.get_default_dtype().np)
    return a


def broadcast_error(op, a, b):
    sa = list(np.shape(a))
    sb = list(np.shape(b))
    na, nb = len(sa), len(sb)
    for i in range(1, max(na, nb) + 1):
        x = sa[-i] if i <= na else 1
        y = sb[-i] if i <= nb else 1
        if x != y and x != 1 and y != 1:
            return RuntimeError(f"{op}: The size of tensor a ({x}) must match the size of tensor b ({y}) "
                                f"at non-singleton dimension {max(na, nb) - i}")
    return RuntimeError(f"{op}: shapes {sa} and {sb} cannot be broadcast together")


def wrap_dim(dim, ndim, op=None):
    n = max(ndim, 1)
    try:
        dim = dim.__index__()
    except AttributeError:
        raise TypeError(f"{op or 'dim'}: dim must be an int, got {type(dim).__name__}") from None
    if not -n <= dim < n:
        raise IndexError(f"{op + ': ' if op else ''}Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def check_bounds(op, index, size, dim, cls=RuntimeError):
    """Every entry of the integer array ``index`` in [0, size): PyTorch's gather, scatter,
    index_select and embedding refuse negative indices (NumPy would wrap them around)."""
    if index.size:
        lo = index.min()
        hi = index.max()
        if lo < 0 or hi >= size:
            bad = int(lo) if lo < 0 else int(hi)
            raise cls(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")


def wrap_dims(dim, ndim, op=None):
    """None -> all dims; int or sequence -> sorted tuple of non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        ds = tuple(wrap_dim(d, ndim, op) for d in dim)
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"{op}: dim {list(dim)} appears multiple times in the list of dims")
        return tuple(sorted(ds)) if ndim else ()
    d = wrap_dim(dim, ndim, op)
    return (d,) if ndim else ()  # a 0-d tensor's dim 0/-1: nothing to reduce


def shape_tuple(size, op="shape", nonneg=False, kw=None):
    """Accept f(2, 3), f((2, 3)), f([2, 3]) and Size, or the sequence as a keyword (``kw``: the value
    of size=/shape=/dims=, None when not given). ``nonneg``: sizes of a new tensor (no -1)."""
    if kw is not None:
        if size:
            raise TypeError(f"{op}() got the sizes both positionally and as a keyword")
        size = (kw,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    out = []
    for s in size:
        try:
            out.append(s.__index__())
        except AttributeError:
            raise TypeError(f"{op}: expected a sequence of ints, got {type(s).__name__}") from None
    if nonneg and any(s < 0 for s in out):
        raise RuntimeError(f"{op}: Trying to create tensor with negative dimension "
                           f"{min(out)}: {list(out)}")
    return tuple(out)


def is_tensor(x):
    return isinstance(x, D.Tensor)


def fmt_shape(s):
    return "[" + ", ".join(str(int(v)) for v in s) + "]"


def check_plain(op, *tensors):
    """Functions that read tensor values directly (not through the registry) refuse vmap-batched
    tensors: their value differs per sample, and such results have data-dependent shapes."""
    for t in tensors:
        w = getattr(t, "_wr", None)
        if w is not None and getattr(w, "kind", None) == "vmap":
            raise RuntimeError(f"vmap: {op} reads the values of a batched tensor (its result depends on "
                               f"the data, so it cannot be batched); compute it outside vmap or use a "
                               f"masked formulation")


def raw_values(t):
    """The array of ``t``'s values below every transform level (under vmap: every batch row at once),
    for checks that read data (index ranges, lengths) in composites that must also run under vmap;
    never for results."""
    while t._wr is not None:
        t = t._val
    return t._data


def _overlaps(a, b):
    """Whether two arrays share an element (False when that is too costly to decide, as PyTorch's
    overlap check answers 'too hard' and lets the op run)."""
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except Exception:  # noqa: BLE001 - numpy's TooHardError
        return False


def write_out(r, out, name=None, inputs=(), exact=False):
    """The ``out=`` keyword: copy the result ``r`` (a Tensor or a tuple of them) into ``out`` (resized to
    the result's shape when it differs, as PyTorch does) and return ``out``; ``out=None`` returns ``r``.
    ``inputs``: tensors ``out`` may not overlap (ops that read them while writing, as PyTorch checks);
    ``exact``: out must have the result's dtype (PyTorch's ops that do not cast into out=); ``name``:
    the op, for the errors."""
    if out is None:
        return r
    if isinstance(r, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(r):
            raise TypeError(f"out= expects a tuple of {len(r)} Tensors, got {type(out).__name__}")
        return type(r)(write_out(x, o, name, inputs, exact) for x, o in zip(r, out))
    if not is_tensor(out):
        raise TypeError(f"out= expects a Tensor, got {type(out).__name__}")
    what = f"{name}: " if name else ""
    if exact and r.dtype != out.dtype:
        raise RuntimeError(f"{what}Expected out tensor to have dtype {r.dtype.name}, but got {out.dtype.name} "
                           f"instead")
    if not dt.can_cast(r.dtype, out.dtype):
        raise RuntimeError(f"{what}result type {r.dtype.name} can't be cast to the desired output type "
                           f"{out.dtype.name}")
    if not out._meta and out.numel() > 1 and any(st == 0 and n > 1 for st, n in
                                                  zip(out._data.strides, out._data.shape)):
        raise RuntimeError(f"{what}unsupported operation: more than one element of the written-to tensor refers "
                           f"to a single memory location. Please clone() the tensor before performing the "
                           f"operation.")
    for x in inputs:
        if x is out or is_tensor(x) and not out._meta and x.numel() and out.numel() and \
                _overlaps(x._data, out._data):
            raise RuntimeError(f"{what}unsupported operation: some elements of the input tensor and the "
                               f"written-to tensor refer to a single memory location. Please clone() the tensor "
                               f"before performing the operation.")
    if out._data.shape != r._data.shape:  # PyTorch resizes out (fresh storage here)
        out._data = np.empty(r._data.shape, out._data.dtype)
    return out.copy_(r)


_ONES = {}


def ones_vec(xp, n, dtype):
    """A read-only vector of n ones (kept: row and column sums use it as a GEMV operand)."""
    key = (n, dtype)
    v = _ONES.get(key)
    if v is None:
        if len(_ONES) > 64:
            _ONES.clear()
        v = _ONES[key] = xp.ones(n, dtype)
        v.flags.writeable = False
    return v


def row_sums(xp, a):
    """Sums of a float32/float64 array over its (non-empty) last dim, keepdims: a GEMV with a ones
    vector (NumPy's reduction of short rows costs several times more)."""
    return xp.matmul(a, ones_vec(xp, a.shape[-1], a.dtype))[..., None]


_EXP_SUM_MIN = 1e-30  # a row's sum of exp from which its largest terms are normal numbers


def softmax_rows(xp, a, out=None):
    """Softmax of a float32/float64 ``a`` over its (non-empty) last dim, into ``out`` (not a;
    default a new array). Rows are exponentiated as they are: subtracting a row's maximum (a
    reduction over short rows that costs as much as the exp) only keeps exp from overflowing and a
    row's terms from all underflowing. A row whose sum of exp(a) is finite and at least 1e-30 has
    its largest terms normal, and its quotients are as accurate as with the maximum subtracted
    (a - max is rounded itself). Other rows (overflow, all -inf or far below zero, NaN) are done
    again with their maximum subtracted, as PyTorch does: each row's result depends on that row
    alone, so a split of the rows over threads gives the same bits."""
    if out is None:
        out = xp.empty(a.shape, a.dtype)
    with xp.errstate(over="ignore"):
        xp.exp(a, out=out)
    s = row_sums(xp, out)
    if s.min() >= _EXP_SUM_MIN and s.max() < xp.inf:  # (NaN: False)
        out /= s
        return out
    ok = (s >= _EXP_SUM_MIN) & (s < xp.inf)
    xp.divide(out, s, out=out, where=ok)
    bad = ~ok[..., 0]
    r = a[bad]
    with xp.errstate(invalid="ignore"):  # (a row of -inf or with +inf: NaN, as PyTorch's)
        r = r - r.max(-1, keepdims=True)
        xp.exp(r, out=r)
        r /= r.sum(-1, keepdims=True)
    out[bad] = r
    return out


def col_sums(xp, a):
    """The sum of each column of a 2-D a: a GEMV with a ones vector for float32/float64 (NumPy's
    reduction over the rows costs about twice as much), NumPy's sum otherwise."""
    r = a.shape[0]
    if r and (a.dtype == xp.float32 or a.dtype == xp.float64):
        return xp.matmul(ones_vec(xp, r, a.dtype), a)
    return a.sum(0)
