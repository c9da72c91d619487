"""The writing half of ember's checkpoints: the protocol-2 pickle ``torch.save`` writes (written by
hand, so no PyTorch is needed) and the zip archive around it (uncompressed, 64-byte aligned
storage records). See ember._serialization."""
import struct
import sys
import pickle
import zipfile
from collections import OrderedDict

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor, Size
from ._pickle_reader import _ALIGN, _CHUNK, _STORAGE_OF

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


