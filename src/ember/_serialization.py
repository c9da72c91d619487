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
import os
import pickle
import struct
import tempfile
import zipfile

import numpy as np

from ._pickle_reader import (  # noqa: F401  (the public names live on here and in ember.serialization)
    MAX_DEPTH, UnpicklingError, add_safe_globals, get_safe_globals, clear_safe_globals, safe_globals,
    get_unsafe_globals_in_checkpoint, _MAX_PICKLE, _Storage, _Unpickler, _fail, _name,
    _read_record, _record_checks, _check_names, _unpickle)
from ._pickle_writer import _Pickler, _write_archive
from ._serialization_v1 import _MANIFEST, _load_ember_v1

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]


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


