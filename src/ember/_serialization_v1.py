"""ember's checkpoint format before PyTorch's (manifest.json + one .npy per tensor), still read
for a transition period, with the same checks as the rest of ember.load."""
import io
import json
from collections import OrderedDict

import numpy as np

from . import _dtype as dt
from ._tensor import Size
from ._pickle_reader import MAX_DEPTH, _MAX_PICKLE, _is_meta, _read_record

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
