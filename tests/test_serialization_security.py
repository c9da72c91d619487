"""ember.load on hostile files (issue 14): crafted PyTorch-format checkpoints must never read out of
bounds, crash the interpreter, blow up memory or time, recurse without bound or run code; each is
refused with a one-line error naming the file (or, for a legitimate stride-0 view, loaded as the
stride-0 view PyTorch loads, without allocating)."""
import io
import json
import os
import pickle
import struct
import time
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

import ember


# ----------------------------------------------------------------------------- crafting files

def _int(v):
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if -2 ** 31 <= v < 2 ** 31:
        return b"J" + struct.pack("<i", v)
    b = pickle.encode_long(v)
    return b"\x8a" + bytes([len(b)]) + b


def _str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _tup(vals):
    return b"(" + b"".join(_int(v) for v in vals) + b"t"


def tensor_pickle(offset, size, stride, numel, storage="FloatStorage", key="0", location="cpu"):
    """data.pkl of torch.save(tensor) with the given (unchecked) view numbers."""
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((" + _str("storage") + b"ctorch\n" + storage.encode()
            + b"\n" + _str(key) + _str(location) + _int(numel) + b"tQ" + _int(offset) + _tup(size) + _tup(stride)
            + b"\x89ccollections\nOrderedDict\n)RtR.")


def write_torch_zip(path, pkl, records=None, compress=None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", pkl, compress_type=compress)
        zf.writestr("archive/byteorder", "little")
        for k, v in (records or {}).items():
            zf.writestr(f"archive/data/{k}", v)
        zf.writestr("archive/version", "3\n")
    return path


def one_line(excinfo, path):
    msg = str(excinfo.value)
    assert "\n" not in msg and os.fspath(path) in msg, msg
    return msg


# ----------------------------------------------------------------------------- views

def test_negative_storage_offset_is_refused(tmp_path):
    p = write_torch_zip(tmp_path / "neg_offset.pt", tensor_pickle(-4, (4,), (1,), 4),
                        {"0": np.arange(4, dtype=np.float32).tobytes()})
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(p)
    assert "negative storage offset -4" in one_line(e, p)


def test_negative_stride_is_refused_not_a_crash(tmp_path):
    p = write_torch_zip(tmp_path / "neg_stride.pt", tensor_pickle(3, (4,), (-1,), 4),
                        {"0": np.arange(4, dtype=np.float32).tobytes()})
    with pytest.raises(RuntimeError) as e:
        ember.load(p)
    assert "negative stride" in one_line(e, p)


@pytest.mark.parametrize("offset,size,stride", [(1, (4,), (1,)), (0, (2, 3), (3, 1)), (0, (3,), (2,)),
                                                 (5, (0,), (1,)), (0, (2 ** 40, 2 ** 40), (1, 1))])
def test_views_past_the_storage_are_refused(tmp_path, offset, size, stride):
    p = write_torch_zip(tmp_path / "oob.pt", tensor_pickle(offset, size, stride, 4),
                        {"0": np.arange(4, dtype=np.float32).tobytes()})
    with pytest.raises(RuntimeError) as e:
        ember.load(p)
    assert "out of bounds" in one_line(e, p)


def test_malformed_view_numbers_are_refused(tmp_path):
    cases = [tensor_pickle(0, (2, 2), (1,), 4),            # size and stride lengths differ
             tensor_pickle(0, (1,) * 65, (1,) * 65, 4),    # more dimensions than supported
             tensor_pickle(0, (-2,), (1,), 4)]             # negative size
    for i, pkl in enumerate(cases):
        p = write_torch_zip(tmp_path / f"bad{i}.pt", pkl, {"0": np.zeros(4, np.float32).tobytes()})
        with pytest.raises(RuntimeError) as e:
            ember.load(p)
        one_line(e, p)


def test_stride_zero_view_loads_as_a_view_without_allocating(tmp_path, request):
    """A 1-element storage seen as 20000x20000 with strides (0, 0): a 612-byte file must stay small in
    memory. PyTorch keeps the stride-0 view; so does ember."""
    p = write_torch_zip(tmp_path / "expand.pt", tensor_pickle(0, (20000, 20000), (0, 0), 1),
                        {"0": np.float32(2.5).tobytes()})
    tracemalloc.start()
    try:
        t = ember.load(p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert tuple(t.shape) == (20000, 20000) and t.stride() == (0, 0) and t[19999, 123].item() == 2.5
    torch = pytest.importorskip("torch")
    tt = torch.load(p, weights_only=True)
    assert tuple(tt.shape) == (20000, 20000) and tt.stride() == (0, 0)


def test_huge_declared_storage_is_refused_before_allocating(tmp_path):
    p = write_torch_zip(tmp_path / "huge.pt", tensor_pickle(0, (2 ** 38,), (1,), 2 ** 38), {"0": b"\0" * 16})
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError) as e:
            ember.load(p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "declares" in one_line(e, p) and peak < 1 << 20


def test_storage_record_of_the_wrong_length_is_refused(tmp_path):
    p = write_torch_zip(tmp_path / "short.pt", tensor_pickle(0, (4,), (1,), 4), {"0": b"\0" * 8})
    with pytest.raises(RuntimeError) as e:
        ember.load(p)
    assert "holds 8 bytes, but its metadata declares 16" in one_line(e, p)


# ----------------------------------------------------------------------------- bombs and nesting

def _bomb_record(size):
    c = zlib.compressobj(1, zlib.DEFLATED, -15)
    zeros = bytes(1 << 20)
    parts = [c.compress(zeros) for _ in range(size >> 20)]
    parts.append(c.flush())
    return b"".join(parts)


def _zip_with_raw_member(path, name, raw, size, crc, extra_members=()):
    """A zip holding ``name`` as the deflated bytes ``raw`` declaring ``size`` bytes."""
    with zipfile.ZipFile(path, "w") as zf:
        for n, data in extra_members:
            zf.writestr(n, data)
    # append the bomb by hand: rewrite the archive with one more deflated member
    buf = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(buf, "w") as out:
        for i in src.infolist():
            out.writestr(i, src.read(i))
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.file_size, info.compress_size, info.CRC = size, len(raw), crc
        info.header_offset = out.fp.tell()
        out.fp.write(info.FileHeader(False))
        out.fp.write(raw)
        out.filelist.append(info)
        out.NameToInfo[name] = info
        out.start_dir = out.fp.tell()
        out._didModify = True
    path.write_bytes(buf.getvalue())
    return path


def test_zip_bomb_data_pkl_is_refused_fast(tmp_path):
    size = 32 << 20
    raw = _bomb_record(size)
    p = _zip_with_raw_member(tmp_path / "bomb.pt", "archive/data.pkl", raw, size, 0,
                             [("archive/byteorder", "little")])
    t0 = time.perf_counter()
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError) as e:
            ember.load(p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "decompression bomb" in one_line(e, p)
    assert time.perf_counter() - t0 < 2 and peak < 16 << 20


def test_zip_bomb_storage_declared_2gib_is_refused_before_reading(tmp_path):
    """A 2 GiB storage record deflated to a few MiB, where the pickle declares 4 elements: refused
    from the sizes alone, before a byte is inflated."""
    raw = _bomb_record(8 << 20)   # the record's own header claims 2 GiB
    p = _zip_with_raw_member(tmp_path / "bomb2.pt", "archive/data/0", raw, 2 << 30, 0,
                             [("archive/data.pkl", tensor_pickle(0, (4,), (1,), 4)), ("archive/byteorder", "little")])
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError) as e:
        ember.load(p)
    assert "holds 2147483648 bytes, but its metadata declares 16" in one_line(e, p)
    assert time.perf_counter() - t0 < 1


def test_ember_v1_npy_bomb_is_refused(tmp_path):
    size = 64 << 20
    raw = _bomb_record(size)
    manifest = json.dumps({"format": "ember-checkpoint", "version": 1,
                           "object": {"t": "tensor", "id": 0, "dtype": "float32", "shape": [4]}})
    p = _zip_with_raw_member(tmp_path / "bomb3.pt", "data/0.npy", raw, size, 0, [("manifest.json", manifest)])
    with pytest.raises(RuntimeError) as e:
        ember.load(p)
    assert "more than the 16 its shape needs" in one_line(e, p)


def test_pickle_nested_100000_deep_is_a_one_line_error(tmp_path):
    n = 100_000
    pkl = b"\x80\x02" + b"]" * n + b"a" * (n - 1) + b"."
    p = write_torch_zip(tmp_path / "deep.pt", pkl)
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(p)
    assert "nested more than" in one_line(e, p)


def test_manifest_nested_100000_deep_is_a_one_line_error(tmp_path):
    p = tmp_path / "deep_manifest.pt"
    tree = '{"t": "list", "items": [' * 100_000 + "]}" * 100_000
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("manifest.json", '{"format": "ember-checkpoint", "version": 1, "object": ' + tree + "}")
    with pytest.raises(RuntimeError) as e:
        ember.load(p)
    assert "nested" in one_line(e, p)


# ----------------------------------------------------------------------------- code and names

def test_unknown_globals_are_never_called(tmp_path):
    marker = tmp_path / "pwned"
    pkl = b"\x80\x02cos\nsystem\n" + _str(f"touch {marker}") + b"\x85R."
    p = write_torch_zip(tmp_path / "evil.pt", pkl)
    for weights_only in (True, False, None):
        with pytest.raises(pickle.UnpicklingError) as e:
            ember.load(p, weights_only=weights_only)
        assert "unsupported global os.system" in one_line(e, p)
    assert not marker.exists()
    # a pickle via INST, extension codes or a plain pickle file: refused the same way
    for pkl in (b"(cos\nsystem\n" + _str("true") + b"i.", b"\x80\x02\x82\x01)R."):
        p = write_torch_zip(tmp_path / "evil2.pt", pkl)
        with pytest.raises(pickle.UnpicklingError) as e:
            ember.load(p)
        one_line(e, p)


def test_state_of_shared_objects_cannot_be_set(tmp_path):
    # BUILD on a dtype object would change ember.float32 for the whole process
    pkl = b"\x80\x02ctorch\nfloat32\n}" + _str("name") + _str("evil") + b"s\x86b."
    p = write_torch_zip(tmp_path / "build.pt", pkl)
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(p)
    one_line(e, p)
    assert ember.float32.name == "float32"
    # allowed callables cannot be turned into allocators: bytearray(10**12)
    p = write_torch_zip(tmp_path / "alloc.pt", b"\x80\x02c__builtin__\nbytearray\n" + _int(10 ** 12) + b"\x85R.")
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(p)
    one_line(e, p)


def test_path_traversal_names_are_refused(tmp_path):
    p = tmp_path / "trav.pt"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("archive/data.pkl", tensor_pickle(0, (1,), (1,), 1))
        zf.writestr("../../etc/passwd", b"\0" * 4)
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(p)
    assert "path traversal" in one_line(e, p)
    p = write_torch_zip(tmp_path / "trav2.pt", tensor_pickle(0, (1,), (1,), 1, key="../0"))
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(p)
    assert "not a plain name" in one_line(e, p)


def test_cuda_storages_are_refused_as_by_a_cpu_only_pytorch(tmp_path):
    p = write_torch_zip(tmp_path / "cuda.pt", tensor_pickle(0, (1,), (1,), 1, location="cuda:0"),
                        {"0": b"\0" * 4})
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device") as e:
        ember.load(p)
    one_line(e, p)
    assert ember.load(p, map_location="cpu").tolist() == [0.0]
    assert ember.load(p, map_location={"cuda:0": "cpu"}).tolist() == [0.0]


def test_truncated_and_garbage_files(tmp_path):
    good = tmp_path / "good.pt"
    ember.save({"w": ember.randn(64, 64)}, good)
    data = good.read_bytes()
    for i, bad in enumerate([data[:len(data) // 2], data[:100], b"", b"\x80\x02garbage", os.urandom(4096)]):
        p = tmp_path / f"bad{i}.pt"
        p.write_bytes(bad)
        with pytest.raises(RuntimeError) as e:
            ember.load(p)
        one_line(e, p)


def test_large_records_are_checked_too(tmp_path):
    """Records of a MiB or more are read straight into their arrays: still CRC- and length-checked."""
    good = tmp_path / "big.pt"
    w = ember.randn(512, 1024)
    ember.save({"w": w}, good)
    assert ember.load(good)["w"].tolist() == w.tolist()
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0x01
    p = tmp_path / "flipped.pt"
    p.write_bytes(bytes(data))
    with pytest.raises(RuntimeError) as e:
        ember.load(p)
    assert "bad CRC-32" in one_line(e, p)


def test_deep_tuples_are_refused_before_they_are_hashed(tmp_path):
    """Hashing a tuple nested a million deep (a dict key) overflows the C stack: refused while built."""
    n = 1_000_000
    pkl = b"\x80\x02}K\x00" + b"\x85" * n + b"K\x01s."
    p = write_torch_zip(tmp_path / "deep_key.pt", pkl)
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(p)
    assert "nested more than" in one_line(e, p)


def test_container_opcodes_apply_to_containers_only(tmp_path):
    storage = {"0": np.float32(1.0).tobytes()}
    view = tensor_pickle(0, (2 ** 40,), (0,), 1)[2:-1]   # a stride-0 view of 2**40 elements
    cases = {"append_to_tensor": b"\x80\x02" + view + b"K\x01a.",
             "setitem_on_tensor": b"\x80\x02" + view + b"K\x00K\x01s.",
             "counter_of_tensor": b"\x80\x02ccollections\nCounter\n" + view + b"\x85R.",
             "set_of_tensor": b"\x80\x02c__builtin__\nset\n" + view + b"\x85R."}
    for name, pkl in cases.items():
        p = write_torch_zip(tmp_path / f"{name}.pt", pkl, storage)
        t0 = time.perf_counter()
        with pytest.raises(pickle.UnpicklingError) as e:
            ember.load(p)
        one_line(e, p)
        assert time.perf_counter() - t0 < 1, name
