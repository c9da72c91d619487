"""ember.utils.safetensors: safetensors files, as ``safetensors.torch`` reads and writes them.

``save_file(tensors, filename, metadata=None)``, ``load_file(filename, device="cpu")``,
``save(tensors, metadata=None) -> bytes`` and ``load(data) -> dict`` mirror ``safetensors.torch``
(the same errors for shared and non-contiguous tensors), on the ``safetensors`` package's format
code (``pip install safetensors``), which checks every header, offset and length. A file written
here loads in ``safetensors.torch.load_file`` and the other way round; ``ember.load`` also
recognises a safetensors file by its content.
"""
import os

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor

__all__ = ["save_file", "load_file", "save", "load", "save_model", "load_model", "safe_open"]

# ember dtype name <-> safetensors' dtype code
_CODE = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
         "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
         "complex64": "C64", "complex128": "C128"}
_FROM_CODE = {v: k for k, v in _CODE.items()}


def _lib():
    try:
        import safetensors
    except ImportError:
        raise ImportError("ember.utils.safetensors needs the safetensors package: pip install safetensors "
                          "(or pip install 'ember[safetensors]')") from None
    return safetensors


def _check(tensors, what):
    if not isinstance(tensors, dict):
        raise ValueError(f"{what}: expected a dict of str -> Tensor, got {type(tensors).__name__}")
    roots = {}
    for k, v in tensors.items():
        if not isinstance(k, str):
            raise ValueError(f"{what}: keys must be strings, got {k!r}")
        if not isinstance(v, Tensor):
            raise ValueError(f"{what}: Key `{k}` is invalid, expected ember.Tensor but received {type(v)}")
        if v.is_meta:
            raise ValueError(f"{what}: Key `{k}` is a meta tensor, which has no data to save")
        if not v.is_contiguous():
            raise ValueError(f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. It "
                             "either means you are trying to save tensors which are reference of each other in "
                             "which case it's recommended to save only the full tensors, and reslice at load "
                             "time, or simply call `.contiguous()` on your tensor to pack it before saving.")
        if v.numel():
            root = v._data
            while isinstance(root.base, np.ndarray):
                root = root.base
            roots.setdefault(id(root), []).append(k)
    shared = [names for names in roots.values() if len(names) > 1]
    if shared:
        raise RuntimeError(f"Some tensors share memory, this will lead to duplicate memory on disk and potential "
                           f"differences when loading them again: {shared}.\nA potential way to correctly save "
                           "your model is to use `save_model`. More information at "
                           "https://huggingface.co/docs/safetensors/torch_shared_tensors")


def _specs(tensors, metadata, what):
    st = _lib()
    _check(tensors, what)
    if metadata is not None and (not isinstance(metadata, dict) or
                                 not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise ValueError(f"{what}: metadata must be a dict of str -> str")
    keep, specs = [], {}
    for k, v in tensors.items():
        a = np.ascontiguousarray(v._data)
        code = _CODE.get(v.dtype.name)
        if code is None:
            raise ValueError(f"{what}: tensor {k!r} has dtype {v.dtype}, which safetensors cannot store")
        keep.append(a)
        specs[k] = st.TensorSpec(dtype=v.dtype.name, shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
    return st, specs, keep


def save(tensors, metadata=None):
    """The bytes of a safetensors file holding ``tensors`` (a dict of str -> Tensor)."""
    st, specs, keep = _specs(tensors, metadata, "save")
    out = st.serialize(specs, metadata)
    del keep
    return bytes(out)


def save_file(tensors, filename, metadata=None):
    """Write ``tensors`` to a safetensors file (atomically: a failed save leaves the old file)."""
    from .._serialization import _atomic_write
    data = save(tensors, metadata)
    _atomic_write(os.fspath(filename), lambda fh: fh.write(data))


def _to_tensors(items, name):
    from .._tensor import new_tensor
    out = {}
    for k, v in items:
        dname = _FROM_CODE.get(v["dtype"])
        d = dt._BY_NAME.get(dname) if dname else None
        if d is None:
            raise RuntimeError(f"ember.load: {name}: tensor {k!r} has safetensors dtype {v['dtype']}, which "
                               "ember does not support")
        buf = v["data"]
        arr = np.frombuffer(buf, dtype=d.np).reshape(v["shape"]) if len(buf) else np.zeros(v["shape"], d.np)
        if not arr.flags.writeable:
            arr = arr.copy()
        out[k] = new_tensor(arr)
    return out


def load(data):
    """The tensors of a safetensors file given as bytes, as a dict of str -> Tensor."""
    return _load_bytes(bytes(data), "<bytes>")


def _load_bytes(data, name):
    st = _lib()
    try:
        items = st.deserialize(data)
    except Exception as e:  # SafetensorError and the like: a one-line error naming the file
        raise RuntimeError(f"ember.load: {name} is not a valid safetensors file: {e}") from None
    return _to_tensors(items, name)


def load_file(filename, device="cpu"):
    """The tensors of a safetensors file, as a dict of str -> Tensor (device 'cpu' or 'meta')."""
    name = os.fspath(filename)
    if str(device) not in ("cpu", "meta") and not str(device).startswith("cpu"):
        raise RuntimeError(f"load_file: ember runs on the CPU; got device {device!r}")
    with open(name, "rb") as fh:
        out = _load_bytes(fh.read(), name)
    if str(device) == "meta":
        from .._creation import empty
        out = {k: empty(tuple(v.shape), dtype=v.dtype, device="meta") for k, v in out.items()}
    return out


def _load_stream(src, name):
    """ember.load of a safetensors file (recognised by content)."""
    return _load_bytes(src.read(), name)


def _root_id(t):
    a = t._data
    while isinstance(a.base, np.ndarray):
        a = a.base
    return id(a)


def save_model(model, filename, metadata=None, force_contiguous=False):
    """A module's state dict to a safetensors file; of tensors that are the same (tied weights) only
    the first name is written, as safetensors.torch.save_model does."""
    sd = model.state_dict()
    kept, out = {}, {}
    for name, t in sd.items():
        key = (_root_id(t), t.data_ptr(), tuple(t.shape), t.stride(), t.dtype) if t.numel() else None
        if key is not None and key in kept:
            continue
        if key is not None:
            kept[key] = name
        out[name] = t.contiguous() if force_contiguous else t
    save_file(out, filename, metadata)


def load_model(model, filename, strict=True, device="cpu"):
    """Load a file written by save_model (or save_file) into ``model``; returns (missing, unexpected)
    names, where names dropped as tied copies of a loaded tensor are not missing."""
    state = load_file(filename, device)
    missing, unexpected = model.load_state_dict(state, strict=False)
    sd = model.state_dict()
    loaded = {_root_id(sd[k]) for k in state if k in sd}
    missing = [k for k in missing if _root_id(sd[k]) not in loaded]
    if strict and (missing or unexpected):
        raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}: missing keys "
                           f"{missing}, unexpected keys {list(unexpected)}")
    return missing, list(unexpected)


class safe_open:
    """``with safe_open(path, framework="pt") as f: f.keys(), f.get_tensor(name), f.metadata()``.
    The whole file is read when opened (the safetensors package checks it)."""

    def __init__(self, filename, framework="pt", device="cpu"):
        st = _lib()
        self._tensors = load_file(filename, device)
        with st.safe_open(os.fspath(filename), framework="numpy") as f:
            self._metadata = f.metadata()

    def keys(self):
        return list(self._tensors)

    def get_tensor(self, name):
        return self._tensors[name]

    def metadata(self):
        return self._metadata

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
