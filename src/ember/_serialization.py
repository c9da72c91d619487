"""ember.save / ember.load: tensors and nested containers in a format that cannot run code.

A checkpoint is a zip archive holding ``manifest.json`` (the object tree: dicts, lists, tuples,
strings, numbers, None, dtypes, sizes and tensor references) and one ``.npy`` file per tensor,
read back with ``allow_pickle=False``. Nothing in the file names a class to import or a function
to call, so loading an untrusted file can at worst fail; a corrupted or truncated file raises a
RuntimeError naming the file and what is wrong.

``ember.load`` also reads PyTorch's zip checkpoints (``torch.save`` of tensors and state dicts)
through an unpickler that resolves only a fixed list of names (OrderedDict, the tensor and
parameter rebuild functions, the storage types) and refuses everything else, as PyTorch's
``weights_only=True`` does.
"""
import pickle
from collections import OrderedDict
import io
import json
import math
import os
import zipfile

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor, Size

FORMAT = "ember-checkpoint"
VERSION = 1
_MANIFEST = "manifest.json"


def _name(f):
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    return getattr(f, "name", None) or f"<{type(f).__name__}>"


# ----------------------------------------------------------------------------- save


class _Writer:
    def __init__(self, zf):
        self.zf = zf
        self.ids = {}       # id(tensor) -> index, so one tensor object saved twice loads as one
        self.keep = []      # keeps the saved objects alive while ids are in use

    def tensor(self, t, path):
        k = self.ids.get(id(t))
        if k is None:
            k = self.ids[id(t)] = len(self.ids)
            self.keep.append(t)
            if t._meta:
                arr = None
            else:
                arr = t._data if t._data.flags.c_contiguous else np.array(t._data, order="C")
                buf = io.BytesIO()
                np.save(buf, arr, allow_pickle=False)
                self.zf.writestr(f"data/{k}.npy", buf.getvalue())
        from .nn.parameter import Parameter
        return {"t": "tensor", "id": k, "dtype": t.dtype.name, "shape": list(t.shape),
                "requires_grad": bool(t._rg), "parameter": isinstance(t, Parameter), "meta": bool(t._meta)}

    def encode(self, obj, path):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return {"t": "int", "v": str(obj)} if abs(obj) >= 2 ** 53 else obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"t": "float", "v": repr(obj)}
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, np.generic):
            return self.encode(obj.item(), path)
        if isinstance(obj, np.ndarray):
            from ._creation import as_tensor
            d = self.tensor(as_tensor(obj), path)
            d["ndarray"] = True
            return d
        if isinstance(obj, dt.dtype):
            return {"t": "dtype", "v": obj.name}
        if isinstance(obj, Size):
            return {"t": "size", "v": list(obj)}
        if isinstance(obj, bytes):
            return {"t": "bytes", "v": obj.hex()}
        if isinstance(obj, dict):
            items = [[self.encode(k, f"{path} key"), self.encode(v, f"{path}[{k!r}]")] for k, v in obj.items()]
            out = {"t": "odict" if isinstance(obj, OrderedDict) else "dict", "items": items}
            meta = getattr(obj, "_metadata", None)
            if meta is not None:
                out["metadata"] = self.encode(dict(meta), f"{path}._metadata")
            return out
        if isinstance(obj, tuple):
            return {"t": "tuple", "items": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return {"t": "list", "items": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, complex):
            return {"t": "complex", "v": [obj.real, obj.imag]}
        if isinstance(obj, slice):
            return {"t": "slice", "v": [self.encode(obj.start, path), self.encode(obj.stop, path),
                                        self.encode(obj.step, path)]}
        from ._memory_format import memory_format
        if isinstance(obj, memory_format):
            return {"t": "memory_format", "v": obj.name}
        raise TypeError(f"ember.save: cannot save an object of type {type(obj).__module__}."
                        f"{type(obj).__qualname__} at {path}: checkpoints hold tensors, numbers, strings, "
                        "None, dtypes and dicts/lists/tuples of them (save a module's state_dict(), not the "
                        "module)")


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Write ``obj`` (tensors, numbers, strings, nested dicts/lists/tuples) to a path or file object."""
    if pickle_module is not None:
        raise ValueError("ember.save does not use pickle: pickle_module is not supported")
    if isinstance(f, (str, os.PathLike)):
        target = open(f, "wb")
        close = True
    else:
        target = f
        close = False
    try:
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as zf:
            w = _Writer(zf)
            tree = w.encode(obj, "the saved object")
            manifest = {"format": FORMAT, "version": VERSION, "byteorder": "little", "object": tree,
                        "tensors": len(w.ids)}
            zf.writestr(_MANIFEST, json.dumps(manifest, allow_nan=False))
    finally:
        if close:
            target.close()


# ----------------------------------------------------------------------------- load


class _Reader:
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
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            self.fail(f"invalid shape {shape!r} for tensor {k}")
        meta = bool(d.get("meta")) or _is_meta(self.map_location)
        t = self.cache.get(k)
        if t is None:
            if meta:
                t = empty(tuple(shape), dtype=dtype, device="meta")
            else:
                member = f"data/{k}.npy"
                try:
                    raw = self.zf.read(member)
                except KeyError:
                    self.fail(f"the data of tensor {k} ({member}) is missing")
                except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
                    self.fail(f"the data of tensor {k} ({member}) cannot be read: {e}")
                try:
                    arr = np.load(io.BytesIO(raw), allow_pickle=False)
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

    def decode(self, o):
        if o is None or isinstance(o, (bool, int, float, str)):
            return o
        if isinstance(o, list):
            self.fail("an unexpected bare list in the manifest")
        if not isinstance(o, dict) or "t" not in o:
            self.fail(f"an unexpected entry {o!r:.80} in the manifest")
        t = o["t"]
        try:
            if t == "tensor":
                return self.tensor(o)
            if t in ("dict", "odict"):
                out = OrderedDict() if t == "odict" else {}
                for k, v in o["items"]:
                    out[_hashable(self.decode(k))] = self.decode(v)
                if "metadata" in o:
                    out = OrderedDict(out)
                    out._metadata = OrderedDict(self.decode(o["metadata"]))
                return out
            if t == "list":
                return [self.decode(v) for v in o["items"]]
            if t == "tuple":
                return tuple(self.decode(v) for v in o["items"])
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
                return slice(*(self.decode(v) for v in o["v"]))
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


def _is_meta(map_location):
    if map_location is None or callable(map_location) or isinstance(map_location, dict):
        return False
    return str(map_location).startswith("meta")


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Read a checkpoint written by ember.save. map_location may be 'cpu' or 'meta'."""
    name = _name(f)
    if pickle_module is not None:
        raise ValueError("ember.load does not use pickle: pickle_module is not supported")
    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise FileNotFoundError(f"ember.load: no such file: {name!r}")
        src = open(f, "rb")
        close = True
    else:
        src = f
        close = False
    try:
        try:
            zf = zipfile.ZipFile(src, "r")
        except zipfile.BadZipFile as e:
            raise RuntimeError(f"ember.load: {name} is not an ember checkpoint or is truncated/corrupted "
                               f"(not a readable zip archive: {e})") from None
        with zf:
            if _MANIFEST not in zf.namelist():
                pkl = [n for n in zf.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
                if pkl:
                    return _load_torch_zip(zf, pkl[0][:-len("data.pkl")], name, map_location)
            try:
                raw = zf.read(_MANIFEST)
            except KeyError:
                raise RuntimeError(f"ember.load: {name} is not an ember checkpoint: it has no "
                                   f"{_MANIFEST}") from None
            except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
                raise RuntimeError(f"ember.load: {name} is corrupted: {_MANIFEST} cannot be read "
                                   f"({e})") from None
            try:
                manifest = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise RuntimeError(f"ember.load: {name} is corrupted: {_MANIFEST} is not valid JSON "
                                   f"({e})") from None
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise RuntimeError(f"ember.load: {name} is not an ember checkpoint (unknown format "
                                   f"{manifest.get('format') if isinstance(manifest, dict) else None!r})")
            if manifest.get("version") != VERSION:
                raise RuntimeError(f"ember.load: {name} has checkpoint version {manifest.get('version')!r}; "
                                   f"this ember reads version {VERSION}")
            if "object" not in manifest:
                raise RuntimeError(f"ember.load: {name} is corrupted: the manifest has no object")
            return _Reader(zf, name, map_location).decode(manifest["object"])
    finally:
        if close:
            src.close()


# ----------------------------------------------------------------------------- PyTorch checkpoints

_TORCH_STORAGES = {"FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
                   "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
                   "ByteStorage": "uint8", "BoolStorage": "bool"}


class _StorageType:
    def __init__(self, dtype):
        self.dtype = dtype


def _rebuild_tensor(storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    from ._tensor import new_tensor
    item = storage.itemsize
    n_needed = offset + (1 + sum((sz - 1) * st for sz, st in zip(size, stride)) if all(size) else 0)
    if n_needed > storage.size:
        raise RuntimeError(f"a tensor of size {list(size)} and stride {list(stride)} at offset {offset} does not "
                           f"fit its storage of {storage.size} elements")
    arr = np.lib.stride_tricks.as_strided(storage[offset:], tuple(size), tuple(st * item for st in stride))
    t = new_tensor(np.array(arr, order="C"))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks, *rest):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad=requires_grad)


class _TorchUnpickler(pickle.Unpickler):
    """Resolves only the names a tensor/state-dict checkpoint needs; reads storages from the zip."""

    def __init__(self, fh, zf, prefix, name):
        super().__init__(fh)
        self.zf, self.prefix, self.name = zf, prefix, name
        self.storages = {}

    def find_class(self, module, qualname):
        if (module, qualname) == ("collections", "OrderedDict"):
            return OrderedDict
        if (module, qualname) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if (module, qualname) == ("torch._utils", "_rebuild_parameter"):
            return _rebuild_parameter
        if module == "torch" and qualname in _TORCH_STORAGES:
            return _StorageType(_DTYPES[_TORCH_STORAGES[qualname]])
        if (module, qualname) == ("torch", "Size"):
            return Size
        raise pickle.UnpicklingError(f"{module}.{qualname} is not one of the names a tensor checkpoint may "
                                     "refer to; ember does not load it")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r:.80}")
        _, st, key, _location, numel = pid[:5]
        if key not in self.storages:
            member = f"{self.prefix}data/{key}"
            try:
                raw = self.zf.read(member)
            except KeyError:
                raise pickle.UnpicklingError(f"storage {key} ({member}) is missing") from None
            dt_np = np.dtype(st.dtype.np).newbyteorder("<")
            if len(raw) < numel * dt_np.itemsize:
                raise pickle.UnpicklingError(f"storage {key} holds {len(raw)} bytes, expected "
                                             f"{numel * dt_np.itemsize}")
            self.storages[key] = np.frombuffer(raw, dt_np, count=numel).astype(st.dtype.np)
        return self.storages[key]


def _load_torch_zip(zf, prefix, name, map_location):
    try:
        order = zf.read(prefix + "byteorder").decode().strip() if prefix + "byteorder" in zf.namelist() else "little"
        if order != "little":
            raise RuntimeError(f"ember.load: {name} was saved on a {order}-endian machine; ember reads "
                               "little-endian checkpoints")
        with zf.open(prefix + "data.pkl") as fh:
            obj = _TorchUnpickler(fh, zf, prefix, name).load()
    except RuntimeError:
        raise
    except (pickle.UnpicklingError, zipfile.BadZipFile, EOFError, ValueError, TypeError, KeyError,
            AttributeError, IndexError) as e:
        raise RuntimeError(f"ember.load: {name} is a PyTorch checkpoint that ember cannot read safely: "
                           f"{type(e).__name__}: {e}") from None
    if _is_meta(map_location):
        obj = _to_meta(obj)
    return obj


def _to_meta(obj):
    from ._creation import empty
    if isinstance(obj, Tensor):
        return empty(tuple(obj.shape), dtype=obj.dtype, device="meta")
    if isinstance(obj, dict):
        out = type(obj)((k, _to_meta(v)) for k, v in obj.items())
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_meta(v) for v in obj)
    return obj
