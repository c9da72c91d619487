"""Tensor conversions: .to(), .float()/.double()/..., .type(), .cpu(), and the device/dtype parsing
they share. Casts go through the registry's ``_to_copy`` op, so they are differentiable."""
import builtins

import numpy as np

from . import _dtype as dt
from ._memory_format import memory_format as _MF, suggest_memory_format as _suggest_mf
from ._tensor import Tensor, device as _device
from .ops import shape as _S


def _parse_to(args, kwargs):
    """Tensor.to(dtype) / to(device) / to(device, dtype) / to(other) / keyword forms."""
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    mf = kwargs.pop("memory_format", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, dt.dtype):
            dtype = a
        elif isinstance(a, (str, _device)):
            dev = a
        elif isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, bool):
            copy = a
        elif a is None:
            continue
        else:
            raise TypeError(f"to() received an invalid combination of arguments: got {type(a).__name__}; "
                            "expected a dtype, a device, a memory_format keyword or a Tensor")
    if mf is not None and not isinstance(mf, _MF):
        raise TypeError(f"to(): memory_format must be an ember.memory_format, got {mf!r}")
    return dtype, (_device(dev) if dev is not None else None), mf, copy


def to(self, *args, **kwargs):
    dtype, dev, mf, copy = _parse_to(args, dict(kwargs))
    if dev is not None and dev.type == "meta" and not self._meta:
        from ._creation import empty
        return empty(self.shape, dtype=dtype or self.dtype, device="meta")
    if dev is not None and dev.type != "meta" and self._meta:
        raise NotImplementedError("Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() "
                                  "instead of torch.nn.Module.to() when moving module from meta to a different "
                                  "device.")
    if dtype is None:
        dtype = self.dtype
    if dtype is self.dtype and not copy and (mf is None or mf.name == "preserve_format"
                                              or _suggest_mf(self._data) is mf):
        return self  # PyTorch aliases exactly when the suggested memory format is the one asked for
    return _S.to_dtype(self, dtype, memory_format=mf, copy=True)


def _caster(d):
    def cast(self, memory_format=None):
        return _S.to_dtype(self, d, memory_format=memory_format)
    cast.__name__ = d.name
    return cast


def type_(self, dtype=None, non_blocking=False):
    if dtype is None:
        return "torch." + {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                           "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
                           "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
                           "bfloat16": "BFloat16Tensor"}[self.dtype.name]
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        table = {"FloatTensor": dt.float32, "DoubleTensor": dt.float64, "HalfTensor": dt.float16,
                 "LongTensor": dt.int64, "IntTensor": dt.int32, "ShortTensor": dt.int16,
                 "CharTensor": dt.int8, "ByteTensor": dt.uint8, "BoolTensor": dt.bool_,
                 "BFloat16Tensor": dt.bfloat16}
        if name not in table:
            raise ValueError(f"invalid type: {dtype!r}")
        dtype = table[name]
    elif isinstance(dtype, _LegacyTypeMeta):  # t.type(torch.LongTensor)
        dtype = dtype.dtype
    return _S.to_dtype(self, dtype)


Tensor.to = to
Tensor.type = type_
Tensor.float = _caster(dt.float32)
Tensor.double = _caster(dt.float64)
Tensor.half = _caster(dt.float16)
Tensor.bfloat16 = _caster(dt.bfloat16)
Tensor.long = _caster(dt.int64)
Tensor.int = _caster(dt.int32)
Tensor.short = _caster(dt.int16)
Tensor.char = _caster(dt.int8)
Tensor.byte = _caster(dt.uint8)
Tensor.bool = _caster(dt.bool_)
Tensor.cfloat = _caster(dt.complex64)
Tensor.cdouble = _caster(dt.complex128)
Tensor.cpu = lambda self, memory_format=None: self.to("cpu") if self._meta else self
Tensor.cuda = lambda self, *a, **k: (_ for _ in ()).throw(
    RuntimeError("ember has no CUDA device: tensors live on the 'cpu' device"))


def pin_memory(self, device=None):
    raise RuntimeError("Cannot access accelerator device when none is available.")


def is_pinned(self, device=None):
    return False


def _fill_from(self, vals):
    """Write Python values (one per element, in row-major order) into self, in place."""
    if vals:
        np.copyto(self._data, np.array(vals).reshape(self._data.shape), casting="unsafe")
        self._bump()
    return self


def apply_(self, callable):
    if self.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead.")
    if not builtins.callable(callable):
        raise TypeError(f"apply_(): expected a callable, got {type(callable).__name__}")
    return _fill_from(self, [callable(v) for v in self._data.ravel().tolist()])


def map_(self, tensor, callable):
    if self.requires_grad or tensor.requires_grad:
        raise RuntimeError("Can't call map_() on Variable that requires grad. Use var.detach().map_() instead.")
    if not builtins.callable(callable):
        raise TypeError(f"map_(): expected a callable, got {type(callable).__name__}")
    other = tensor.expand(self.shape)._data.ravel().tolist()
    return _fill_from(self, [callable(x, y) for x, y in zip(self._data.ravel().tolist(), other)])


Tensor.pin_memory = pin_memory
Tensor.is_pinned = is_pinned
Tensor.apply_ = apply_
Tensor.map_ = map_


# ----------------------------------------------------------------------------- new_* constructors
# Same dtype and device as self unless given.

def _new_ctor(name):
    from . import _creation as C
    make = getattr(C, name)

    def method(self, *args, size=None, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False):
        return make(*args, size=size, dtype=dtype or self.dtype, requires_grad=requires_grad)
    method.__name__ = "new_" + name
    return method


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    from . import _creation as C
    return C.full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    from . import _creation as C
    if isinstance(data, Tensor):
        data = data.detach().numpy()
    return C.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


Tensor.new_zeros = _new_ctor("zeros")
Tensor.new_ones = _new_ctor("ones")
Tensor.new_empty = _new_ctor("empty")
Tensor.new_full = new_full
Tensor.new_tensor = new_tensor


# issue 15: new_empty_strided, resize_, resize_as_


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    from . import _creation as C
    return C.empty_strided(size, stride, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)


def resize_(self, *sizes, memory_format=None):
    """Give the tensor the shape ``sizes`` in place, keeping its first elements (in memory order) and
    leaving new ones uninitialized (zeros here); a tensor that requires grad cannot be resized."""
    import numpy as np
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) or (len(sizes) == 1 and hasattr(sizes[0], "__len__")):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = 1
    for s in sizes:
        n *= s
    if self._wr is not None:
        w = self._wr
        phys = getattr(self, "_val", None)
        if getattr(w, "kind", None) != "vmap" or phys is None or phys._wr is not None or phys.requires_grad:
            raise RuntimeError("resize_: not supported inside a function transform (vmap, grad)")
        # under vmap each batch row is a tensor of its own: resize every row (its first elements kept)
        B = phys._data.shape[0]
        old = np.ascontiguousarray(phys._data).reshape(B, -1)
        if old.shape[1] == n:
            new = old.reshape((B,) + sizes)
        else:
            new = np.zeros((B, n), old.dtype)
            k = min(n, old.shape[1])
            new[:, :k] = old[:, :k]
            new = new.reshape((B,) + sizes)
        phys._data = new
        phys._bump()
        self._data = w.wrap(phys)._data
        return self
    old = self._data.reshape(-1) if self._data.flags.c_contiguous else np.ascontiguousarray(self._data).reshape(-1)
    if n == old.shape[0]:
        new = old.reshape(sizes)
    else:
        new = np.zeros(n, self._data.dtype)
        k = min(n, old.shape[0])
        new[:k] = old[:k]
        new = new.reshape(sizes)
    if memory_format is not None:
        from ._memory_format import channels_last
        if memory_format is channels_last and len(sizes) == 4:
            new = np.ascontiguousarray(new.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    self._data = new
    self._bump()
    return self


def resize_as_(self, the_template, *, memory_format=None):
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


Tensor.new_empty_strided = new_empty_strided
Tensor.resize_ = resize_
Tensor.resize_as_ = resize_as_


def _multinomial(self, num_samples, replacement=False, *, generator=None):
    from . import _creation as C
    return C.multinomial(self, num_samples, replacement, generator=generator)


def _bernoulli(self, p=None, *, generator=None):
    from . import _creation as C
    return C.bernoulli(self, p, generator=generator)


def _is_nonzero(self):
    from . import is_nonzero
    return is_nonzero(self)


Tensor.multinomial = _multinomial
Tensor.bernoulli = _bernoulli
Tensor.is_nonzero = _is_nonzero
Tensor.is_cpu = property(lambda self: not self._meta)
Tensor._is_view = lambda self: self._base is not None


# ----------------------------------------------------------------------------- legacy tensor types
# torch.FloatTensor(2, 3) / LongTensor([1, 2]) build tensors of their dtype, isinstance(t, FloatTensor)
# tests the dtype, and t.type(LongTensor) casts (the names type() returns).

class _LegacyTypeMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype


def _legacy_type(name, d):
    def __new__(cls, *args):
        from . import _creation as C
        from ._tensor import Size
        if len(args) == 1 and isinstance(args[0], Size):
            args = tuple(args[0])
        if not args or all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return C.empty(*args, dtype=d) if args else C.empty(0, dtype=d)
        if len(args) != 1:
            raise TypeError(f"{name}(): expected sizes or one sequence of data")
        return C.tensor(args[0], dtype=d)
    return _LegacyTypeMeta(name, (), {"__new__": __new__, "dtype": d, "__module__": "ember"})


_LEGACY = {n: _legacy_type(n, d) for n, d in (
    ("FloatTensor", dt.float32), ("DoubleTensor", dt.float64), ("HalfTensor", dt.float16),
    ("LongTensor", dt.int64), ("IntTensor", dt.int32), ("ShortTensor", dt.int16), ("CharTensor", dt.int8),
    ("ByteTensor", dt.uint8), ("BoolTensor", dt.bool_), ("BFloat16Tensor", dt.bfloat16))}
