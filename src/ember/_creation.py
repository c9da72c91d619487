"""Tensor creation and random numbers (ember's own seeded generator on NumPy's PCG64)."""
import numpy as np

from . import _dispatch as D
from . import _dtype as dt
from ._memory_format import empty_array
from ._tensor import Tensor, device as _device_cls
from .ops import _util as U

_new = D._new_tensor
_new_obj = object.__new__
_state = D.state
_one_elem = [np.zeros(1, np.float32)]  # tensor([x])'s template, in the default dtype


# ----------------------------------------------------------------------------- generators

_DEFAULT_SEED = 67280421310721


class Generator:
    """A random generator: seeded reproducibly by manual_seed, state saved/restored as bytes."""

    def __init__(self, device="cpu"):
        self.device = _device_cls(device)
        self._seed = _DEFAULT_SEED
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:
            seed &= (1 << 64) - 1
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy) & ((1 << 63) - 1)
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        import json
        st = json.dumps(self._rng.bit_generator.state).encode()
        return _new(np.frombuffer(st, dtype=np.uint8).copy())

    def set_state(self, new_state):
        import json
        self._rng.bit_generator.state = json.loads(bytes(new_state._data).decode())
        return self

    def __getattr__(self, name):  # random(), standard_normal(), integers(), ...
        return getattr(self.__dict__["_rng"], name)


default_generator = Generator()


def _gen(generator=None):
    if D.state.levels:
        D.random_level()  # vmap(randomness='error') refuses random draws
    return (generator or default_generator)._rng


def manual_seed(seed):
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
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
        raise TypeError("ember does not support complex tensors")
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
    if isinstance(data, range):
        data = list(data)
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
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype is dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        a = data if dtype is None else data.astype(dtype.np, copy=False)
        dt.from_numpy_dtype(a.dtype)
        return _new(a)
    return _finish(_to_array(data, dtype), False, device)


asarray = as_tensor


def from_numpy(ndarray):
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    canon = dt.from_numpy_dtype(ndarray.dtype, "np.ndarray").np
    if ndarray.dtype is not canon:  # e.g. an unpickled array: an equal but distinct dtype object,
        ndarray = ndarray.view(canon)  # and the kernels compare dtypes by identity
    return _new(ndarray)


def frombuffer(buffer, *, dtype, count=-1, offset=0):
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
    shape = U.shape_tuple(args, "empty", nonneg=True, kw=size)
    return _finish(empty_array(np, shape, _dtype(dtype), memory_format), requires_grad, device)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    d = np.dtype(_dtype(dtype))
    size = tuple(size)
    n = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    buf = np.empty(max(n, 0), d)
    a = np.lib.stride_tricks.as_strided(buf, size, tuple(s * d.itemsize for s in stride))
    return _finish(a, requires_grad, device)


@_out_kw
def zeros(*args, size=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None, layout=None):
    shape = U.shape_tuple(args, "zeros", nonneg=True, kw=size)
    a = empty_array(np, shape, _dtype(dtype), memory_format, fill=0)
    return _finish(a, requires_grad, device)


@_out_kw
def ones(*args, size=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None, layout=None):
    shape = U.shape_tuple(args, "ones", nonneg=True, kw=size)
    a = empty_array(np, shape, _dtype(dtype), memory_format, fill=1)
    return _finish(a, requires_grad, device)


@_out_kw
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    shape = U.shape_tuple((size,), "full", nonneg=True)
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    v = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
    try:
        a = np.full(shape, v, _dtype(dtype))
    except OverflowError:
        raise RuntimeError(f"full: value {v} cannot be converted to type {dtype} without overflow") from None
    return _finish(a, requires_grad, device)


def _like(input, dtype, memory_format, fill=None):
    d = (dtype or input.dtype).np
    from ._memory_format import preserve_format, like_array
    a = like_array(np, input._data, d, memory_format or preserve_format, fill)
    return a


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    return _finish(_like(input, dtype, memory_format), requires_grad, device or (input.device if input._meta else None))


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    return _finish(_like(input, dtype, memory_format, 0), requires_grad, device or (input.device if input._meta else None))


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    return _finish(_like(input, dtype, memory_format, 1), requires_grad, device or (input.device if input._meta else None))


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _finish(_like(input, dtype, memory_format, fill_value), requires_grad, device)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    return _finish(np.eye(n, m, dtype=_dtype(dtype)), requires_grad, device)


@_out_kw
def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if dtype is None:
        dtype = dt.int64 if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals) \
            else dt.get_default_dtype()
    s, e, st = vals
    if (e - s) * st < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign (start={start}, "
                           f"end={end}, step={step})")
    n = max(int(np.ceil((e - s) / st)), 0)
    a = (s + st * np.arange(n, dtype=np.float64)).astype(dtype.np) if dtype.is_floating_point \
        else np.arange(s, e, st, dtype=dtype.np)
    return _finish(a, requires_grad, device)


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    n = int(np.floor((end - start) / step)) + 1
    d = dtype or dt.get_default_dtype()
    return _finish((start + step * np.arange(n, dtype=np.float64)).astype(d.np), requires_grad, device)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    return _finish(np.linspace(float(start), float(end), steps).astype(_dtype(dtype)), requires_grad, device)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    return _finish(np.logspace(float(start), float(end), steps, base=base).astype(_dtype(dtype)),
                   requires_grad, device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    r, c = np.tril_indices(row, offset, col)
    return _new(np.stack([r, c]).astype(_dtype(dtype, dt.int64)))


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    r, c = np.triu_indices(row, offset, col)
    return _new(np.stack([r, c]).astype(_dtype(dtype, dt.int64)))


def meshgrid(*tensors, indexing="ij"):
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


def _float_np(dtype):
    d = _dtype(dtype)
    return d if d in (np.float32, np.float64) else np.float32, d


@_out_kw
def rand(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None):
    shape = U.shape_tuple(args, "rand", nonneg=True, kw=size)
    r = D.batched_draw(lambda s: rand(s, generator=generator, dtype=dtype), shape) if D.state.levels else None
    if r is not None:
        return r.requires_grad_(requires_grad) if requires_grad else r
    gen_d, d = _float_np(dtype)
    a = _gen(generator).random(shape, dtype=gen_d).astype(d, copy=False)
    return _finish(a, requires_grad, device)


@_out_kw
def randn(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None):
    shape = U.shape_tuple(args, "randn", nonneg=True, kw=size)
    r = D.batched_draw(lambda s: randn(s, generator=generator, dtype=dtype), shape) if D.state.levels else None
    if r is not None:
        return r.requires_grad_(requires_grad) if requires_grad else r
    gen_d, d = _float_np(dtype)
    a = _gen(generator).standard_normal(shape, dtype=gen_d).astype(d, copy=False)
    return _finish(a, requires_grad, device)


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False, **kw):
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
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    r = D.batched_draw(lambda s: randint(low, high, s, generator=generator, dtype=dtype),
                       tuple(size)) if D.state.levels else None
    if r is not None:
        return r
    a = _gen(generator).integers(low, high, tuple(size)).astype(_dtype(dtype, dt.int64))
    return _finish(a, requires_grad, device)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    return _finish(_gen(generator).permutation(n).astype(_dtype(dtype, dt.int64)), requires_grad, device)


def _in_like_layout(t, input, memory_format):
    """Random values drawn in logical order, stored in the layout *_like gives (preserve_format)."""
    a = _like(input, t.dtype, memory_format)
    a[...] = t._data
    t._data = a
    return t


def rand_like(input, *, dtype=None, generator=None, requires_grad=False, memory_format=None):
    if input._wr is not None:
        return rand(*input.shape, dtype=dtype or input.dtype, generator=generator, requires_grad=requires_grad)
    return _in_like_layout(rand(*input.shape, dtype=dtype or input.dtype, generator=generator,
                                requires_grad=requires_grad), input, memory_format)


def randn_like(input, *, dtype=None, generator=None, requires_grad=False, memory_format=None):
    if input._wr is not None:
        return randn(*input.shape, dtype=dtype or input.dtype, generator=generator, requires_grad=requires_grad)
    return _in_like_layout(randn(*input.shape, dtype=dtype or input.dtype, generator=generator,
                                 requires_grad=requires_grad), input, memory_format)


def randint_like(input, low=0, high=None, *, dtype=None, generator=None):
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, generator=generator)


@_out_kw
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, requires_grad=False, out=None):
    g = _gen(generator)
    if isinstance(std, Tensor) and std.numel() and not (std._data >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if not isinstance(std, Tensor) and not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        m = mean._data if isinstance(mean, Tensor) else mean
        s = std._data if isinstance(std, Tensor) else std
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        ref = mean if isinstance(mean, Tensor) else std
        a = (g.standard_normal(shape) * s + m).astype(ref._data.dtype)
        return _finish(a, requires_grad)
    shape = U.shape_tuple((size,), "normal", nonneg=True)
    gen_d, d = _float_np(dtype)
    return _finish((g.standard_normal(shape, dtype=gen_d) * std + mean).astype(d), requires_grad)


def bernoulli(input, p=None, *, generator=None):
    if input._wr is not None and getattr(input._wr, "kind", None) == "vmap":
        return input._wr.wrap(bernoulli(input._val, p, generator=generator))  # per-sample probabilities
    if D.state.levels and p is not None:
        r = D.batched_draw(lambda s: bernoulli(zeros(s, dtype=input.dtype), p, generator=generator), input.shape)
        if r is not None:
            return r
    probs = input._data if p is None else np.full(input.shape, p)
    a = (_gen(generator).random(input.shape) < probs).astype(input._data.dtype)
    return _new(a)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples (got {num_samples})")
    g = _gen(generator)
    p = input._data.astype(np.float64)
    if (p < 0).any() or not np.isfinite(p).all():
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    single = p.ndim == 1
    p2 = p.reshape(1, -1) if single else p
    rows = []
    for row in p2:
        s = row.sum()
        if s <= 0:
            raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > (row > 0).sum():
            raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        rows.append(g.choice(len(row), num_samples, replace=replacement, p=row / s))
    out = np.stack(rows).astype(np.int64)
    return _new(out[0] if single else out)


def poisson(input, generator=None):
    return _new(_gen(generator).poisson(input._data).astype(input._data.dtype))
