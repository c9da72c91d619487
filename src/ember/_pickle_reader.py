"""The reading half of ember's checkpoints: the restricted unpickler (only the names PyTorch's
``weights_only=True`` loader allows, plus ``add_safe_globals``; nothing else is ever called), the
checks on every tensor view, record and nesting depth, and the safe-globals API. See
ember._serialization for the formats."""
import io
import os
import pickle
import struct
import zipfile
from collections import Counter, OrderedDict

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor, Size

MAX_DEPTH = 1000                     # containers nested deeper than this are refused on load
_CHUNK = 16 << 20                    # records are streamed in chunks of this many bytes
_MAX_PICKLE = 1 << 30                # data.pkl / manifest.json larger than this are refused
_ALIGN = 64                          # storage records start at multiples of this (as PyTorch's)

# ember dtype name -> the legacy storage class PyTorch's pickles name (torch.FloatStorage, ...)
_STORAGE_OF = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
               "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
               "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
               "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}
_DTYPE_OF_STORAGE = {v: k for k, v in _STORAGE_OF.items()}


class UnpicklingError(pickle.UnpicklingError, RuntimeError):
    """A file ember.load refuses: both a pickle.UnpicklingError (as PyTorch's weights_only loader
    raises) and a RuntimeError (as ember's other load errors are)."""


def _name(f):
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    return getattr(f, "name", None) or f"<{type(f).__name__}>"


def _ember_dtype(name):
    return dt._BY_NAME.get(name)


# ============================================================================= safe globals

_SAFE_GLOBALS = {}   # "module.qualname" -> object


def _global_name(obj):
    return f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', getattr(obj, '__name__', None))}"


def add_safe_globals(safe_globals):
    """Allow ember.load to resolve these classes/functions (or ``(obj, "module.name")`` pairs) in
    pickles, as torch.serialization.add_safe_globals does. Only add what you trust: an allowed
    class can be created and have its state set by a file, an allowed function called with
    arguments from a file."""
    for item in safe_globals:
        if isinstance(item, tuple):
            if len(item) != 2 or not isinstance(item[1], str):
                raise ValueError(f"add_safe_globals: expected an object or an (object, 'module.name') pair, "
                                 f"got {item!r}")
            _SAFE_GLOBALS[item[1]] = item[0]
        else:
            _SAFE_GLOBALS[_global_name(item)] = item


def get_safe_globals():
    """The objects added by add_safe_globals (``(obj, name)`` pairs where a name was given)."""
    return [obj if _global_name(obj) == name else (obj, name) for name, obj in _SAFE_GLOBALS.items()]


def clear_safe_globals():
    _SAFE_GLOBALS.clear()


class safe_globals:
    """Context manager: add_safe_globals for the duration of a ``with`` block."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = dict(_SAFE_GLOBALS)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(self._saved)
        return False


def get_unsafe_globals_in_checkpoint(f):
    """The "module.name" globals a PyTorch zip checkpoint names that ember.load would refuse (found by
    reading the pickle's opcodes, running nothing), as torch.serialization's function of that name."""
    import pickletools
    name = _name(f)
    own = isinstance(f, (str, os.PathLike))
    src = open(f, "rb") if own else f
    try:
        try:
            zf = zipfile.ZipFile(src)
        except (zipfile.BadZipFile, OSError, ValueError) as e:
            raise RuntimeError(f"ember.serialization: {name} is not a zip checkpoint ({e})") from None
        with zf:
            pkl = [i for i in zf.infolist() if i.filename.endswith("data.pkl") and i.filename.count("/") <= 1]
            if not pkl:
                raise RuntimeError(f"ember.serialization: {name} has no data.pkl")
            data = _read_record(zf, pkl[0], name, "data.pkl", limit=_MAX_PICKLE).tobytes()
    finally:
        if own:
            src.close()
    probe = _Unpickler(io.BytesIO(b""), name, None, None)
    found, strings = set(), []
    try:
        for op, arg, _pos in pickletools.genops(io.BytesIO(data)):
            if op.name == "GLOBAL":
                module, _, qual = arg.partition(" ")
                found.add((module, qual))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.add((strings[-2], strings[-1]))
            elif isinstance(arg, str):
                strings.append(arg)
    except Exception as e:
        raise UnpicklingError(f"ember.serialization: {name}: the pickle is corrupt ({e})") from None
    unsafe = []
    for module, qual in sorted(found):
        try:
            probe.proto = 2
            probe.find_class(module, qual)
        except UnpicklingError:
            unsafe.append(f"{module}.{qual}")
    return unsafe


# ============================================================================= load: helpers

def _fail(name, what, cls=RuntimeError):
    raise cls(f"ember.load: {name} {what}" if what.startswith("is ") else f"ember.load: {name}: {what}")


def _check_depth(obj, name):
    """Refuse containers nested deeper than MAX_DEPTH (iteratively: no recursion to overflow)."""
    seen = set()
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, (dict, list, tuple, set, frozenset)):
            if id(o) in seen:
                continue
            seen.add(id(o))
            if d > MAX_DEPTH:
                _fail(name, f"the saved object is nested more than {MAX_DEPTH} levels deep; ember refuses it",
                      UnpicklingError)
            if isinstance(o, dict):
                stack.extend((v, d + 1) for v in o.values())
                stack.extend((k, d + 1) for k in o.keys() if isinstance(k, tuple))
            else:
                stack.extend((v, d + 1) for v in o)


def _record_checks(zf, info, name, what, expected=None, limit=None):
    """Refuse a record before reading it when its declared size differs from ``expected``, exceeds
    ``limit``, cannot fit in the archive, or inflates like a bomb; its size otherwise."""
    size = info.file_size
    if expected is not None and size != expected:
        _fail(name, f"{what} ({info.filename}) holds {size} bytes, but its metadata declares {expected}")
    if limit is not None and size > limit:
        _fail(name, f"{what} ({info.filename}) is {size} bytes, more than the {limit} bytes ember accepts")
    total = getattr(zf, "_ember_size", None)
    if total is not None and info.compress_size > total:
        _fail(name, f"{what} ({info.filename}) claims {info.compress_size} compressed bytes in a file of {total}")
    if info.compress_type == zipfile.ZIP_STORED:
        if info.compress_size != size:
            _fail(name, f"{what} ({info.filename}) is stored with {info.compress_size} bytes but declares {size}")
    elif size > (1 << 20) and size > 100 * info.compress_size:
        _fail(name, f"{what} ({info.filename}) inflates {info.compress_size} bytes to {size}: refused as a "
                    "decompression bomb")
    return size


def _read_record(zf, info, name, what, expected=None, limit=None, out=None):
    """The bytes of one zip record, streamed: refused before reading when its declared size differs
    from ``expected``, exceeds ``limit``, cannot fit in the archive, or inflates like a bomb."""
    size = _record_checks(zf, info, name, what, expected, limit)
    buf = np.empty(size, np.uint8) if out is None else out
    if info.compress_type == zipfile.ZIP_STORED and size >= _CHUNK // 16 and hasattr(zf.fp, "readinto"):
        # a stored record read straight into its array (one copy less), then its CRC checked
        import zlib
        fp = zf.fp
        try:
            fp.seek(info.header_offset)
            head = fp.read(30)
            if len(head) != 30 or head[:4] != b"PK\x03\x04":
                _fail(name, f"is corrupted: the local header of {info.filename} is damaged")
            n, m = struct.unpack("<HH", head[26:30])
            fp.seek(info.header_offset + 30 + n + m)
            mv = memoryview(buf)
            pos = 0
            while pos < size:
                k = fp.readinto(mv[pos:pos + _CHUNK])
                if not k:
                    break
                pos += k
        except OSError as e:
            _fail(name, f"is corrupted: {what} ({info.filename}) cannot be read: {e}")
        if pos != size:
            _fail(name, f"is truncated: {what} ({info.filename}) ends after {pos} of its {size} bytes")
        if zlib.crc32(mv) != info.CRC:
            _fail(name, f"is corrupted: {what} ({info.filename}) has a bad CRC-32")
        return buf
    try:
        with zf.open(info) as fh:
            pos = 0
            while pos < size:
                chunk = fh.read(min(_CHUNK, size - pos))
                if not chunk:
                    break
                buf[pos:pos + len(chunk)] = np.frombuffer(chunk, np.uint8)
                pos += len(chunk)
            if pos != size or fh.read(1):
                _fail(name, f"{what} ({info.filename}) is truncated or longer than declared")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, zlibError) as e:
        _fail(name, f"is corrupted: {what} ({info.filename}) cannot be read: {e}")
    return buf


try:
    from zlib import error as zlibError
except ImportError:  # pragma: no cover
    zlibError = ValueError


def _check_names(zf, name):
    for n in zf.namelist():
        parts = n.replace("\\", "/").split("/")
        if n.startswith(("/", "\\")) or ".." in parts or (len(n) > 1 and n[1] == ":"):
            _fail(name, f"the archive has a record named {n!r} that points outside it (path traversal); "
                        "ember refuses the file", UnpicklingError)


# ============================================================================= load: the unpickler

class _StorageType:
    __slots__ = ("dtype", "name")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _Storage:
    """A storage read from a file: a 1-D array of its dtype (shared by the tensors that view it)."""
    __slots__ = ("array", "meta", "base")

    def __init__(self, array, meta=False):
        self.array, self.meta, self.base = array, meta, None


class _TensorType:  # stands for torch.Tensor / torch.nn.Parameter in _rebuild_from_type_v2
    def __init__(self, name):
        self.name = name


_TORCH_TENSOR, _TORCH_PARAMETER = _TensorType("torch.Tensor"), _TensorType("torch.nn.parameter.Parameter")


def _ints(v, what):
    if isinstance(v, Size):
        v = tuple(v)
    if not isinstance(v, (tuple, list)) or not all(type(x) is int for x in v):
        raise UnpicklingError(f"{what} must be a tuple of ints, got {v!r:.80}")
    return tuple(v)


def _encode(obj, encoding="utf-8", errors="strict"):
    if not isinstance(obj, str) or encoding.lower().replace("-", "").replace("_", "") not in ("latin1", "utf8"):
        raise UnpicklingError(f"_codecs.encode is allowed only on a string to latin1/utf-8, got "
                              f"{type(obj).__name__} to {encoding!r:.40}")
    return obj.encode(encoding, errors)


def _bytearray(*args):
    if args and not isinstance(args[0], (bytes, bytearray)):
        raise UnpicklingError("bytearray is allowed only from bytes")
    return bytearray(*args)


def _complex(*args):
    if not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args):
        raise UnpicklingError("complex is allowed only from numbers")
    return complex(*args)


def _container_args(what, args):
    # only containers from the pickle itself: iterating a tensor (a stride-0 view of 2**40 rows,
    # say) would cost unbounded time
    if len(args) > 1 or (args and type(args[0]) not in (list, tuple, dict, OrderedDict, str)):
        raise UnpicklingError(f"{what} is allowed only from a list, tuple or dict")
    return args


def _set(*args):
    return set(*_container_args("set", args))


def _odict(*args):
    return OrderedDict(*_container_args("OrderedDict", args))


def _counter(*args):
    return Counter(*_container_args("Counter", args))


def _device(*args):
    from ._tensor import device
    kind = str(args[0]) if args else "cpu"
    if isinstance(args[0] if args else "", str) and kind.split(":")[0] in ("cpu", "meta"):
        return device(kind.split(":")[0])
    raise UnpicklingError(f"the file refers to device {args!r:.40}; ember runs on the CPU")


class _Unpickler(pickle._Unpickler):
    """pickle's Python unpickler, restricted: names resolve only to the allowed objects, only those
    are ever called, objects are created or have state set only for allowed classes, and extension
    codes and INST/OBJ are refused."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, fh, name, load_storage, map_location, encoding="utf-8", dry=False):
        super().__init__(fh, encoding=encoding)
        self.name = name
        self.dry = dry  # check the tensors only, build none (the first pass over a legacy file)
        self.tuple_depths = {}
        self.load_storage = load_storage
        self.map_location = map_location
        self.meta = _is_meta(map_location)
        self.allowed = {
            "collections.OrderedDict": _odict, "collections.Counter": _counter,
            "torch._utils._rebuild_tensor": self._rebuild_tensor,
            "torch._utils._rebuild_tensor_v2": self._rebuild_tensor,
            "torch._utils._rebuild_tensor_v3": self._rebuild_tensor_v3,
            "torch._utils._rebuild_parameter": self._rebuild_parameter,
            "torch._utils._rebuild_parameter_with_state": self._rebuild_parameter,
            "torch._utils._rebuild_meta_tensor_no_storage": self._rebuild_meta,
            "torch._tensor._rebuild_from_type_v2": self._rebuild_from_type,
            "torch.Size": self._size, "torch.device": _device,
            "torch.Tensor": _TORCH_TENSOR, "torch.nn.parameter.Parameter": _TORCH_PARAMETER,
            "_codecs.encode": _encode, "builtins.bytearray": _bytearray, "builtins.set": _set,
            "builtins.complex": _complex,
        }
        for dname, sname in _STORAGE_OF.items():
            d = _ember_dtype(dname)
            self.allowed[f"torch.{sname}"] = _StorageType(sname, d)
            if d is not None:
                self.allowed[f"torch.{dname}"] = d
        self.allowed["torch.bool"] = dt.bool_
        self.callables = {id(v) for v in self.allowed.values() if callable(v)}

    def find_class(self, module, name):
        if self.proto < 3 and self.fix_imports:
            import _compat_pickle
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        key = f"{module}.{name}"
        obj = self.allowed.get(key)
        if obj is None:
            obj = _SAFE_GLOBALS.get(key)
            if obj is None:
                hint = ""
                if key in ("torch.ComplexFloatStorage", "torch.ComplexDoubleStorage", "torch.complex64",
                           "torch.complex128", "torch.BFloat16Storage", "torch.bfloat16"):
                    hint = " (this ember has no such dtype)"
                raise UnpicklingError(
                    f"ember.load: {self.name}: unsupported global {key}{hint}: ember loads tensors, containers "
                    "and numbers only and never runs code from a file; if you trust this file and that "
                    "class or function, allow it with ember.serialization.add_safe_globals([...])")
        elif isinstance(obj, _StorageType) and obj.dtype is None:
            raise UnpicklingError(f"ember.load: {self.name}: the file holds a {obj.name}, a dtype ember does "
                                  "not have")
        return obj

    def _may_call(self, f):
        return id(f) in self.callables or any(f is v for v in _SAFE_GLOBALS.values())

    # -- restricted opcodes
    def load_reduce(self):
        stack = self.stack
        args = stack.pop()
        func = stack[-1]
        if not self._may_call(func) or not isinstance(args, tuple):
            raise UnpicklingError(f"ember.load: {self.name}: the pickle calls {func!r:.60}, which is not an "
                                  "allowed function")
        stack[-1] = func(*args)
    dispatch[pickle.REDUCE[0]] = load_reduce

    def load_newobj(self):
        args = self.stack.pop()
        cls = self.stack[-1]
        if not isinstance(cls, type) or not any(cls is v for v in _SAFE_GLOBALS.values()) \
                or not isinstance(args, tuple):
            raise UnpicklingError(f"ember.load: {self.name}: the pickle creates a {cls!r:.60}, which is not an "
                                  "allowed class (see ember.serialization.add_safe_globals)")
        self.stack[-1] = cls.__new__(cls, *args)
    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def load_build(self):
        st = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) in (OrderedDict, Counter):
            if not isinstance(st, dict) or not all(isinstance(k, str) for k in st):
                raise UnpicklingError(f"ember.load: {self.name}: malformed state for an {type(inst).__name__}")
            inst.__dict__.update(st)
            return
        if not any(type(inst) is v for v in _SAFE_GLOBALS.values()):
            raise UnpicklingError(f"ember.load: {self.name}: the pickle sets the state of a "
                                  f"{type(inst).__name__}, which is not an allowed class")
        self.stack.append(st)
        pickle._Unpickler.load_build(self)
    dispatch[pickle.BUILD[0]] = load_build

    # containers: only lists take APPEND(S), only dicts SETITEM(S), only sets ADDITEMS (the opcodes
    # would call append/extend/__setitem__/add on whatever object is on the stack: a tensor, say)
    def load_append(self):
        if type(self.stack[-2]) is not list:
            self._bad_target("APPEND", self.stack[-2])
        pickle._Unpickler.load_append(self)
    dispatch[pickle.APPEND[0]] = load_append

    def load_appends(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is not list:
            self._bad_target("APPENDS", target)
        target.extend(items)
    dispatch[pickle.APPENDS[0]] = load_appends

    def load_setitem(self):
        if type(self.stack[-3]) not in (dict, OrderedDict, Counter):
            self._bad_target("SETITEM", self.stack[-3])
        pickle._Unpickler.load_setitem(self)
    dispatch[pickle.SETITEM[0]] = load_setitem

    def load_setitems(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) not in (dict, OrderedDict, Counter):
            self._bad_target("SETITEMS", target)
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]
    dispatch[pickle.SETITEMS[0]] = load_setitems

    def load_additems(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is not set:
            self._bad_target("ADDITEMS", target)
        target.update(items)
    dispatch[pickle.ADDITEMS[0]] = load_additems

    def _bad_target(self, op, obj):
        if any(type(obj) is v for v in _SAFE_GLOBALS.values()):
            return  # an instance of a class the user allowed: its methods are the user's call
        raise UnpicklingError(f"ember.load: {self.name}: the pickle applies {op} to a {type(obj).__name__}")

    # tuples are hashed (as dict keys, set items) by C code that recurses without a limit: their
    # nesting is bounded as they are built (lists and dicts are checked once loaded)
    def _tuple_depth(self):
        t = self.stack[-1]
        depths = self.tuple_depths
        d = 1 + max((depths[id(x)][0] for x in t if type(x) is tuple and id(x) in depths), default=0)
        if d > MAX_DEPTH:
            raise UnpicklingError(f"ember.load: {self.name}: the saved object is nested more than {MAX_DEPTH} "
                                  "levels deep; ember refuses it")
        if d > 1:
            depths[id(t)] = (d, t)
        elif any(type(x) is tuple for x in t):
            depths[id(t)] = (d, t)

    def load_tuple(self):
        pickle._Unpickler.load_tuple(self)
        self._tuple_depth()
    dispatch[pickle.TUPLE[0]] = load_tuple

    def load_tuple1(self):
        pickle._Unpickler.load_tuple1(self)
        self._tuple_depth()
    dispatch[pickle.TUPLE1[0]] = load_tuple1

    def load_tuple2(self):
        pickle._Unpickler.load_tuple2(self)
        self._tuple_depth()
    dispatch[pickle.TUPLE2[0]] = load_tuple2

    def load_tuple3(self):
        pickle._Unpickler.load_tuple3(self)
        self._tuple_depth()
    dispatch[pickle.TUPLE3[0]] = load_tuple3

    def _refused(self):
        raise UnpicklingError(f"ember.load: {self.name}: the pickle uses an opcode ember refuses "
                              "(INST/OBJ/NEWOBJ_EX/extension codes/FROZENSET/out-of-band buffers)")
    for _op in (pickle.INST, pickle.OBJ, pickle.EXT1, pickle.EXT2, pickle.EXT4, pickle.NEWOBJ_EX,
                pickle.FROZENSET, pickle.BYTEARRAY8, pickle.NEXT_BUFFER, pickle.READONLY_BUFFER):
        dispatch[_op[0]] = _refused
    del _op

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise UnpicklingError(f"unsupported persistent id {pid!r:.80}")
        st, key, location, numel = pid[1:5]
        if not isinstance(st, _StorageType) or not isinstance(key, str) or type(numel) is not int or numel < 0:
            raise UnpicklingError(f"malformed storage reference {pid!r:.120}")
        if not key or not all(c.isalnum() or c in "_-" for c in key):
            raise UnpicklingError(f"storage key {key!r:.60} is not a plain name (path traversal?)")
        if not isinstance(location, str):
            raise UnpicklingError(f"malformed storage location {location!r:.60}")
        if len(pid) == 6 and pid[5] is not None:
            raise UnpicklingError("storage views of the legacy format are not supported")
        return self.load_storage(st.dtype, key, _map_location(location, self.map_location, self.name), numel)

    # -- the allowed rebuild functions
    def _size(self, v=()):
        return Size(_ints(v, "torch.Size"))

    def _rebuild_tensor(self, storage, offset, size, stride, requires_grad=False, backward_hooks=None,
                        metadata=None):
        if not isinstance(storage, _Storage):
            raise UnpicklingError(f"a tensor's storage is a {type(storage).__name__}, not a storage")
        size, stride = _ints(size, "a tensor's size"), _ints(stride, "a tensor's stride")
        if type(offset) is not int:
            raise UnpicklingError(f"a tensor's storage offset must be an int, got {offset!r:.40}")
        if not isinstance(requires_grad, bool):
            raise UnpicklingError("a tensor's requires_grad must be a bool")
        arr = storage.array
        n = arr.shape[0]
        if len(size) != len(stride):
            raise UnpicklingError(f"a tensor has size {list(size)} but stride {list(stride)}")
        if len(size) > 64:
            raise UnpicklingError(f"a tensor has {len(size)} dimensions; at most 64 are supported")
        if offset < 0:
            raise UnpicklingError(f"a tensor has a negative storage offset {offset}")
        if any(s < 0 for s in size):
            raise UnpicklingError(f"a tensor has a negative size {list(size)}")
        if any(s < 0 for s in stride):
            raise UnpicklingError(f"a tensor has a negative stride {list(stride)}")
        numel = 1
        for s in size:
            numel *= s
        last = offset + sum((sz - 1) * st for sz, st in zip(size, stride)) if numel else offset - 1
        if offset > n or last >= n:
            raise UnpicklingError(f"a tensor of size {list(size)}, stride {list(stride)} and storage offset "
                                  f"{offset} reaches element {last} of a storage of {n} elements (out of bounds)")
        if self.dry:
            return None
        if storage.meta or self.meta:
            from ._creation import empty
            t = empty(size, dtype=dt.FROM_NP[arr.dtype], device="meta")
        else:
            from ._tensor import new_tensor
            isz = arr.itemsize
            view = np.ndarray(size, arr.dtype, buffer=arr, offset=offset * isz,
                              strides=tuple(s * isz for s in stride)) if n else np.empty(size, arr.dtype)
            t = new_tensor(view)
            if not requires_grad and n:
                if storage.base is None:
                    storage.base = new_tensor(arr)
                    storage.base._vc = [0, None]
                t._base, t._vc = storage.base, storage.base._vc
        if requires_grad:
            t.requires_grad_(True)
        return t

    def _rebuild_tensor_v3(self, storage, offset, size, stride, requires_grad, backward_hooks, dtype,
                           metadata=None):
        return self._rebuild_tensor(storage, offset, size, stride, requires_grad, backward_hooks, metadata)

    def _rebuild_meta(self, dtype, size, stride, requires_grad=False):
        from ._creation import empty
        if not isinstance(dtype, dt.dtype):
            raise UnpicklingError("a meta tensor's dtype is not a dtype")
        size = _ints(size, "a meta tensor's size")
        if any(s < 0 for s in size) or len(size) > 64:
            raise UnpicklingError(f"a meta tensor has an invalid size {list(size)}")
        if self.dry:
            return None
        t = empty(size, dtype=dtype, device="meta")
        if requires_grad is True:
            t.requires_grad_(True)
        return t

    def _rebuild_parameter(self, data, requires_grad, backward_hooks=None, state=None):
        from .nn.parameter import Parameter
        if self.dry:
            return None
        if not isinstance(data, Tensor) or not isinstance(requires_grad, bool):
            raise UnpicklingError("a parameter's data is not a tensor")
        data._base = None
        return Parameter(data, requires_grad=requires_grad)

    def _rebuild_from_type(self, func, new_type, args, state):
        if not self._may_call(func) or not isinstance(args, tuple):
            raise UnpicklingError("_rebuild_from_type_v2 with a function that is not allowed")
        t = func(*args)
        if self.dry:
            return None
        if new_type is _TORCH_PARAMETER and not type(t).__name__ == "Parameter":
            t = self._rebuild_parameter(t, t.requires_grad)
        elif new_type is not _TORCH_TENSOR and new_type is not _TORCH_PARAMETER:
            raise UnpicklingError(f"tensor subclass {new_type!r:.60} is not supported")
        if state:
            if not isinstance(state, dict) or not all(isinstance(k, str) and not k.startswith("_") for k in state):
                raise UnpicklingError("a tensor's attributes are malformed")
            t.__dict__.update(state)
        return t


def _is_meta(map_location):
    if map_location is None or callable(map_location) or isinstance(map_location, dict):
        return False
    return str(map_location).startswith("meta")


def _map_location(location, map_location, name):
    """Where a storage saved at ``location`` goes: 'cpu' or 'meta' (CUDA is refused as PyTorch's
    CPU-only build refuses it)."""
    loc = location
    if isinstance(map_location, dict):
        loc = map_location.get(location, location)
    elif map_location is not None and not callable(map_location):
        loc = str(map_location)
    if callable(map_location) and not isinstance(map_location, dict):
        try:  # ember has no storage objects: the function sees None and the saved location
            r = map_location(None, location)
        except Exception as e:
            raise RuntimeError(f"ember.load: {name}: map_location(storage, {location!r}) raised "
                               f"{type(e).__name__}: {e} (ember passes None for the storage; return a "
                               "location such as 'cpu', or None to keep it)") from None
        if r is not None:
            loc = str(r) if not isinstance(r, str) else r
    loc = str(loc)
    if loc.startswith("cpu"):
        return "cpu"
    if loc.startswith("meta"):
        return "meta"
    if loc.startswith("cuda"):
        raise RuntimeError(f"ember.load: {name}: Attempting to deserialize object on a CUDA device but "
                           "ember.cuda.is_available() is False. If you are running on a CPU-only machine, "
                           "please use ember.load with map_location=ember.device('cpu') to map your storages "
                           "to the CPU.")
    raise RuntimeError(f"ember.load: {name}: don't know how to restore data location {loc!r:.40}")


def _unpickle(data, name, load_storage, map_location, encoding="utf-8", dry=False):
    up = _Unpickler(io.BytesIO(data), name, load_storage, map_location, encoding=encoding, dry=dry)
    try:
        obj = up.load()
    except UnpicklingError as e:
        msg = str(e)
        raise UnpicklingError(msg if msg.startswith("ember.load:") else f"ember.load: {name}: {msg}") from None
    except RuntimeError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, AttributeError, IndexError,
            struct.error, MemoryError, OverflowError, UnicodeDecodeError) as e:
        raise UnpicklingError(f"ember.load: {name}: the pickle is corrupt or not a checkpoint "
                              f"({type(e).__name__}: {str(e)[:200]})") from None
    _check_depth(obj, name)
    return obj


