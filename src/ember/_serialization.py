"""ember.save / ember.load in PyTorch's checkpoint format, read by a loader that never runs code.

``ember.save`` writes the zip layout that ``torch.save`` writes and ``torch.load(weights_only=True)``
reads: ``<archive>/data.pkl`` (the object tree, a protocol-2 pickle that names only
``torch._utils._rebuild_tensor_v2``, ``_rebuild_parameter``, ``collections.OrderedDict``, the
storage types, dtypes, ``torch.Size`` and ``torch.device``), one uncompressed, 64-byte aligned
``data/<key>`` record per storage (views of one storage share it) and the ``version`` and
``byteorder`` records. The pickle is written by hand here, so no PyTorch is needed to write it.
A save to a path goes to a unique temporary file in the same folder, is flushed to the disk and
then renamed over the target: a failed or killed save leaves the previous file as it was.

``ember.load`` reads PyTorch's zip files, PyTorch's legacy (pre-1.6, non-zip) files, safetensors
files (recognised by content) and, for a transition period, ember's earlier zip of ``.npy`` files.
Pickles go through a restricted unpickler that resolves only the names PyTorch's
``weights_only=True`` loader allows (plus those given to
``ember.serialization.add_safe_globals``) and calls nothing else; every storage offset, size,
stride and element count is checked against the storage's real length before a view is made; a
record is read only up to the size its metadata declares; nesting is bounded. A corrupt,
truncated or hostile file raises a one-line error naming the file.
"""
import io
import json
import os
import pickle
import struct
import sys
import tempfile
import zipfile
from collections import Counter, OrderedDict

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor, Size

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]

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


# ============================================================================= save: the pickle

_P = pickle  # opcodes as bytes


class _Pickler:
    """Writes a protocol-2 pickle of tensors and containers in the form torch.save writes it."""

    def __init__(self):
        self.out = bytearray(pickle.PROTO + b"\x02")
        self.memo = {}          # id(obj) -> memo index (tensors, lists, dicts, globals)
        self.keep = []          # keeps memoised objects alive while their ids are in use
        self.storages = {}      # id(root array) -> [key, dtype name, flat array, location]
        self.n_storages = 0

    # -- primitives
    def _put(self, key):
        i = len(self.memo)
        self.memo[key] = i
        self.out += (_P.BINPUT + bytes([i])) if i < 256 else (_P.LONG_BINPUT + struct.pack("<I", i))

    def _get(self, key):
        i = self.memo.get(key)
        if i is None:
            return False
        self.out += (_P.BINGET + bytes([i])) if i < 256 else (_P.LONG_BINGET + struct.pack("<I", i))
        return True

    def _global(self, module, name):
        key = ("global", module, name)
        if not self._get(key):
            self.out += _P.GLOBAL + f"{module}\n{name}\n".encode("ascii")
            self._put(key)

    def _int(self, v):
        if 0 <= v < 256:
            self.out += _P.BININT1 + bytes([v])
        elif 0 <= v < 65536:
            self.out += _P.BININT2 + struct.pack("<H", v)
        elif -2 ** 31 <= v < 2 ** 31:
            self.out += _P.BININT + struct.pack("<i", v)
        else:
            b = pickle.encode_long(v)
            self.out += (_P.LONG1 + bytes([len(b)]) if len(b) < 256 else _P.LONG4 + struct.pack("<i", len(b))) + b

    def _str(self, s):
        b = s.encode("utf-8", "surrogatepass")
        self.out += _P.BINUNICODE + struct.pack("<I", len(b)) + b

    def _tuple(self, items, path):
        n = len(items)
        if n == 0:
            self.out += _P.EMPTY_TUPLE
            return
        if n > 3:
            self.out += _P.MARK
        for i, v in enumerate(items):
            self.encode(v, f"{path}[{i}]")
        self.out += (_P.TUPLE1, _P.TUPLE2, _P.TUPLE3)[n - 1] if n <= 3 else _P.TUPLE

    def _items(self, pairs, path):
        pairs = list(pairs)
        for i in range(0, len(pairs), 1000):
            self.out += _P.MARK
            for k, v in pairs[i:i + 1000]:
                self.encode(k, f"{path} key")
                self.encode(v, f"{path}[{k!r}]")
            self.out += _P.SETITEMS

    def _empty_odict(self):
        self._global("collections", "OrderedDict")
        self.out += _P.EMPTY_TUPLE + _P.REDUCE

    # -- objects
    def encode(self, obj, path):
        if obj is None:
            self.out += _P.NONE
        elif obj is True or obj is False:
            self.out += _P.NEWTRUE if obj else _P.NEWFALSE
        elif isinstance(obj, int):
            self._int(int(obj))
        elif isinstance(obj, float):
            self.out += _P.BINFLOAT + struct.pack(">d", float(obj))
        elif isinstance(obj, str):
            self._str(str(obj))
        elif isinstance(obj, Tensor):
            self._tensor(obj, path)
        elif isinstance(obj, (list, dict, set)):
            if id(obj) in self.memo:
                self._get(id(obj))
                return
            self.keep.append(obj)
            if isinstance(obj, list):
                self.out += _P.EMPTY_LIST
                self._put(id(obj))
                for i in range(0, len(obj), 1000):
                    self.out += _P.MARK
                    for j, v in enumerate(obj[i:i + 1000]):
                        self.encode(v, f"{path}[{i + j}]")
                    self.out += _P.APPENDS
            elif isinstance(obj, set):
                self._global("__builtin__", "set")
                self.out += _P.EMPTY_LIST + _P.MARK
                for v in obj:
                    self.encode(v, f"{path} item")
                self.out += _P.APPENDS + _P.TUPLE1 + _P.REDUCE
                self._put(id(obj))
            elif isinstance(obj, OrderedDict):
                self._empty_odict()
                self._put(id(obj))
                self._items(obj.items(), path)
                state = getattr(obj, "__dict__", None)
                if state:
                    self.out += _P.EMPTY_DICT
                    self._items(state.items(), f"{path}.__dict__")
                    self.out += _P.BUILD
            else:
                self.out += _P.EMPTY_DICT
                self._put(id(obj))
                self._items(obj.items(), path)
        elif isinstance(obj, tuple) and not isinstance(obj, Size):
            self._tuple(obj, path)
        elif isinstance(obj, Size):
            self._global("torch", "Size")
            self._tuple((tuple(int(s) for s in obj),), path)
            self.out += _P.REDUCE
        elif isinstance(obj, dt.dtype):
            self._global("torch", obj.name)
        elif isinstance(obj, (bytes, bytearray)):
            if isinstance(obj, bytearray):
                self._global("__builtin__", "bytearray")
            self._global("_codecs", "encode")
            self._str(bytes(obj).decode("latin1"))
            self._str("latin1")
            self.out += _P.TUPLE2 + _P.REDUCE
            if isinstance(obj, bytearray):
                self.out += _P.TUPLE1 + _P.REDUCE
        elif isinstance(obj, complex):
            self._global("__builtin__", "complex")
            self.out += (_P.BINFLOAT + struct.pack(">d", obj.real) + _P.BINFLOAT + struct.pack(">d", obj.imag)
                         + _P.TUPLE2 + _P.REDUCE)
        elif isinstance(obj, np.generic):
            self.encode(obj.item(), path)
        elif isinstance(obj, np.ndarray):
            from ._creation import as_tensor
            self._tensor(as_tensor(obj), path)
        elif type(obj).__name__ == "device" and type(obj).__module__ == "ember._tensor":
            self._global("torch", "device")
            self._str(str(obj))
            self.out += _P.TUPLE1 + _P.REDUCE
        else:
            raise TypeError(f"ember.save: cannot save an object of type {type(obj).__module__}."
                            f"{type(obj).__qualname__} at {path}: checkpoints hold tensors, numbers, strings, "
                            "bytes, None, dtypes, devices, Sizes and dicts/lists/tuples/sets of them (save a "
                            "module's state_dict(), not the module)")

    def _tensor(self, t, path):
        if self._get(id(t)):
            return
        self.keep.append(t)
        from .nn.parameter import Parameter
        if isinstance(t, Parameter):
            self._global("torch._utils", "_rebuild_parameter")
            self.out += _P.MARK
        if t._meta:
            self._global("torch._utils", "_rebuild_meta_tensor_no_storage")
            self.out += _P.MARK
            self._global("torch", t.dtype.name)
            self._tuple(tuple(t.shape), path)
            self._tuple(tuple(t.stride()), path)
            self.out += (_P.NEWTRUE if t.requires_grad else _P.NEWFALSE) + _P.TUPLE + _P.REDUCE
        else:
            key, numel, offset, stride = self._storage(t)
            self._global("torch._utils", "_rebuild_tensor_v2")
            self.out += _P.MARK + _P.MARK
            self._str("storage")
            self._global("torch", _STORAGE_OF[t.dtype.name])
            self._str(key)
            self._str("cpu")
            self._int(numel)
            self.out += _P.TUPLE + _P.BINPERSID
            self._int(offset)
            self._tuple(tuple(t.shape), path)
            self._tuple(stride, path)
            self.out += _P.NEWTRUE if (t.requires_grad and not isinstance(t, Parameter)) else _P.NEWFALSE
            self._empty_odict()
            self.out += _P.TUPLE + _P.REDUCE
        if isinstance(t, Parameter):
            self.out += _P.NEWTRUE if t.requires_grad else _P.NEWFALSE
            self._empty_odict()
            self.out += _P.TUPLE + _P.REDUCE
        self._put(id(t))

    def _storage(self, t):
        """(key, numel, offset, stride) of t in the storage it shares with the tensors that view the
        same memory; a tensor whose memory is not one dense array of its dtype gets a copy."""
        a = t._data
        isz = a.itemsize
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        ok = (root.dtype == a.dtype and (root.flags.c_contiguous or root.flags.f_contiguous)
              and all(s >= 0 and s % isz == 0 for s in a.strides))
        if ok:
            off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
            ok = off >= 0 and off % isz == 0
        if ok:
            flat = root.ravel(order="K")
            ok = flat.__array_interface__["data"][0] == root.__array_interface__["data"][0] or root.size == 0
        if not ok:  # an odd layout (a dtype view, a negative stride): a dense copy of its own
            root = np.array(a, order="C")
            flat, off = root.reshape(-1), 0
            stride = tuple(s // isz for s in root.strides)
        else:
            stride = tuple(s // isz for s in a.strides)
        entry = self.storages.get(id(root))
        if entry is None:
            entry = self.storages[id(root)] = [str(self.n_storages), a.dtype, flat, root]
            self.n_storages += 1
        return entry[0], flat.size, off // isz, stride


# ============================================================================= save: the archive

class _FromHere:
    """A file object seen from its current position: the archive's offsets count from where it
    starts, as PyTorch's reader expects for an archive written into the middle of a stream."""

    def __init__(self, fh, start):
        self.fh, self.start = fh, start

    def write(self, b):
        return self.fh.write(b)

    def tell(self):
        return self.fh.tell() - self.start

    def seek(self, pos, whence=0):
        return self.fh.seek(pos + self.start if whence == 0 else pos, whence) - self.start

    def flush(self):
        return self.fh.flush()


def _write_archive(fh, pkl, storages, archive):
    import secrets
    try:
        start = fh.tell()
    except (OSError, AttributeError, ValueError):
        start = 0
    if start:
        fh = _FromHere(fh, start)
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        def record(name, data, align=False):
            info = zipfile.ZipInfo(f"{archive}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            n = len(data) if isinstance(data, (bytes, bytearray)) else data.nbytes
            info.file_size = n
            zip64 = n * 1.05 > zipfile.ZIP64_LIMIT
            if align:
                head = zf.start_dir + 30 + len(info.filename.encode("utf-8")) + 4 + (20 if zip64 else 0)
                pad = -head % _ALIGN
                info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            with zf.open(info, "w", force_zip64=zip64) as w:
                if isinstance(data, (bytes, bytearray)):
                    w.write(data)
                else:
                    mv = memoryview(data.view(np.uint8) if data.size else np.empty(0, np.uint8))
                    for i in range(0, len(mv), _CHUNK):
                        w.write(mv[i:i + _CHUNK])

        record("data.pkl", bytes(pkl))
        record(".format_version", b"1")
        record(".storage_alignment", str(_ALIGN).encode())
        record("byteorder", sys.byteorder.encode())
        for key, _dtype, flat, _root in storages:
            record(f"data/{key}", flat, align=True)
        record("version", b"3\n")
        record(".data/serialization_id", str(secrets.randbits(128)).zfill(40).encode())


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Write ``obj`` (tensors, numbers, strings, None, nested dicts/lists/tuples/OrderedDicts of them)
    in PyTorch's checkpoint format to a path or a binary file object.

    A path is written atomically: to a new temporary file in the same folder, flushed to the disk,
    then renamed over ``f``; if anything fails the previous file stays as it was and no temporary
    file is left behind. ``pickle_module`` and ``pickle_protocol`` are accepted as PyTorch's are;
    ember writes the protocol-2 pickle ``torch.save`` writes whatever they say."""
    name = _name(f)
    if isinstance(f, (str, os.PathLike)) and os.fspath(f).endswith(".safetensors"):
        raise ValueError(f"ember.save: {name!r} has a .safetensors name but ember.save writes PyTorch's "
                         "checkpoint format; use ember.utils.safetensors.save_file(tensors, path) for safetensors")
    p = _Pickler()
    try:
        p.encode(obj, "the saved object")
    except RecursionError:
        raise ValueError(f"ember.save: the object saved to {name} is nested too deeply to save "
                         "(more than Python's recursion limit)") from None
    p.out += pickle.STOP
    storages = list(p.storages.values())
    if not isinstance(f, (str, os.PathLike)):
        base = os.path.splitext(os.path.basename(name))[0] if isinstance(getattr(f, "name", None), str) else ""
        _write_archive(f, p.out, storages, _archive_name(base))
        return
    _atomic_write(os.fspath(f), lambda fh: _write_archive(
        fh, p.out, storages, _archive_name(os.path.splitext(os.path.basename(os.fspath(f)))[0])))


def _archive_name(stem):
    ok = stem and all(c.isalnum() or c in "-_." for c in stem) and not stem.startswith(".")
    return stem if ok else "archive"


def _atomic_write(path, write):
    """Run write(fh) on a unique temporary file next to ``path``, fsync it and rename it over path."""
    target = os.path.realpath(path)  # through a symlink, as an ordinary open() would write
    folder = os.path.dirname(target) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise type(e)(e.errno, f"ember.save: cannot create a file next to {path!r}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and e.errno is not None:
            raise type(e)(e.errno, f"ember.save: writing {path!r} failed ({e.strerror}); the previous "
                                   "file, if any, is unchanged") from None
        raise
    try:  # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


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


# ============================================================================= load: formats

def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Read a checkpoint: PyTorch's zip or legacy format, safetensors, or ember's earlier format.

    Never runs code from the file, whatever ``weights_only`` says: objects other than tensors,
    containers, numbers and strings load only if their class was allowed with
    ``ember.serialization.add_safe_globals``. ``map_location`` may be 'cpu', 'meta', a device,
    a dict or a function as in PyTorch (CUDA locations are refused as by a CPU-only PyTorch);
    ``mmap=True`` maps the storages of a zip file read by path instead of reading them."""
    name = _name(f)
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if pickle_load_args:
        raise TypeError(f"ember.load: unexpected arguments {sorted(pickle_load_args)}")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if not os.path.exists(path):
            raise FileNotFoundError(f"ember.load: no such file: {name!r}")
        if os.path.isdir(path):
            raise IsADirectoryError(f"ember.load: {name!r} is a folder, not a checkpoint file")
        with open(path, "rb") as src:
            return _load_from(src, name, map_location, path if mmap else None, encoding)
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    if isinstance(f, (bytes, bytearray, memoryview)):
        raise AttributeError("ember.load: expected a path or a binary file object, got bytes (wrap them in "
                             "io.BytesIO)")
    src = f
    if not (hasattr(src, "seekable") and src.seekable()):
        src = io.BytesIO(f.read())
    return _load_from(src, name, map_location, None, encoding)


def _load_from(src, name, map_location, mmap_path, encoding):
    start = src.tell()
    head = src.read(16)
    src.seek(start)
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        try:
            zf = zipfile.ZipFile(src, "r")
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            raise RuntimeError(f"ember.load: {name} is not an ember checkpoint or is truncated/corrupted "
                               f"(not a readable zip archive: {e})") from None
        with zf:
            src.seek(0, 2)
            zf._ember_size = src.tell() - start
            _check_names(zf, name)
            names = zf.namelist()
            if _MANIFEST in names:
                return _load_ember_v1(zf, name, map_location)
            pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") <= 1]
            if not pkl:
                raise RuntimeError(f"ember.load: {name} is not an ember checkpoint: it has no data.pkl "
                                   f"(PyTorch's format) and no {_MANIFEST} (ember's earlier format)")
            return _load_torch_zip(zf, pkl[0][:-len("data.pkl")], name, map_location, mmap_path, encoding)
    if len(head) >= 9 and head[8:9] == b"{" and struct.unpack("<Q", head[:8])[0] > 0:
        from .utils import safetensors as st
        return st._load_stream(src, name)
    if head[:2] == b"\x80\x02":
        return _load_torch_legacy(src, name, map_location, encoding)
    raise RuntimeError(f"ember.load: {name} is not an ember checkpoint or is truncated/corrupted (neither a "
                       "zip archive, a legacy PyTorch file nor a safetensors file)")


def _load_torch_zip(zf, prefix, name, map_location, mmap_path, encoding):
    infos = {i.filename: i for i in zf.infolist()}
    if prefix + "byteorder" in infos:
        order = bytes(_read_record(zf, infos[prefix + "byteorder"], name, "the byteorder record", limit=16))
        if order.decode("ascii", "replace").strip() != "little":
            raise RuntimeError(f"ember.load: {name} was saved on a {order!r:.20}-endian machine; ember reads "
                               "little-endian checkpoints")
    data = _read_record(zf, infos[prefix + "data.pkl"], name, "data.pkl", limit=_MAX_PICKLE).tobytes()
    storages = {}
    mm = None
    if mmap_path is not None:
        import mmap as _mmap
        with open(mmap_path, "rb") as fh:
            mm = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_COPY) if os.path.getsize(mmap_path) else None

    def load_storage(dtype, key, location, numel):
        s = storages.get(key)
        if s is not None:
            if s.array.dtype != np.dtype(dtype.np) or s.array.shape[0] != numel:
                raise UnpicklingError(f"storage {key} is referred to as {numel} x {dtype.name} and as "
                                      f"{s.array.shape[0]} x {s.array.dtype}")
            return s
        nbytes = numel * dtype.itemsize
        if location == "meta":
            s = _Storage(np.empty(0, dtype.np)[:0] if numel == 0 else
                         np.lib.stride_tricks.as_strided(np.zeros(1, dtype.np), (numel,), (0,)), meta=True)
        else:
            info = infos.get(f"{prefix}data/{key}")
            if info is None:
                raise UnpicklingError(f"the data of storage {key} ({prefix}data/{key}) is missing")
            if mm is not None and info.compress_type == zipfile.ZIP_STORED:
                _record_checks(zf, info, name, f"storage {key}", expected=nbytes)
                off = _data_offset(mm, info, name)
                if off + nbytes > len(mm):
                    raise UnpicklingError(f"storage {key} runs past the end of the file")
                arr = np.ndarray((numel,), dtype.np, buffer=mm, offset=off)
            else:
                _record_checks(zf, info, name, f"storage {key}", expected=nbytes)
                arr = np.empty(numel, dtype.np)  # the storage owns its array: views of it share it
                _read_record(zf, info, name, f"storage {key}", expected=nbytes, out=arr.view(np.uint8))
            s = _Storage(arr)
        storages[key] = s
        return s

    return _unpickle(data, name, load_storage, map_location, encoding)


def _data_offset(mm, info, name):
    h = info.header_offset
    if h + 30 > len(mm) or mm[h:h + 4] != b"PK\x03\x04":
        _fail(name, f"the local header of {info.filename} is corrupted")
    n, m = struct.unpack("<HH", mm[h + 26:h + 30])
    return h + 30 + n + m


_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c


def _load_torch_legacy(src, name, map_location, encoding):
    """PyTorch's format before 1.6: pickles of the magic number, the protocol version, system
    information and the object, the list of storage keys, then each storage as its element count
    (8 bytes) and its bytes."""
    data = src.read(_MAX_PICKLE + 1)
    if len(data) > _MAX_PICKLE:
        _fail(name, "a legacy PyTorch file over 1 GiB is not supported; re-save it with a recent PyTorch")
    view = memoryview(data)
    pos = [0]

    def small_pickle():
        fh = io.BytesIO(view[pos[0]:])
        up = _Unpickler(fh, name, None, map_location, encoding=encoding)
        try:
            v = up.load()
        except Exception as e:
            raise UnpicklingError(f"ember.load: {name}: a corrupt legacy PyTorch header "
                                  f"({type(e).__name__}: {str(e)[:120]})") from None
        pos[0] += fh.tell()
        return v

    if small_pickle() != _LEGACY_MAGIC:
        _fail(name, "is not an ember checkpoint or is truncated/corrupted (a pickle without PyTorch's magic "
                    "number)")
    if small_pickle() != 1001:
        _fail(name, "has an unknown legacy PyTorch protocol version")
    info = small_pickle()
    if not isinstance(info, dict) or info.get("little_endian") is not True:
        _fail(name, "was saved on a big-endian machine or has a malformed header; ember reads little-endian files")
    fh = io.BytesIO(view[pos[0]:])
    try:
        _skip_pickle(fh)
    except Exception as e:
        raise UnpicklingError(f"ember.load: {name}: the object pickle is corrupt ({type(e).__name__}: "
                              f"{str(e)[:120]})") from None
    obj_start, obj_end = pos[0], pos[0] + fh.tell()
    pos[0] = obj_end
    keys = small_pickle()
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        _fail(name, "the storage key list is malformed", UnpicklingError)
    # the dtype of every key comes from the object pickle: unpickle it with a recorder first
    sizes = {}

    def record_storage(dtype, key, location, numel):
        sizes.setdefault(key, (dtype, numel))
        return _Storage(np.lib.stride_tricks.as_strided(np.zeros(1, dtype.np), (numel,), (0,)), meta=True)

    _unpickle(bytes(view[obj_start:obj_end]), name, record_storage, "meta", encoding, dry=True)
    p = pos[0]
    arrays = {}
    for k in keys:
        if k not in sizes:
            _fail(name, f"storage {k} is listed but no tensor uses it", UnpicklingError)
        dtype, numel = sizes[k]
        if p + 8 > len(data):
            _fail(name, f"is truncated: storage {k} is missing")
        n = struct.unpack("<q", data[p:p + 8])[0]
        if n != numel:
            _fail(name, f"storage {k} holds {n} elements, but the pickle declares {numel}")
        nbytes = numel * dtype.itemsize
        if p + 8 + nbytes > len(data):
            _fail(name, f"is truncated: storage {k} needs {nbytes} bytes")
        arrays[k] = np.frombuffer(data, dtype.np, count=numel, offset=p + 8).copy()
        p += 8 + nbytes
    cache = {}

    def load_real(dtype, key, location, numel):
        if location == "meta":
            return record_storage(dtype, key, location, numel)
        if key not in arrays:
            raise UnpicklingError(f"storage {key} has no data in the file")
        s = cache.get(key)
        if s is None:
            arr = arrays[key]
            if arr.dtype != np.dtype(dtype.np) or arr.shape[0] != numel:
                raise UnpicklingError(f"storage {key} is used with two different types")
            s = cache[key] = _Storage(arr)
        return s

    return _unpickle(bytes(view[obj_start:obj_end]), name, load_real, map_location, encoding)


def _skip_pickle(fh):
    """Advance fh past one pickle without building anything (opcodes only)."""
    import pickletools
    for op, _arg, _pos in pickletools.genops(fh):
        if op.code == ".":
            return


# ============================================================================= ember's earlier format

FORMAT = "ember-checkpoint"
VERSION = 1
_MANIFEST = "manifest.json"


class _Reader:
    """ember's format before PyTorch's: manifest.json (the object tree) + data/<k>.npy per tensor."""

    def __init__(self, zf, name, map_location):
        self.zf = zf
        self.name = name
        self.cache = {}
        self.map_location = map_location

    def fail(self, what):
        raise RuntimeError(f"ember.load: {self.name} is corrupted: {what}")

    def tensor(self, d):
        from ._creation import empty
        from ._tensor import new_tensor
        k = d.get("id")
        if not isinstance(k, int):
            self.fail(f"a tensor entry has no valid id ({d!r:.80})")
        dtype = _DTYPES.get(d.get("dtype")) if isinstance(d.get("dtype"), str) else None
        if dtype is None:
            self.fail(f"unknown dtype {d.get('dtype')!r} for tensor {k}")
        shape = d.get("shape")
        if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape) or len(shape) > 64:
            self.fail(f"invalid shape {shape!r:.80} for tensor {k}")
        meta = bool(d.get("meta")) or _is_meta(self.map_location)
        t = self.cache.get(k)
        if t is None:
            if meta:
                t = empty(tuple(shape), dtype=dtype, device="meta")
            else:
                member = f"data/{k}.npy"
                info = self.zf.NameToInfo.get(member)
                if info is None:
                    self.fail(f"the data of tensor {k} ({member}) is missing")
                n = 1
                for s in shape:
                    n *= s
                nbytes = n * dtype.itemsize
                if info.file_size > nbytes + 65536:
                    self.fail(f"the data of tensor {k} ({member}) is {info.file_size} bytes, more than the "
                              f"{nbytes} its shape needs")
                raw = _read_record(self.zf, info, self.name, f"the data of tensor {k}", limit=nbytes + 65536)
                try:
                    arr = np.load(io.BytesIO(raw.tobytes()), allow_pickle=False)
                except Exception as e:
                    self.fail(f"the data of tensor {k} ({member}) is not a valid array: {e}")
                if arr.dtype != np.dtype(dtype.np) or list(arr.shape) != shape:
                    self.fail(f"tensor {k} holds {arr.dtype}{list(arr.shape)} but the manifest says "
                              f"{dtype.name}{shape}")
                t = new_tensor(arr)
            self.cache[k] = t
        if d.get("ndarray"):
            return t._data
        if d.get("parameter"):
            from .nn.parameter import Parameter
            return Parameter(t, requires_grad=bool(d.get("requires_grad")))
        if d.get("requires_grad"):
            t.requires_grad_(True)
        return t

    def decode(self, o, depth=0):
        if depth > MAX_DEPTH:
            self.fail(f"the manifest is nested more than {MAX_DEPTH} levels deep")
        if o is None or isinstance(o, (bool, int, float, str)):
            return o
        if isinstance(o, list):
            self.fail("an unexpected bare list in the manifest")
        if not isinstance(o, dict) or "t" not in o:
            self.fail(f"an unexpected entry {o!r:.80} in the manifest")
        t = o["t"]
        d = depth + 1
        try:
            if t == "tensor":
                return self.tensor(o)
            if t in ("dict", "odict"):
                out = OrderedDict() if t == "odict" else {}
                for k, v in o["items"]:
                    out[_hashable(self.decode(k, d))] = self.decode(v, d)
                if "metadata" in o:
                    out = OrderedDict(out)
                    out._metadata = OrderedDict(self.decode(o["metadata"], d))
                return out
            if t == "list":
                return [self.decode(v, d) for v in o["items"]]
            if t == "tuple":
                return tuple(self.decode(v, d) for v in o["items"])
            if t == "int":
                return int(o["v"])
            if t == "float":
                return float(o["v"])
            if t == "complex":
                return complex(*o["v"])
            if t == "bytes":
                return bytes.fromhex(o["v"])
            if t == "dtype":
                return _DTYPES[o["v"]]
            if t == "size":
                return Size(int(v) for v in o["v"])
            if t == "slice":
                return slice(*(self.decode(v, d) for v in o["v"]))
            if t == "memory_format":
                from ._memory_format import _by_name
                return _by_name(o["v"])
        except RuntimeError:
            raise
        except (KeyError, TypeError, ValueError) as e:
            self.fail(f"a malformed {t!r} entry in the manifest ({type(e).__name__}: {e})")
        self.fail(f"an unknown entry type {t!r} in the manifest")


_DTYPES = {v.name: v for v in dt.FROM_NP.values()}


def _hashable(k):
    return tuple(_hashable(v) for v in k) if isinstance(k, list) else k


def _load_ember_v1(zf, name, map_location):
    info = zf.getinfo(_MANIFEST)
    raw = _read_record(zf, info, name, _MANIFEST, limit=_MAX_PICKLE)
    try:
        manifest = json.loads(raw.tobytes().decode("utf-8"))
    except RecursionError:
        raise RuntimeError(f"ember.load: {name} is corrupted: {_MANIFEST} is nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise RuntimeError(f"ember.load: {name} is corrupted: {_MANIFEST} is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RuntimeError(f"ember.load: {name} is not an ember checkpoint (unknown format "
                           f"{manifest.get('format') if isinstance(manifest, dict) else None!r:.40})")
    if manifest.get("version") != VERSION:
        raise RuntimeError(f"ember.load: {name} has checkpoint version {manifest.get('version')!r:.20}; "
                           f"this ember reads version {VERSION}")
    if "object" not in manifest:
        raise RuntimeError(f"ember.load: {name} is corrupted: the manifest has no object")
    try:
        return _Reader(zf, name, map_location).decode(manifest["object"])
    except RecursionError:
        raise RuntimeError(f"ember.load: {name} is corrupted: the manifest is nested too deeply") from None
