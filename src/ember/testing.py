"""ember.testing: ``assert_close`` with PyTorch's semantics and ``make_tensor``."""
import math
from collections.abc import Mapping, Sequence

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

# default (rtol, atol) per dtype, as torch.testing.assert_close documents them
_TOLS = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def _default_tols(*dtypes):
    rtol = atol = 0.0
    for d in dtypes:
        r, a = _TOLS.get(d.name, (0.0, 0.0))
        rtol, atol = max(rtol, r), max(atol, a)
    return rtol, atol


def _is_number(x):
    return isinstance(x, (bool, int, float, complex, np.generic)) and not isinstance(x, np.ndarray)


def _number_dtype(x):
    if isinstance(x, (bool, np.bool_)):
        return dt.bool_
    if isinstance(x, (int, np.integer)):
        return dt.int64
    return dt.float64


class _Mismatch(AssertionError):
    pass


def _fail(msg, path, user_msg):
    if user_msg is not None:
        m = user_msg(msg) if callable(user_msg) else user_msg
    else:
        m = msg
        if path:
            m += "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)
    raise AssertionError(m)


def _compare_leaf(actual, expected, path, rtol, atol, equal_nan, check_device, check_dtype,
                  check_layout, check_stride, msg):
    a_num, e_num = _is_number(actual), _is_number(expected)
    a_t, e_t = isinstance(actual, Tensor), isinstance(expected, Tensor)
    a_np, e_np = isinstance(actual, np.ndarray), isinstance(expected, np.ndarray)
    if a_num and e_num:
        if type(actual) is not type(expected) and not (isinstance(actual, np.generic) or
                                                       isinstance(expected, np.generic)):
            if check_dtype:
                _fail(f"The values for attribute 'dtype' do not match: {type(actual)} != "
                      f"{type(expected)}.", path, msg)
        ad, ed = _number_dtype(actual), _number_dtype(expected)
        a_arr, e_arr = np.asarray(actual, ad.np), np.asarray(expected, ed.np)
        kind = "Scalars"
    elif (a_t and e_t) or (a_np and e_np):
        if a_t:
            ad, ed = actual.dtype, expected.dtype
            a_arr, e_arr = actual.detach().numpy(), expected.detach().numpy()
        else:
            ad, ed = dt.FROM_NP[actual.dtype], dt.FROM_NP[expected.dtype]
            a_arr, e_arr = actual, expected
        if tuple(a_arr.shape) != tuple(e_arr.shape):
            _fail(f"The values for attribute 'shape' do not match: {_size(a_arr.shape)} != "
                  f"{_size(e_arr.shape)}.", path, msg)
        if check_dtype and ad is not ed:
            _fail(f"The values for attribute 'dtype' do not match: {_dname(ad)} != {_dname(ed)}.",
                  path, msg)
        if check_stride and a_t and actual.stride() != expected.stride():
            _fail(f"The values for attribute 'stride()' do not match: {actual.stride()} != "
                  f"{expected.stride()}.", path, msg)
        kind = "Tensor-likes"
    else:
        raise TypeError(f"Except for Python scalars, type equality is required, but got "
                        f"{type(actual)} and {type(expected)} instead.")
    if rtol is None and atol is None:
        rtol, atol = _default_tols(ad, ed)
    elif rtol is None or atol is None:
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    _compare_values(a_arr, e_arr, rtol, atol, equal_nan, kind, path, msg)


def _size(s):
    return "torch.Size([" + ", ".join(str(int(v)) for v in s) + "])"


def _dname(d):
    return "torch." + d.name


def _compare_values(a, e, rtol, atol, equal_nan, kind, path, msg):
    if a.dtype.kind == "b" or e.dtype.kind == "b":
        a, e = a.astype(np.int64), e.astype(np.int64)
    if a.dtype.kind in "fc" or e.dtype.kind in "fc":
        a64, e64 = a.astype(np.float64 if a.dtype.kind != "c" else np.complex128), \
            e.astype(np.float64 if e.dtype.kind != "c" else np.complex128)
    else:
        a64, e64 = a.astype(np.int64), e.astype(np.int64)
    if a64.size == 0:
        return
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a64 - e64) if a64.dtype.kind != "i" else np.abs(a64 - e64).astype(np.float64)
        tol = atol + rtol * np.abs(e64)
        ok = diff <= tol
        if a64.dtype.kind in "fc":
            ok |= (a64 == e64)  # equal infinities
            if equal_nan:
                ok |= np.isnan(a64) & np.isnan(e64)
    if ok.all():
        return
    n_bad, n = int((~ok).sum()), ok.size
    if n == 1 and a.ndim == 0 and kind == "Scalars":
        ad = float(diff.reshape(-1)[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            rd = float(ad / abs(e64.reshape(-1)[0])) if e64.reshape(-1)[0] != 0 else math.inf
        text = (f"{kind} are not close!\n\nExpected {e64.reshape(-1)[0]} but got {a64.reshape(-1)[0]}.\n"
                f"Absolute difference: {ad} (up to {atol} allowed)\n"
                f"Relative difference: {rd} (up to {rtol} allowed)")
        _fail(text, path, msg)
    dflat = np.where(np.isnan(diff), np.inf, diff).reshape(-1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.isnan(diff), np.inf, diff / np.abs(e64)).reshape(-1).astype(np.float64)
    rel = np.nan_to_num(rel, nan=0.0)
    ia, ir = int(np.argmax(dflat)), int(np.argmax(rel))
    where_a = tuple(int(v) for v in np.unravel_index(ia, a.shape)) if a.ndim else ()
    where_r = tuple(int(v) for v in np.unravel_index(ir, a.shape)) if a.ndim else ()
    text = (f"{kind} are not close!\n\n"
            f"Mismatched elements: {n_bad} / {n} ({100.0 * n_bad / n:.1f}%)\n"
            f"Greatest absolute difference: {dflat[ia]} at index {where_a} (up to {atol} allowed)\n"
            f"Greatest relative difference: {rel[ir]} at index {where_r} (up to {rtol} allowed)")
    _fail(text, path, msg)


def _walk(actual, expected, path, kw):
    if isinstance(actual, (Tensor, np.ndarray, str)) or _is_number(actual):
        return _compare_leaf(actual, expected, path, **kw)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual.keys()) != set(expected.keys()):
            _fail(f"The keys of the mappings do not match:\nactual: {sorted(map(str, actual))}\n"
                  f"expected: {sorted(map(str, expected))}", path, kw["msg"])
        for k in actual:
            _walk(actual[k], expected[k], path + [k], kw)
        return
    if isinstance(actual, Sequence) and isinstance(expected, Sequence):
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path,
                  kw["msg"])
        for i, (x, y) in enumerate(zip(actual, expected)):
            _walk(x, y, path + [i], kw)
        return
    return _compare_leaf(actual, expected, path, **kw)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False,
                 msg=None):
    """Asserts that ``actual`` and ``expected`` are close: ``|a - e| <= atol + rtol * |e|``.

    Tensors must agree in shape and (by default) dtype; default tolerances depend on the dtype
    (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7, 1e-7; integers and bool: exact). Sequences
    and mappings are compared element by element. Raises AssertionError with PyTorch's wording.
    """
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    kw = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
              check_dtype=check_dtype, check_layout=check_layout, check_stride=check_stride, msg=msg)
    _walk(actual, expected, [], kw)


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated PyTorch helper: like assert_close without dtype checks, numbers promoted."""
    if not isinstance(actual, Tensor):
        from ._creation import tensor
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        from ._creation import tensor
        expected = tensor(expected, dtype=actual.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False,
                 msg=msg or None)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of the given shape and dtype filled with values from [low, high)
    (floats default to [-9, 9), integers to [-9, 10), uint8 from 0, bool either value)."""
    from ._creation import tensor as _tensor
    from ._creation import default_generator
    from .ops._util import shape_tuple
    shape = shape_tuple(shape, "make_tensor")
    d = dtype
    rng = default_generator._rng
    npd = d.np
    if d is dt.bool_:
        arr = rng.random(shape) < 0.5
    elif d.is_floating_point:
        lo = -9.0 if low is None else float(low)
        hi = 9.0 if high is None else float(high)
        if lo >= hi and not (lo == hi):
            raise ValueError(f"make_tensor: low ({lo}) must be less than high ({hi})")
        arr = rng.uniform(lo, hi, shape).astype(npd) if lo != hi else np.full(shape, lo, npd)
    else:
        info = np.iinfo(npd)
        lo = (0 if npd == np.uint8 else -9) if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high)
        lo, hi = max(lo, info.min), min(hi, info.max + 1)
        arr = rng.integers(lo, hi, shape).astype(npd)
    if exclude_zero:
        rep = np.asarray(1 if not d.is_floating_point else np.finfo(npd).tiny, npd)
        if d.is_floating_point:
            rep = np.asarray(float(lo + hi) / 2 if (lo + hi) != 0 else (hi if hi != 0 else 1.0), npd)
        arr = np.where(arr == 0, rep, arr).astype(npd)
    if noncontiguous and arr.size > 1:
        big = np.repeat(arr[..., None], 2, axis=-1)
        t = _tensor(big)[..., 0]
    else:
        t = _tensor(arr)
    if memory_format is not None:
        t = t.contiguous(memory_format=memory_format)
    if requires_grad:
        t.requires_grad_(True)
    return t
