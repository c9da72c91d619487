"""PyTorch's checkpoint format both ways (issue 17): files written by ember.save load in real
torch.load(weights_only=True) with equal values, strides and storage sharing, and the other way
round; PyTorch's legacy format, mmap, map_location; safetensors through the safetensors package."""
import io
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn


def _same(e, t):
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride(), (e.shape, e.stride(), t.stride())
    np.testing.assert_array_equal(e.detach().float().numpy(), t.detach().float().numpy())


def _trained():
    ember.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    opt = ember.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        net(ember.randn(5, 1, 8, 8)).sum().backward()
        opt.step()
    return net, opt


def test_state_dict_and_adam_state_load_in_torch(torch, tmp_path):
    net, opt = _trained()
    p = tmp_path / "ember.pt"
    ember.save({"model": net.state_dict(), "optim": opt.state_dict(), "epoch": 3, "note": "x", "none": None,
                "nested": [(1, 2.5), {"k": ember.arange(3)}]}, p)
    ck = torch.load(p, weights_only=True)
    for k, v in net.state_dict().items():
        _same(v, ck["model"][k])
    assert isinstance(ck["model"], OrderedDict) and list(ck["model"]) == list(net.state_dict())
    assert ck["model"]._metadata == net.state_dict()._metadata
    assert ck["epoch"] == 3 and ck["note"] == "x" and ck["none"] is None and ck["nested"][0] == (1, 2.5)
    assert ck["nested"][1]["k"].tolist() == [0, 1, 2] and ck["nested"][1]["k"].dtype == torch.int64
    # the state dicts work in PyTorch: a torch model and Adam continue from them
    tnet = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                               torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 3))
    tnet.load_state_dict(ck["model"])
    topt = torch.optim.Adam(tnet.parameters())
    topt.load_state_dict(ck["optim"])
    es, ts = opt.state_dict(), topt.state_dict()
    assert ts["param_groups"][0]["lr"] == 0.01 and ts["param_groups"][0]["betas"] == (0.9, 0.999)
    for i, st in es["state"].items():
        for k, v in st.items():
            _same(v, ts["state"][i][k])


def test_torch_state_dict_and_adam_state_load_in_ember(torch, tmp_path):
    torch.manual_seed(0)
    tnet = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    topt = torch.optim.Adam(tnet.parameters(), lr=0.02)
    tnet(torch.randn(5, 3)).sum().backward()
    topt.step()
    p = tmp_path / "torch.pt"
    torch.save({"model": tnet.state_dict(), "optim": topt.state_dict(), "epoch": 1}, p)
    ck = ember.load(p)
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    net.load_state_dict(ck["model"])
    for k, v in tnet.state_dict().items():
        _same(net.state_dict()[k], v)
    opt = ember.optim.Adam(net.parameters())
    opt.load_state_dict(ck["optim"])
    assert opt.param_groups[0]["lr"] == 0.02
    for i, st in topt.state_dict()["state"].items():
        for k, v in st.items():
            _same(opt.state_dict()["state"][i][k], v)


def test_views_sharing_storage_stay_shared_both_ways(torch, tmp_path):
    base = ember.arange(24.0).reshape(4, 6)
    obj = {"base": base, "row": base[1], "t": base.t(), "cols": base[:, 2:5], "exp": ember.ones(3)[None].expand(4, 3),
           "cl": ember.randn(2, 3, 4, 5).to(memory_format=ember.channels_last)}
    p = tmp_path / "views.pt"
    ember.save(obj, p)
    with zipfile.ZipFile(p) as zf:
        assert len([n for n in zf.namelist() if "/data/" in n]) == 3  # base, ones, the channels_last tensor
    t = torch.load(p, weights_only=True)
    for k in obj:
        _same(obj[k], t[k])
    assert t["row"].untyped_storage().data_ptr() == t["base"].untyped_storage().data_ptr()
    assert t["row"].storage_offset() == 6 and t["cols"].storage_offset() == 2
    t["base"][1, 0] = -1.0
    assert t["row"][0].item() == -1.0 and t["t"][0, 1].item() == -1.0
    # and back: torch's views load in ember sharing one array
    p2 = tmp_path / "tviews.pt"
    torch.save(t, p2)
    e = ember.load(p2)
    for k in obj:
        _same(e[k], t[k])
    assert e["row"].untyped_storage() == e["base"].untyped_storage() and e["cols"].storage_offset() == 2
    e["base"][2, 3] = 100.0
    assert e["t"][3, 2].item() == 100.0 and e["cols"][2, 1].item() == 100.0
    # ember's own round trip keeps sharing too
    p3 = tmp_path / "again.pt"
    ember.save(e, p3)
    e2 = ember.load(p3)
    e2["base"][0, 0] = 5.0
    assert e2["t"][0, 0].item() == 5.0


def test_parameters_requires_grad_dtypes_and_scalars(torch, tmp_path):
    obj = {"p": nn.Parameter(ember.randn(3)), "frozen": nn.Parameter(ember.ones(2), requires_grad=False),
           "rg": ember.ones(2, requires_grad=True), "i8": ember.tensor([1, -2], dtype=ember.int8),
           "u8": ember.tensor([255], dtype=ember.uint8), "b": ember.tensor([True, False]),
           "h": ember.tensor([1.5], dtype=ember.float16), "d": ember.tensor(2.0, dtype=ember.float64),
           "i32": ember.tensor([7], dtype=ember.int32), "i16": ember.tensor([7], dtype=ember.int16),
           "empty": ember.zeros(0, 3), "dtype": ember.float16, "size": ember.Size([2, 3]), "bytes": b"\x00\xff",
           "set": {1, 2}, "complex": 1 + 2j, "big": 2 ** 70, "inf": float("inf"), "dev": ember.device("cpu")}
    p = tmp_path / "misc.pt"
    ember.save(obj, p)
    t = torch.load(p, weights_only=True)
    assert isinstance(t["p"], torch.nn.Parameter) and t["p"].requires_grad
    assert isinstance(t["frozen"], torch.nn.Parameter) and not t["frozen"].requires_grad
    assert t["rg"].requires_grad and not isinstance(t["rg"], torch.nn.Parameter)
    for k in ("i8", "u8", "b", "h", "d", "i32", "i16", "empty"):
        assert str(t[k].dtype) == "torch." + obj[k].dtype.name
        _same(obj[k], t[k])
    assert t["dtype"] is torch.float16 and t["size"] == torch.Size([2, 3]) and t["bytes"] == b"\x00\xff"
    assert t["set"] == {1, 2} and t["complex"] == 1 + 2j and t["big"] == 2 ** 70 and t["inf"] == float("inf")
    assert t["dev"] == torch.device("cpu")
    e = ember.load(p)
    assert isinstance(e["p"], nn.Parameter) and e["p"].requires_grad and not e["frozen"].requires_grad
    assert e["rg"].requires_grad and e["dtype"] is ember.float16 and e["size"] == ember.Size([2, 3])
    assert e["bytes"] == b"\x00\xff" and e["set"] == {1, 2} and e["big"] == 2 ** 70
    for k in ("i8", "u8", "b", "h", "d", "i32", "i16", "empty"):
        assert e[k].dtype == obj[k].dtype and e[k].tolist() == obj[k].tolist()


def test_torch_legacy_format_and_file_objects(torch, tmp_path):
    x = torch.arange(10.0)
    obj = {"v": x[2:8:2], "w": x, "h": torch.ones(2, dtype=torch.float16), "n": [1, "a"]}
    p = tmp_path / "legacy.pt"
    torch.save(obj, p, _use_new_zipfile_serialization=False)
    e = ember.load(p)
    assert e["v"].tolist() == [2.0, 4.0, 6.0] and e["w"].tolist() == x.tolist() and e["n"] == [1, "a"]
    assert e["h"].dtype == ember.float16 and e["v"].untyped_storage() == e["w"].untyped_storage()
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    assert ember.load(buf)["v"].tolist() == [2.0, 4.0, 6.0]
    buf = io.BytesIO()
    ember.save(e["h"], buf)
    buf.seek(0)
    assert torch.load(buf, weights_only=True).tolist() == [1.0, 1.0]


def test_mmap_and_map_location(torch, tmp_path):
    p = tmp_path / "m.pt"
    w = ember.randn(100, 10)
    ember.save({"w": w, "v": w[3:]}, p)
    m = ember.load(p, mmap=True)
    assert m["w"].tolist() == w.tolist() and m["v"].tolist() == w[3:].tolist()
    m["w"][0, 0] = 123.0   # copy-on-write: the file does not change
    assert ember.load(p)["w"][0, 0].item() == w[0, 0].item()
    assert torch.load(p, weights_only=True, mmap=True)["w"].tolist() == w.tolist()
    with pytest.raises(ValueError, match="file path in order to use the mmap"):
        ember.load(io.BytesIO(p.read_bytes()), mmap=True)
    for loc in ("cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda storage, location: storage):
        assert ember.load(p, map_location=loc)["w"].tolist() == w.tolist()
    meta = ember.load(p, map_location="meta")
    assert meta["w"].is_meta and tuple(meta["w"].shape) == (100, 10)
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        ember.load(p, pickle_module=pickle, weights_only=True)
    assert ember.load(p, pickle_module=pickle)["w"].tolist() == w.tolist()


def test_safe_globals_api(tmp_path):
    import fractions
    assert ember.serialization.get_safe_globals() == []
    ember.serialization.add_safe_globals([fractions.Fraction])
    try:
        assert fractions.Fraction in ember.serialization.get_safe_globals()
    finally:
        ember.serialization.clear_safe_globals()
    assert ember.serialization.get_safe_globals() == []


# ----------------------------------------------------------------------------- safetensors

def test_safetensors_round_trips_with_the_package(tmp_path):
    stnp = pytest.importorskip("safetensors.numpy")
    from ember.utils import safetensors as est
    tensors = {"w": ember.randn(3, 4), "i": ember.arange(5), "b": ember.tensor([True, False]),
               "h": ember.ones(2, dtype=ember.float16)}
    p = tmp_path / "m.safetensors"
    est.save_file(tensors, p, metadata={"format": "pt"})
    arrays = stnp.load_file(str(p))
    for k, v in tensors.items():
        np.testing.assert_array_equal(arrays[k], v.numpy())
    stnp.save_file({"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, str(tmp_path / "np.safetensors"))
    back = est.load_file(tmp_path / "np.safetensors")
    assert back["x"].tolist() == [[0, 1, 2], [3, 4, 5]] and back["x"].dtype == ember.float32
    # bytes API and ember.load's recognition by content
    data = est.save(tensors)
    assert est.load(data)["i"].tolist() == [0, 1, 2, 3, 4]
    q = tmp_path / "noext.bin"
    q.write_bytes(data)
    assert ember.load(q)["w"].tolist() == tensors["w"].tolist()
    with pytest.raises(ValueError, match="use ember.utils.safetensors.save_file"):
        ember.save(tensors, tmp_path / "x.safetensors")
    with pytest.raises(RuntimeError, match="share memory"):
        est.save_file({"a": tensors["w"], "b": tensors["w"][1]}, tmp_path / "s.safetensors")
    with pytest.raises(ValueError, match="non contiguous"):
        est.save_file({"a": tensors["w"].t()}, tmp_path / "s.safetensors")
    q.write_bytes(data[:len(data) - 5])
    with pytest.raises(RuntimeError, match="noext.bin is not a valid safetensors file"):
        ember.load(q)


def test_safetensors_with_safetensors_torch(torch, tmp_path):
    sttorch = pytest.importorskip("safetensors.torch")
    from ember.utils import safetensors as est
    p = tmp_path / "e.safetensors"
    est.save_file({"w": ember.arange(6.0).reshape(2, 3), "n": ember.tensor([1, 2], dtype=ember.int32)}, p)
    t = sttorch.load_file(str(p))
    assert t["w"].tolist() == [[0, 1, 2], [3, 4, 5]] and t["n"].dtype == torch.int32
    sttorch.save_file({"x": torch.linspace(0, 1, 5), "h": torch.ones(3, dtype=torch.float16)}, str(tmp_path / "t.st"))
    e = est.load_file(tmp_path / "t.st")
    assert e["x"].tolist() == torch.linspace(0, 1, 5).tolist() and e["h"].dtype == ember.float16
    assert est.load(sttorch.save({"y": torch.ones(2)}))["y"].tolist() == [1.0, 1.0]


def test_archives_inside_streams(torch):
    buf = io.BytesIO()
    buf.write(b"header")
    ember.save({"w": ember.arange(6.0)}, buf)
    end = buf.tell()
    buf.write(b"trailer")
    buf.seek(6)
    assert torch.load(buf, weights_only=True)["w"].tolist() == [0, 1, 2, 3, 4, 5]
    buf.seek(6)
    assert ember.load(buf)["w"].tolist() == [0, 1, 2, 3, 4, 5] and end > 6
    tb = io.BytesIO()
    tb.write(b"xyz")
    torch.save({"w": torch.ones(3)}, tb)
    tb.seek(3)
    assert ember.load(tb)["w"].tolist() == [1, 1, 1]


def test_safetensors_models_with_tied_weights_and_safe_open(torch, tmp_path):
    sttorch = pytest.importorskip("safetensors.torch")
    from ember.utils import safetensors as est
    ember.manual_seed(0)
    m = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10, bias=False))
    m[1].weight = m[0].weight  # tied
    p = tmp_path / "tied.safetensors"
    est.save_model(m, p, metadata={"note": "tied"})
    m2 = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10, bias=False))
    m2[1].weight = m2[0].weight
    assert est.load_model(m2, p) == ([], [])
    assert m2[1].weight.tolist() == m[0].weight.tolist()
    with est.safe_open(p, framework="pt") as f:
        assert f.keys() == ["0.weight"] and f.metadata() == {"note": "tied"}
        assert f.get_tensor("0.weight").tolist() == m[0].weight.tolist()
    t = sttorch.load_file(str(p))
    assert list(t) == ["0.weight"]
