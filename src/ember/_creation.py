"""Tensor creation and random numbers (PyTorch's CPU random streams: see _cpu_rng)."""
import collections.abc as _abc
import math

import numpy as np

from . import _dispatch as D
from . import _dtype as dt
from ._memory_format import empty_array
from ._cpu_rng import MT as _MT, fma64 as _fma64, libm as _libm, fma32_ as _fma32_
from ._tensor import Tensor, device as _device_cls
from .ops import _util as U

_new = D._new_tensor
_new_obj = object.__new__
_state = D.state
_one_elem = [np.zeros(1, np.float32)]  # tensor([x])'s template, in the default dtype


# ----------------------------------------------------------------------------- generators

_DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed


class Generator:
    """A CPU random generator with PyTorch's streams: a 32-bit Mersenne Twister seeded with the
    seed, the same numbers as torch.Generator for the same seed, its state in PyTorch's layout (a
    5056-byte uint8 tensor; a state saved by one loads in the other)."""

    def __init__(self, device="cpu"):
        self.device = _device_cls(device)
        if self.device.type not in ("cpu", "meta"):
            raise RuntimeError(f"Generator: device type {self.device.type} is not available in this build "
                               "(ember runs on the CPU)")
        self._mt = _MT(_DEFAULT_SEED)

    def manual_seed(self, seed):
        """Seed this generator (PyTorch's CPU stream: the same seed gives PyTorch's numbers)."""
        if isinstance(seed, Tensor):
            seed = seed.item()
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"manual_seed expected an int, got {type(seed).__name__}")
        seed = int(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise RuntimeError(f"Overflow when unpacking long long: seed {seed} is outside [-2**63, 2**64)")
        self._mt.manual_seed(seed)
        return self

    def seed(self):
        """Seed this generator from a fresh random seed and return it."""
        import os
        s = int.from_bytes(os.urandom(8), "little")
        self._mt.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed this generator was last seeded with."""
        return self._mt.seed

    def get_state(self):
        """The generator's state as a uint8 tensor (PyTorch's 5056-byte layout)."""
        return _new(np.frombuffer(self._mt.get_state_bytes(), np.uint8).copy())

    def set_state(self, new_state):
        """Restore a state from get_state() (PyTorch's states load too)."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dt.uint8:
            raise TypeError(f"expected a torch.ByteTensor (uint8) as the generator state, but got a tensor "
                            f"of dtype {new_state.dtype}")
        self._mt.set_state_bytes(np.ascontiguousarray(new_state._data).tobytes(), "set_state")
        return self

    def clone_state(self):
        """A new Generator in this one's state."""
        g = Generator.__new__(Generator)
        g.device = self.device
        g._mt = _MT(0)
        g._mt.copy_from(self._mt)
        return g

    def __reduce__(self):
        return (_restore_generator, (self._mt.get_state_bytes(),))

    # NumPy-Generator-like helpers for internal callers (PyTorch's streams underneath)
    @property
    def _rng(self):
        return self

    def random(self, size=None, dtype=np.float64):
        """ember's own (not a torch method): uniform [0, 1) floats as a NumPy array, from this generator's
        stream."""
        shape = () if size is None else (tuple(size) if isinstance(size, (tuple, list)) else (size,))
        n = math.prod(shape)
        d = np.float64 if np.dtype(dtype) == np.float64 else np.float32
        a = self._mt.uniform(n, d).reshape(shape)
        return a if size is not None else a[()]

    def uniform(self, low=0.0, high=1.0, size=None):
        """ember's own (not a torch method): uniform [low, high) floats as a NumPy array."""
        return low + (high - low) * self.random(size)

    def standard_normal(self, size=None, dtype=np.float64):
        """ember's own (not a torch method): N(0, 1) samples as a NumPy array."""
        shape = () if size is None else (tuple(size) if isinstance(size, (tuple, list)) else (size,))
        d = np.float64 if np.dtype(dtype) == np.float64 else np.float32
        return _normal_array(self._mt, shape, d)

    def integers(self, low, high=None, size=None):
        """ember's own (not a torch method): integers in [low, high) as a NumPy array."""
        if high is None:
            low, high = 0, low
        shape = () if size is None else (tuple(size) if isinstance(size, (tuple, list)) else (size,))
        a = _randint_array(self._mt, int(low), int(high), math.prod(shape), np.int64).reshape(shape)
        return a if size is not None else int(a)

    def permutation(self, n):
        """ember's own (not a torch method): a random permutation of range(n) as a NumPy array."""
        return _randperm_array(self._mt, int(n))


def _restore_generator(state):
    g = Generator()
    g._mt.set_state_bytes(state)
    return g


default_generator = Generator()
default_generator.seed()  # an unseeded program starts from a fresh seed in each process, as PyTorch's does


def _gen(generator=None):
    if D.state.levels:
        D.random_level()  # vmap(randomness='error') refuses random draws
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a ember.Generator as generator=, got {type(generator).__name__}")
    return generator


def _mt(generator=None):
    """The stream of generator= (the default generator's when None)."""
    return _gen(generator)._mt


def manual_seed(seed):
    """Seed the default generator (and return it): the same seed gives PyTorch's CPU random numbers."""
    return default_generator.manual_seed(seed)


def seed():
    """Seed the default generator from a fresh random seed and return it."""
    return default_generator.seed()


def initial_seed():
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor (PyTorch's layout)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default generator's state from get_rng_state() (PyTorch's too)."""
    default_generator.set_state(new_state)


# ----------------------------------------------------------------------------- from data


def _infer(data):
    """Does nested Python data hold floats / ints / bools only (for dtype inference)?"""
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, np.ndarray):
        return dt.from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        return dt.from_numpy_dtype(data.dtype)
    if isinstance(data, bool):
        return dt.bool_
    if isinstance(data, int):
        return dt.int64
    if isinstance(data, float):
        return dt.get_default_dtype()
    if isinstance(data, complex):
        return dt.default_complex()
    if isinstance(data, (list, tuple)):
        r = None
        for x in data:
            d = _infer(x)
            r = d if r is None else dt.promote_types(r, d)
        return r if r is not None else dt.get_default_dtype()
    raise TypeError(f"tensor(): Could not infer dtype of {type(data).__name__}")


def _flatten_tensors(data):
    if isinstance(data, Tensor):
        # a tensor inside a list is a number to PyTorch: tensor([t1, t2]) of one-element tensors is 1-d
        if data._data.size != 1:
            raise ValueError(f"tensor(): only one element tensors can be converted to Python scalars (got a "
                             f"tensor of shape {list(data.shape)} inside the data)")
        return data._data.reshape(())
    if isinstance(data, (list, tuple)):
        return [_flatten_tensors(x) for x in data]
    return data


def _to_array(data, dtype=None):
    if isinstance(data, Tensor):
        a = data._data
        return a.astype(dtype.np) if dtype is not None else a.copy()
    foreign = _foreign_array(data)
    if foreign is not None:
        return foreign.astype(dtype.np) if dtype is not None else foreign.copy()
    if isinstance(data, range) or (isinstance(data, _abc.Sequence) and not isinstance(data, (list, tuple, str, bytes))):
        data = list(data)  # range, collections.deque and other sequences, as PyTorch takes them
    if dtype is None:
        dtype = _infer(data)
    flat = _flatten_tensors(data)
    try:
        a = np.array(flat, dtype=dtype.np)
    except OverflowError as e:
        if dtype.np.kind not in "iu":
            raise
        try:  # an explicit integer dtype wraps around as PyTorch's conversion does (-1 -> 255 for uint8)
            a = np.array(flat, dtype=np.int64).astype(dtype.np)
        except OverflowError:
            raise ValueError(f"tensor(): Overflow when unpacking long long ({e})") from None
    except (ValueError, TypeError) as e:
        raise ValueError(f"tensor(): could not build a tensor from the data ({e})") from None
    if a.dtype == object:
        raise TypeError("tensor(): expected nested sequences of numbers with a regular shape")
    return a


def _is_meta(device):
    return device is not None and _device_cls(device).type == "meta"


def _meta_new(shape, d, requires_grad=False, memory_format=None):
    """A 'meta' tensor: shape, dtype and strides only, never data (a zero-strided view of one element)."""
    shape = tuple(shape)
    t = _new(np.broadcast_to(np.zeros((), d), shape))
    t._meta = True
    from ._memory_format import channels_last, channels_last_3d
    if (memory_format is channels_last and len(shape) == 4) or (memory_format is channels_last_3d
                                                                and len(shape) == 5):
        c = shape[1]
        sp = [0] * len(shape)       # NHWC / NDHWC order: C fastest, then the spatial dims, then N
        acc = c
        for i in range(len(shape) - 1, 1, -1):
            sp[i] = acc
            acc *= shape[i]
        sp[1], sp[0] = 1, acc
        t._mstride = tuple(sp)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _finish(arr, requires_grad=False, device=None):
    if device is None and not requires_grad and not D.grad_mode.inference:
        return _new(arr)
    if device is not None and _device_cls(device).type == "meta":
        t = _new(np.broadcast_to(np.zeros((), arr.dtype), arr.shape))
        t._meta = True
    else:
        t = _new(arr)
    if D.grad_mode.inference and not D.grad_mode.enabled:
        t._inference = True
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of data (nested lists, numbers, NumPy arrays, tensors), its dtype inferred as
    PyTorch infers it.

    Differences from PyTorch: pin_memory=True is accepted and ignored, where PyTorch's CPU-only build raises
    RuntimeError; a device other than 'cpu' and 'meta' raises RuntimeError where PyTorch's CPU-only build
    raises AssertionError for 'cuda'."""
    if dtype is None and device is None:
        # fast path: a float or a flat list of floats (the common small-tensor case)
        tp = type(data)
        if tp is float or (tp is list and data and (
                type(data[0]) is float if len(data) == 1 else _all_floats(data))):
            npdt = dt._default[0].np
            if tp is list and len(data) == 1 and -3.4e38 < data[0] < 3.4e38:
                # tensor([x]): a copy of a one-element template, then one store (a third of
                # np.array's cost on a list; huge values and nan take np.array, which casts them
                # to float32 without an overflow warning)
                tm = _one_elem[0]
                if tm.dtype is not npdt:
                    tm = _one_elem[0] = np.zeros(1, npdt)
                arr = tm.copy()
                arr[0] = data[0]
            else:
                arr = np.array(data, npdt)
            t = _new_obj(Tensor)
            t._data = arr
            t._rg = True if requires_grad else False
            t._fn = None
            t._nr = 0
            t._vc = None
            t._base = None
            t._grad = None
            # (inference mode is on only inside a block that also turns state.simple off)
            if not _state.simple and D.grad_mode.inference and not D.grad_mode.enabled:
                t._inference = True
                if requires_grad:
                    t.requires_grad_(True)  # raises as PyTorch does
            return t
    return _finish(_to_array(data, dtype), requires_grad, device)


def _all_floats(xs):
    for x in xs:
        if type(x) is not float:
            return False
    return True


def as_tensor(data, dtype=None, device=None):
    """A tensor from data, sharing memory with a NumPy array or tensor of the right dtype (a copy otherwise)."""
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype is dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        a = data if dtype is None else data.astype(dtype.np, copy=False)
        dt.from_numpy_dtype(a.dtype)
        return _new(dt.canonical(a))
    foreign = _foreign_array(data)
    if foreign is not None:  # a PyTorch/JAX/CuPy tensor: shared through DLPack, as torch.as_tensor does
        return as_tensor(foreign, dtype, device)
    return _finish(_to_array(data, dtype), False, device)


def _foreign_array(data):
    """The memory of another library's array (``__dlpack__`` first, zero-copy; else ``__array__``)
    as a NumPy array, or None for plain Python data."""
    if isinstance(data, (list, tuple, int, float, bool, complex, range)) or data is None:
        return None
    if isinstance(data, np.ndarray) and data.dtype == dt.bfloat16.np:  # (NumPy's DLPack export refuses it)
        return data
    if hasattr(data, "__dlpack__"):
        from .utils.dlpack import from_dlpack
        return from_dlpack(data)._data
    if hasattr(data, "__array__"):
        return np.asarray(data)
    return None


asarray = as_tensor


def from_numpy(ndarray):
    """A tensor sharing memory with a NumPy array."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt.from_numpy_dtype(ndarray.dtype, "np.ndarray")
    return _new(dt.canonical(ndarray))


def frombuffer(buffer, *, dtype, count=-1, offset=0):
    """A 1-D tensor sharing memory with a Python buffer (bytes-like object)."""
    return _new(np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset))


# ----------------------------------------------------------------------------- filled tensors


def _dtype(dtype, default=None):
    if dtype is None:
        return (default or dt.get_default_dtype()).np
    if not isinstance(dtype, dt.dtype):
        if dtype in (float,):
            return dt.float64.np
        if dtype in (int,):
            return dt.int64.np
        if dtype in (bool,):
            return dt.bool_.np
        raise TypeError(f"dtype must be an ember.dtype, got {dtype!r}")
    return dtype.np


def _out_kw(fn):
    """``out=`` for the factories: the result takes out's dtype unless dtype= is given, and is written
    into ``out`` (resized to the requested shape)."""
    import functools

    @functools.wraps(fn)
    def f(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = out.dtype
        return U.write_out(fn(*args, **kwargs), out)
    return f


@_out_kw
def empty(*args, size=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None,
          layout=None, pin_memory=False):
    """An uninitialised tensor of the given shape.

    Differences from PyTorch: pin_memory=True is accepted and ignored, where PyTorch's CPU-only build raises
    RuntimeError; a device other than 'cpu' and 'meta' raises RuntimeError where PyTorch's CPU-only build
    raises AssertionError for 'cuda'."""
    shape = U.shape_tuple(args, "empty", nonneg=True, kw=size)
    if _is_meta(device):
        return _meta_new(shape, _dtype(dtype), requires_grad, memory_format)
    return _finish(empty_array(np, shape, _dtype(dtype), memory_format), requires_grad, device)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor with the given shape and strides."""
    d = np.dtype(_dtype(dtype))
    size = tuple(size)
    if _is_meta(device):
        return _meta_new(size, d, requires_grad)
    n = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    buf = np.empty(max(n, 0), d)
    a = np.lib.stride_tricks.as_strided(buf, size, tuple(s * d.itemsize for s in stride))
    return _finish(a, requires_grad, device)


@_out_kw
def zeros(*args, size=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None, layout=None):
    """A tensor of zeros.

    Differences from PyTorch: a device other than 'cpu' and 'meta' raises RuntimeError where PyTorch's
    CPU-only build raises AssertionError for 'cuda'; pin_memory is not a keyword here (TypeError)."""
    shape = U.shape_tuple(args, "zeros", nonneg=True, kw=size)
    if _is_meta(device):
        return _meta_new(shape, _dtype(dtype), requires_grad, memory_format)
    a = empty_array(np, shape, _dtype(dtype), memory_format, fill=0)
    return _finish(a, requires_grad, device)


@_out_kw
def ones(*args, size=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None, layout=None):
    """A tensor of ones.

    Differences from PyTorch: a device other than 'cpu' and 'meta' raises RuntimeError where PyTorch's
    CPU-only build raises AssertionError for 'cuda'."""
    shape = U.shape_tuple(args, "ones", nonneg=True, kw=size)
    if _is_meta(device):
        return _meta_new(shape, _dtype(dtype), requires_grad, memory_format)
    a = empty_array(np, shape, _dtype(dtype), memory_format, fill=1)
    return _finish(a, requires_grad, device)


@_out_kw
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    """A tensor filled with fill_value (its dtype inferred from the value when none is given)."""
    shape = U.shape_tuple((size,), "full", nonneg=True)
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    v = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
    v = U.real_scalar(v, _dtype(dtype))
    if _is_meta(device):
        return _meta_new(shape, _dtype(dtype), requires_grad)
    try:
        a = np.full(shape, v, _dtype(dtype))
    except OverflowError:
        raise RuntimeError(f"full: value {v} cannot be converted to type {dtype} without overflow") from None
    return _finish(a, requires_grad, device)


def _like(input, dtype, memory_format, fill=None):
    d = (dtype or input.dtype).np
    from ._memory_format import preserve_format, like_array
    if fill is not None:
        fill = U.real_scalar(fill, d)
    a = like_array(np, input._data, d, memory_format or preserve_format, fill)
    return a


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    """An uninitialised tensor with input's shape (and dtype, layout unless given)."""
    if _is_meta(device or (input.device if input._meta else None)):
        return _meta_new(input.shape, (dtype or input.dtype).np, requires_grad)
    return _finish(_like(input, dtype, memory_format), requires_grad, device or (input.device if input._meta else None))


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    """Zeros with input's shape (and dtype, layout unless given).

    Differences from PyTorch: a device other than 'cpu' and 'meta' raises RuntimeError where PyTorch's
    CPU-only build raises AssertionError for 'cuda'."""
    if _is_meta(device or (input.device if input._meta else None)):
        return _meta_new(input.shape, (dtype or input.dtype).np, requires_grad)
    return _finish(_like(input, dtype, memory_format, 0), requires_grad, device or (input.device if input._meta else None))


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    """Ones with input's shape (and dtype, layout unless given)."""
    if _is_meta(device or (input.device if input._meta else None)):
        return _meta_new(input.shape, (dtype or input.dtype).np, requires_grad)
    return _finish(_like(input, dtype, memory_format, 1), requires_grad, device or (input.device if input._meta else None))


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    """fill_value with input's shape (and dtype, layout unless given)."""
    if _is_meta(device or (input.device if input._meta else None)):
        return _meta_new(input.shape, (dtype or input.dtype).np, requires_grad)
    return _finish(_like(input, dtype, memory_format, fill_value), requires_grad, device)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """An n x m matrix with ones on the diagonal."""
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    if _is_meta(device):
        return _meta_new((n, n if m is None else m), _dtype(dtype), requires_grad)
    return _finish(np.eye(n, m, dtype=_dtype(dtype)), requires_grad, device)


@_out_kw
def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    """Values from start to end (excluded) by step.

    With an integer dtype (or out=) and fractional bounds or step, start and step are truncated to integers
    as PyTorch does: for int64 the end too, and the count is that of the integer range (a step truncated
    to 0 is a ValueError); for the other integer dtypes the count is ceil((end - start) / step) of the
    given values."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if dtype is not None and dtype.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dtype.name}'")
    if dtype is None:
        dtype = dt.int64 if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals) \
            else dt.get_default_dtype()
    s, e, st = vals
    if not all(math.isfinite(v) for v in (s, e)):
        raise RuntimeError(f"arange: unsupported range: {s} -> {e} (the bounds must be finite)")
    if (e - s) * st < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign (start={start}, "
                           f"end={end}, step={step})")
    integral = not dtype.is_floating_point and dtype is not dt.bool_
    if integral and dtype is dt.int64:
        s0, e0, k = int(s), int(e), int(st)   # (int() truncates toward zero)
        if k == 0:
            raise ValueError(f"arange: step must be nonzero (an int64 result truncates the step {step} to 0)")
        span = e0 - s0 + k - (1 if k > 0 else -1)
        n = max(abs(span) // abs(k) * (1 if (span >= 0) == (k > 0) else -1), 0)
    else:
        n = max(int(np.ceil((e - s) / st)), 0)
    if _is_meta(device):
        return _meta_new((n,), dtype.np, requires_grad)
    if integral:
        # start + i * step in int64 with start and step truncated (PyTorch), wrapped into the dtype
        a = (int(s) + int(st) * np.arange(n, dtype=np.int64)).astype(dtype.np)
    elif dtype.is_floating_point:
        a = (s + st * np.arange(n, dtype=np.float64)).astype(dtype.np)
    else:
        a = np.arange(s, e, st, dtype=dtype.np)
    return _finish(a, requires_grad, device)


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Values from start to end (included) by step (deprecated in PyTorch; use arange)."""
    if end is None:
        start, end = 0, start
    n = int(np.floor((end - start) / step)) + 1
    d = dtype or dt.get_default_dtype()
    return _finish((start + step * np.arange(n, dtype=np.float64)).astype(d.np), requires_grad, device)


def _span(start, end, dtype, name):
    """start and end as Python numbers (0-dim tensors too); truncated to integers for an integer
    dtype, as PyTorch does before spacing the points."""
    for v, what in ((start, "start"), (end, "end")):
        if isinstance(v, Tensor) and v.dim() != 0:
            raise RuntimeError(f"{name}(): argument '{what}' must be a 0-dimensional tensor, got a tensor with "
                               f"{v.dim()} dimensions")
    a, b = float(start), float(end)
    if np.dtype(dtype).kind in "iub":
        a, b = float(int(a)), float(int(b))
    return a, b


@_out_kw
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    """steps values evenly spaced from start to end (both included)."""
    d = _dtype(dtype)
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    if _is_meta(device):
        return _meta_new((steps,), d, requires_grad)
    if any(isinstance(v, Tensor) and v._wr is not None for v in (start, end)):
        return _spaced_ops(start, end, steps, dtype, None)
    a, b = _span(start, end, d, "linspace")
    return _finish(np.linspace(a, b, steps).astype(d), requires_grad, device)


def _spaced_ops(start, end, steps, dtype, base):
    """linspace/logspace from 0-dim tensors under a transform (vmap gives each batch element its own
    start and end): composed of registry ops instead of reading the numbers."""
    from .ops.elementwise import where
    dt = _dtype(dtype)
    fdt = dt if np.dtype(dt).kind == "f" else np.float64
    from ._dtype import FROM_NP
    f = FROM_NP[np.dtype(fdt)]
    a = start.to(f) if isinstance(start, Tensor) else float(start)
    b = end.to(f) if isinstance(end, Tensor) else float(end)
    i = arange(steps, dtype=f)
    step = (b - a) / max(steps - 1, 1)
    # from the start up to the middle, from the end after it (both ends exact)
    r = where(i < steps / 2, a + i * step, b - (steps - 1 - i) * step)
    if base is not None:
        r = float(base) ** r
    return r.to(FROM_NP[np.dtype(dt)])


@_out_kw
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False, out=None,
             layout=None):
    """steps values base ** x for x evenly spaced from start to end."""
    d = _dtype(dtype)
    if steps < 0:
        raise RuntimeError(f"logspace(): number of steps must be non-negative, got {steps}")
    if _is_meta(device):
        return _meta_new((steps,), d, requires_grad)
    if any(isinstance(v, Tensor) and v._wr is not None for v in (start, end)):
        return _spaced_ops(start, end, steps, dtype, base)
    a, b = _span(start, end, d, "logspace")
    return _finish(np.logspace(a, b, steps, base=float(base)).astype(d), requires_grad, device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The 2 x N indices of the lower triangle of a row x col matrix."""
    if dtype is not None and _dtype(dtype).kind == "c":
        U.no_complex("tril_indices", np.empty(0, _dtype(dtype)))
    r, c = np.tril_indices(row, offset, col)
    return _new(np.stack([r, c]).astype(_dtype(dtype, dt.int64)))


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The 2 x N indices of the upper triangle of a row x col matrix."""
    if dtype is not None and _dtype(dtype).kind == "c":
        U.no_complex("triu_indices", np.empty(0, _dtype(dtype)))
    r, c = np.triu_indices(row, offset, col)
    return _new(np.stack([r, c]).astype(_dtype(dtype, dt.int64)))


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-D tensors (indexing 'ij' or 'xy')."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    n = len(tensors)
    shape = [t.numel() for t in tensors]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, t in enumerate(tensors):
        view = [1] * n
        j = i
        if indexing == "xy" and n >= 2 and i < 2:
            j = 1 - i
        view[j] = -1
        out.append(t.reshape(view).expand(shape))
    return tuple(out)


# ----------------------------------------------------------------------------- random
# The samplers draw from PyTorch's streams (ember._cpu_rng): the same numbers as PyTorch's CPU
# kernels for the same seed. Elements are filled in PyTorch's iteration order: logical order for a
# contiguous tensor, memory order (dims by decreasing stride) for a permuted one.

_RANDINT_64 = 1 << 28  # randint ranges from here on take 64-bit draws (PyTorch's CPU kernel, observed)


def _float_np(dtype):
    d = np.dtype(_dtype(dtype))
    if d.kind == "c":
        return np.dtype(np.float32 if d == np.complex64 else np.float64), d
    return d if d in (np.float32, np.float64) else np.float32, d


def _iter_view(a):
    """a view of ``a`` whose C order is PyTorch's iteration order over ``a``'s elements."""
    if a.ndim < 2 or a.flags.c_contiguous:
        return a
    order = sorted(range(a.ndim), key=lambda i: -a.strides[i] if a.shape[i] > 1 else 0)
    return a.transpose(order)


def _is_dense_contig(a):
    return a.flags.c_contiguous


def _uniform_values(mt, n, d, low=0.0, high=1.0, out=None):
    """n uniforms on [low, high) as PyTorch's uniform_ makes them for an output of dtype d (written
    into out, a contiguous array of n elements of d, when given: float32 and float64 are made
    there directly)."""
    if d == np.float32 and out is not None and not (low == 0.0 and high == 1.0):
        # the bounds in float32, one fused multiply-add, straight from the draws into out
        lo, hi = np.float32(low), np.float32(high)
        v = mt.uniform_f32_scaled(n, hi - lo, lo, out)
    else:
        direct = out is not None and d in (np.float32, np.float64)
        u = (mt.uniform_f64 if d == np.float64 else mt.uniform_f32)(n, out if direct else None)
        if low == 0.0 and high == 1.0:
            if d in (np.float32, np.float64):
                return u  # below 1 by construction
            v = u.astype(d)
        elif d == np.float64:
            v = _fma64(u, float(high) - float(low), float(low))
        else:
            # the bounds in float32 (for float16 too), one fused multiply-add
            lo, hi = np.float32(low), np.float32(high)
            v = _fma32_(u, hi - lo, lo).astype(d, copy=False)
        if out is not None and v is not out:
            np.copyto(out, v, casting="unsafe")
            v = out
    # a value rounded up to the upper bound becomes the lower one: the range stays [low, high)
    top = np.asarray(high).astype(d)
    big = v.max() if v.size else top
    if not big < top:  # (no value is above it: the rounding is monotonic; NaN checks them all)
        v[v == top] = np.asarray(low).astype(d)
    return v


def _normal_values(mt, n, d, mean=0.0, std=1.0, contiguous=True, out=None):
    """n normals as PyTorch's normal_ makes them for an output of dtype d: the blocked Box-Muller
    for 16 or more contiguous float32/float64 elements, else the scalar path (the cached pair).
    Written into out (a contiguous array of n elements of d) when given."""
    if n >= 16 and contiguous and d in (np.float32, np.float64, np.float16):
        return mt.normal_fill(n, d, float(mean), float(std), out)
    z = mt.normal_scalar(n)
    if not (mean == 0.0 and std == 1.0):
        z = _fma64(z, float(std), float(mean))
    if out is None:
        return z.astype(d, copy=False)
    np.copyto(out, z, casting="unsafe")
    return out


def _normal_array(mt, shape, d, mean=0.0, std=1.0):
    return _normal_values(mt, math.prod(shape), d, mean, std).reshape(shape)


def _randint_array(mt, low, high, n, d):
    r = high - low
    if r >= _RANDINT_64:
        v = mt.u64(n) % np.uint64(r) if r < (1 << 64) else mt.u64(n)
        return (v.astype(np.int64) + np.int64(low)).astype(d) if low else v.astype(np.int64).astype(d)
    v = (mt.u32(n) % np.uint64(r)).astype(np.int64)
    if low:
        v += low
    return v.astype(d)


_PERM_LOOP = 64  # below this n the swap loop in Python costs less than the vectorised form


def _randperm_array(mt, n):
    """Fisher-Yates as PyTorch's CPU randperm runs it: step i (0 <= i < n - 1) swaps positions i and
    z[i] = i + (32-bit draw % (n - i)). From _PERM_LOOP elements on, the swaps are resolved without a
    sequential loop (_swaps_to_perm)."""
    if n <= 0:
        return np.zeros(0, np.int64)
    if n < _PERM_LOOP:
        raw = mt.u32(n - 1).tolist()
        perm = list(range(n))
        for i, r in enumerate(raw):
            j = i + r % (n - i)
            perm[i], perm[j] = perm[j], perm[i]
        return np.array(perm, np.int64)
    # r % (n - i) through float64: r < 2**32 and n - i < 2**53 are exact, the quotient's floor is the
    # true one or one too many (then the remainder comes out negative and is put right)
    r = mt.draws32(n - 1).astype(np.float64)
    d = np.arange(n, 1, -1, dtype=np.float64)
    q = np.divide(r, d)
    np.floor(q, out=q)
    q *= d
    r -= q
    np.less(r, 0, out=q, casting="unsafe")
    q *= d
    r += q
    it = np.int32 if n < 1 << 30 else np.int64
    idx = np.arange(n - 1, dtype=it)
    z = r.astype(it)
    z += idx
    return _swaps_to_perm(z, idx, n)


def _swaps_to_perm(z, idx, n):
    """The permutation left by swapping positions i and z[i] (z[i] >= i; idx: 0..n-2 in z's dtype) for
    i = 0, 1, ..., n - 2 in turn, starting from 0..n-1, without a sequential loop. Position i is final
    after step i: it receives the value then at position z[i]. With W[k] the value at position k just
    before step k (for k = n - 1: at the end), a position p >= i at time i holds W[k] for the last
    step k < i that swapped into p (k -> p moved W[k] there), or p itself if none; so
      W[k] = W[last step before k with target k] (else k)   -- chains resolved by pointer jumping,
      perm[i] = W[i] for a self-swap (z[i] == i), else W[previous step with target z[i]] (else z[i]),
    the steps grouped by target, in order, by one sort of (target, step) pairs: the last of each
    group gives W's links, each step's predecessor in its group its value. (np.compress and
    arithmetic selects: boolean indexing and np.where branch on every element of a random mask,
    several times slower here.)"""
    it = z.dtype
    s = np.compress(z != idx, idx)  # the steps that move something
    if not s.size:
        return np.arange(n, dtype=np.int64)
    key = np.take(z, s, mode="clip").astype(np.int64)
    key *= n
    key += s
    key.sort()
    kz = key // n
    key -= kz * n
    ks = key.astype(it)  # the steps in order of (target, step)
    kz = kz.astype(it)
    first = np.empty(ks.size, bool)  # the first step of its target's group
    first[0] = True
    np.not_equal(kz[1:], kz[:-1], out=first[1:])
    last = np.empty(ks.size, bool)
    last[-1] = True
    last[:-1] = first[1:]
    w = np.arange(n, dtype=it)
    w[np.compress(last, kz)] = np.compress(last, ks)  # (targets unique here)
    nxt = np.empty_like(w)
    while True:
        np.take(w, w, out=nxt, mode="clip")
        if np.array_equal(nxt, w):
            break
        w, nxt = nxt, w
    perm = w.astype(np.int64)  # self-swaps and the last position
    vals = np.take(w, ks[:-1], mode="clip")  # W of the previous step with the same target,
    vals -= kz[1:]                           # or the target itself for a group's first step
    vals *= ~first[1:]
    vals += kz[1:]
    perm[ks[0]] = kz[0]
    perm[ks[1:]] = vals
    return perm


def _numpy_rng(generator=None):
    """A NumPy Generator seeded by one draw from ember's stream, for the samplers PyTorch's stream has
    no documented algorithm for here (gamma, binomial, von Mises rejection): reproducible under
    manual_seed, not PyTorch's numbers."""
    return np.random.default_rng(_random_seed(generator))


def _random_seed(generator=None):
    """``int(torch.empty((), dtype=torch.int64).random_(generator=g))``: a fresh seed from the stream
    (one 64-bit draw, reduced mod 2**63), as the data samplers and DataLoader take them."""
    return _mt(generator).next64() % (1 << 63)


def _fill(arr, make, *args):
    """Fill numpy array ``arr`` in PyTorch's iteration order with make(n, *args) values."""
    v = _iter_view(arr)
    v[...] = make(arr.size, *args).reshape(v.shape)
    return arr


@_out_kw
def rand(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None):
    """Uniform samples in [0, 1) (PyTorch's CPU stream)."""
    shape = U.shape_tuple(args, "rand", nonneg=True, kw=size)
    r = D.batched_draw(lambda s: rand(s, generator=generator, dtype=dtype), shape) if D.state.levels else None
    if r is not None:
        return r.requires_grad_(requires_grad) if requires_grad else r
    d = _dtype(dtype)
    if np.dtype(d).kind not in "fcV":
        raise RuntimeError(f"\"check_uniform_bounds\" not implemented for '{dt.from_numpy_dtype(np.dtype(d))}'")
    if _is_meta(device):  # no data, no draw: the generator does not advance
        return _meta_new(shape, d, requires_grad)
    if np.dtype(d).kind == "c":  # filled through its real view, as PyTorch fills it
        return _finish(_new(empty_array(np, shape, d)).uniform_(generator=generator)._data, requires_grad, device)
    a = _uniform_values(_mt(generator), math.prod(shape), d).reshape(shape)
    return _finish(a, requires_grad, device)


@_out_kw
def randn(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None):
    """Standard normal samples (PyTorch's CPU stream)."""
    shape = U.shape_tuple(args, "randn", nonneg=True, kw=size)
    r = D.batched_draw(lambda s: randn(s, generator=generator, dtype=dtype), shape) if D.state.levels else None
    if r is not None:
        return r.requires_grad_(requires_grad) if requires_grad else r
    d = _dtype(dtype)
    if np.dtype(d).kind not in "fcV":
        raise RuntimeError(f"\"normal_kernel_cpu\" not implemented for '{dt.from_numpy_dtype(np.dtype(d))}'")
    if _is_meta(device):
        return _meta_new(shape, d, requires_grad)
    if np.dtype(d).kind == "c":  # filled through its real view, as PyTorch fills it
        return _finish(_new(empty_array(np, shape, d)).normal_(generator=generator)._data, requires_grad, device)
    a = _normal_array(_mt(generator), shape, d)
    return _finish(a, requires_grad, device)


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    """Integers uniform in [low, high) (PyTorch's CPU stream)."""
    low = kw.pop("low", 0)
    high = kw.pop("high", None)
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        high = args[0]
    if high is None or size is None:
        raise TypeError("randint() missing required arguments: expected randint(low=0, high, size)")
    low, high = int(low), int(high)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    r = D.batched_draw(lambda s: randint(low, high, s, generator=generator, dtype=dtype),
                       tuple(size)) if D.state.levels else None
    if r is not None:
        return r
    shape = U.shape_tuple((tuple(size),), "randint", nonneg=True)
    d = _dtype(dtype, dt.int64)
    if _is_meta(device):
        return _meta_new(shape, d, requires_grad)
    a = _randint_array(_mt(generator), low, high, math.prod(shape), d).reshape(shape)
    return _finish(a, requires_grad, device)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """A random permutation of 0..n-1 (PyTorch's CPU stream)."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    a = _finish(_randperm_array(_mt(generator), n).astype(_dtype(dtype, dt.int64), copy=False), requires_grad, device)
    return a if out is None else U.write_out(a, out)


def _like_random(input, dtype, memory_format, make, *args):
    a = _like(input, dtype, memory_format)
    return _fill(a, make, *args)


def rand_like(input, *, dtype=None, generator=None, requires_grad=False, memory_format=None, device=None,
              layout=None):
    """Uniform [0, 1) samples with input's shape and dtype."""
    _finish(np.zeros(0), False, device)  # (checks the device: only "cpu" and "meta" exist)
    if input._meta or _is_meta(device):
        return _meta_new(input.shape, (dtype or input.dtype).np, requires_grad)
    if input._wr is not None:
        return rand(*input.shape, dtype=dtype or input.dtype, generator=generator, requires_grad=requires_grad)
    d = (dtype or input.dtype).np
    mt = _mt(generator)
    return _finish(_like_random(input, dtype, memory_format, lambda n: _uniform_values(mt, n, d)), requires_grad)


def randn_like(input, *, dtype=None, generator=None, requires_grad=False, memory_format=None, device=None,
               layout=None):
    """Standard normal samples with input's shape and dtype."""
    _finish(np.zeros(0), False, device)  # (checks the device: only "cpu" and "meta" exist)
    if input._meta or _is_meta(device):
        return _meta_new(input.shape, (dtype or input.dtype).np, requires_grad)
    if input._wr is not None:
        return randn(*input.shape, dtype=dtype or input.dtype, generator=generator, requires_grad=requires_grad)
    d = (dtype or input.dtype).np
    mt = _mt(generator)
    a = _like(input, dtype, memory_format)
    _fill(a, lambda n: _normal_values(mt, n, d, contiguous=a.flags.c_contiguous))
    return _finish(a, requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, generator=None, device=None, requires_grad=False,
                 memory_format=None, layout=None):
    """Integers uniform in [low, high) with input's shape and dtype."""
    _finish(np.zeros(0), False, device)
    if high is None:
        low, high = 0, low
    low, high = int(low), int(high)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    d = (dtype or input.dtype).np
    if d.kind == "c":
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    if input._meta or _is_meta(device):
        return _meta_new(input.shape, d, requires_grad)
    mt = _mt(generator)
    return _finish(_like_random(input, dtype, memory_format, lambda n: _randint_array(mt, low, high, n, d)),
                   requires_grad)


def _draws_impl(xp, values, *params, node):
    return values


# The samplers whose parameters are tensors are differentiable in PyTorch with a zero gradient (its
# NormalBackward1-3 and BernoulliBackward0): the output requires grad when a parameter does, and
# backward reaches the parameters with zeros. This primitive attaches drawn values to them so.
_draws_op = D.defop("random_draws", _draws_impl, save=("inputs",), node_name=lambda args, params: params["node"])
_draws_op.vjp = lambda ctx, g: (None,) + tuple(zeros_like(t) for t in ctx.inputs[1:])
_draws_op.jvp = lambda ctx, *tangents: zeros_like(ctx.inputs[0])


def _draws_batch(op, vals, batched, params, size):
    """vmap: the draws carry the batch (materialised when only a parameter does)."""
    v = vals[0] if batched[0] else vals[0].unsqueeze(0).expand((size,) + tuple(vals[0].shape))
    return D.dispatch(op, (v,) + tuple(vals[1:]), params), True


_draws_op.batch = _draws_batch


def _attach_draws(values, params, node):
    """values (a fresh tensor of draws) as the output of node over the tensor parameters."""
    params = tuple(t for t in params if isinstance(t, Tensor))
    return D.dispatch(_draws_op, (values,) + params, {"node": node})


@_out_kw
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, requires_grad=False, out=None, layout=None,
           device=None, pin_memory=False):
    """Normal samples with the given means and standard deviations (tensors or numbers)."""
    mt = _mt(generator)
    tm, ts = isinstance(mean, Tensor), isinstance(std, Tensor)
    lvl = next((t._wr for t in (mean, std) if isinstance(t, Tensor) and t._wr is not None
                and getattr(t._wr, "kind", None) == "vmap"), None)
    if lvl is not None:  # a parameter batched by vmap: one draw over the whole batch, at that level
        return _vmap_normal(lvl, mean, std, generator)
    if tm or ts:
        if ts and std.numel() and not (std._data >= 0).all():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        if not ts and not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        m = mean._data if tm else mean
        s = std._data if ts else std
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        ref = mean if tm else std
        if not ref.dtype.is_floating_point:
            raise RuntimeError(f"normal expects floating point mean/std tensors, got {ref.dtype}")
        d = ref._data.dtype
        z = _normal_array(mt, shape, d)
        # PyTorch draws standard normals into the output, then multiplies by std and adds mean
        a = (z * np.asarray(s, d) + np.asarray(m, d)).astype(d, copy=False)
        node = "NormalBackward3" if tm and ts else "NormalBackward1" if tm else "NormalBackward2"
        return _attach_draws(_finish(a, requires_grad), (mean, std), node)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments: with float mean and std "
                        "a size is required")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    shape = U.shape_tuple((size,), "normal", nonneg=True)
    r = D.batched_draw(lambda s: normal(mean, std, s, generator=generator, dtype=dtype), shape) \
        if D.state.levels else None
    if r is not None:
        return r.requires_grad_(requires_grad) if requires_grad else r
    return _finish(_normal_array(mt, shape, _dtype(dtype), mean, std), requires_grad)


def _vmap_normal(lvl, mean, std, generator):
    """normal(mean, std) under vmap(randomness='different') with a batched parameter: the draws of
    normal over the physical (batch-first) parameters, as torch.func.vmap gives them."""
    if lvl.randomness == "same":
        raise RuntimeError("Vmap does not currently support same randomness with a batched tensor input. "
                           "Please file an issue with functorch")
    D.random_level()  # randomness='error' refuses
    vals = [(t._val, True) if isinstance(t, Tensor) and t._wr is lvl else (t, False) for t in (mean, std)]
    n = max((v.dim() - 1 if b else v.dim()) for v, b in vals if isinstance(v, Tensor))
    phys = []
    for v, b in vals:
        if isinstance(v, Tensor):  # logical dims aligned on the right, the batch dim in front
            k = v.dim() - 1 if b else v.dim()
            lead = (v.shape[0],) if b else (1,)
            v = v.reshape(lead + (1,) * (n - k) + tuple(v.shape[1 if b else 0:]))
        phys.append(v)
    lvl._drawing = True
    try:
        return lvl.wrap(normal(phys[0], phys[1], generator=generator))
    finally:
        lvl._drawing = False


def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples with the probabilities in input (or p).

    Differences from PyTorch: out= of an integer dtype is refused with RuntimeError; PyTorch fills it."""
    if input.is_complex():
        U.no_complex("bernoulli_tensor_cpu_self_" if p is None else "bernoulli_scalar_cpu_", input)
    if input._wr is not None and getattr(input._wr, "kind", None) == "vmap":
        lvl = input._wr
        if lvl.randomness == "same":
            raise RuntimeError("Vmap does not currently support same randomness with a batched tensor input. "
                               "Please file an issue with functorch")
        D.random_level()  # randomness='error' refuses
        lvl._drawing = True  # one draw over the whole batch, at this level
        try:
            return lvl.wrap(bernoulli(input._val, p, generator=generator))
        finally:
            lvl._drawing = False
    if D.state.levels:
        if p is not None:
            r = D.batched_draw(lambda s: bernoulli(zeros(s, dtype=input.dtype), p, generator=generator),
                               input.shape)
        else:  # unbatched probabilities: one draw per sample all the same
            r = D.batched_draw(lambda s: bernoulli(input.expand(s).contiguous(), generator=generator), input.shape)
        if r is not None:
            return r
    mt = _mt(generator)
    a = np.empty(input.shape, input._data.dtype)  # contiguous, drawn in logical order (as PyTorch)
    if p is None:
        probs = input._data
        if not input.dtype.is_floating_point:
            raise RuntimeError(f"bernoulli: expected a floating point probability tensor, got {input.dtype}")
        if ((probs < 0) | (probs > 1)).any():
            raise RuntimeError("bernoulli: all elements of the probability tensor must be in [0, 1]")
        # one uniform of the probabilities' dtype per element, below p gives 1
        pd = probs.dtype if probs.dtype in (np.float32, np.float64) else np.float32
        v = _iter_view(a)
        u = (mt.uniform_f64 if pd == np.float64 else mt.uniform_f32)(a.size).reshape(v.shape)
        v[...] = u < np.broadcast_to(probs, a.shape).astype(pd, copy=False)
    else:
        p = float(p)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        _fill(a, lambda n: mt.uniform_f64(n) < p)
    r = _new(a)
    if p is None and out is None:
        r = _attach_draws(r, (input,), "BernoulliBackward0")
    return r if out is None else U.write_out(r, out)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """num_samples category indices per row, drawn with the probabilities in input."""
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples (got {num_samples})")
    if out is not None and U.is_tensor(out) and out.dtype != dt.int64:
        from .ops.linalg_solve import torch_dtype_name
        raise RuntimeError(f"multinomial expects Long tensor out, got: {torch_dtype_name(out.dtype.np)} (out= of "
                           f"shape {list(out.shape)})")
    g = _gen(generator)
    p = input._data.astype(np.float64)
    if input.dim() not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got a tensor of {input.dim()} dims")
    if num_samples <= 0:
        raise RuntimeError("multinomial: cannot sample n_sample <= 0 samples")
    if (p < 0).any() or not np.isfinite(p).all():
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    single = p.ndim == 1
    p2 = p.reshape(1, -1) if single else p
    if not replacement and num_samples > p2.shape[-1]:
        raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    for row in p2:
        if row.sum() <= 0:
            raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    outarr = _multinomial_rows(g._mt, input._data, num_samples, replacement)
    r = _new(outarr[0] if single else outarr)
    return r if out is None else U.write_out(r, out)


def _multinomial_rows(mt, probs, k, replacement):
    """PyTorch's CPU multinomial: without replacement the k largest p / E (E exponential draws of
    p's dtype, all rows' drawn first); with replacement, per row, k float64 uniforms located in the
    normalised float64 cumulative distribution (the first bin whose cumulative sum reaches u).
    One sample takes the first path with or without replacement."""
    p2 = np.atleast_2d(probs)
    d = p2.dtype if p2.dtype in (np.float32, np.float64) else np.float32
    if not replacement or k == 1:  # (one sample takes the exponential-keys path either way)
        e = _exponential_values(mt, p2.size, d, 1.0).reshape(p2.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            key = p2.astype(d) / e
        return np.argsort(-key, axis=1, kind="stable")[:, :k].astype(np.int64)
    out = np.empty((p2.shape[0], k), np.int64)
    for i, row in enumerate(p2.astype(np.float64)):
        c = np.cumsum(row)
        c /= c[-1]
        out[i] = np.minimum(np.searchsorted(c, mt.uniform_f64(k), side="left"), len(row) - 1)
    return out


def _exponential_values(mt, n, d, lambd):
    """PyTorch's exponential_: -1/lambda * log1p(-u), u a float64 uniform, in float64."""
    return (-1.0 / lambd * _libm(math.log1p, -mt.uniform_f64(n))).astype(d)


def poisson(input, generator=None):
    """Poisson samples with the rates in input."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"poisson: expected a floating point rate tensor, got {input.dtype}")
    if (input._data < 0).any() or np.isnan(input._data).any():
        raise RuntimeError("poisson: the rates must be non-negative (and not nan)")
    # a contiguous result, its elements drawn in logical order (as PyTorch's kernel does)
    vals = _poisson_values(_mt(generator), np.ascontiguousarray(input._data).ravel())
    return _new(vals.astype(input._data.dtype).reshape(input.shape))


def _poisson_values(mt, rates):
    """PyTorch's CPU poisson, element by element on float64 uniforms: for a rate of 10 or more the
    transformed rejection method with squeeze (Hormann 1993, PTRS), below it Knuth's product of
    uniforms."""
    u = mt.uniform_f64_reader()
    out = np.empty(len(rates), np.float64)
    log, floor, lgamma = math.log, math.floor, math.lgamma
    try:
        for i, lam in enumerate(rates.astype(np.float64).tolist()):
            if lam >= 10:
                slam, loglam = math.sqrt(lam), log(lam)
                b = 0.931 + 2.53 * slam
                a = -0.059 + 0.02483 * b
                invalpha = 1.1239 + 1.1328 / (b - 3.4)
                vr = 0.9277 - 3.6224 / (b - 2)
                while True:
                    U = u() - 0.5
                    V = u()
                    us = 0.5 - abs(U)
                    k = floor((2 * a / us + b) * U + lam + 0.43)
                    if us >= 0.07 and V <= vr:
                        break
                    if k < 0 or (us < 0.013 and V > us):
                        continue
                    if log(V) + log(invalpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1):
                        break
                out[i] = k
            elif lam == 0:
                out[i] = 0
            else:
                enlam, x, prod = math.exp(-lam), 0, 1.0
                while True:
                    prod *= u()
                    if prod > enlam:
                        x += 1
                    else:
                        break
                out[i] = x
    finally:
        u.close()
    return out


# ----------------------------------------------------------------------------- issue 15: more constructors


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A 0-dim tensor holding the number s (the default float dtype unless dtype says otherwise)."""
    if isinstance(s, Tensor):
        s = s.item()
    return _finish(np.asarray(s, dtype=_dtype(dtype)), requires_grad, device)


def empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad=False, layout=None,
                   pin_memory=False):
    """An uninitialized tensor of logical shape ``size`` whose memory is laid out in the dim order
    physical_layout (outermost first): torch.empty(permuted size).permute(inverse)."""
    size = tuple(size)
    perm = tuple(physical_layout)
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted(): physical_layout {list(perm)} is not a permutation of the "
                           f"{len(size)} dims of size {list(size)}")
    arr = np.zeros(tuple(size[p] for p in perm), _dtype(dtype))
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return _finish(arr.transpose(inv), requires_grad, device)
