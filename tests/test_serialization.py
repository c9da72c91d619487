"""ember.save / ember.load: round trips, no code execution on load, clear errors on bad files."""
import io
import json
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn


def roundtrip(obj, tmp_path):
    p = tmp_path / "ck.pt"
    ember.save(obj, p)
    return ember.load(p)


def test_tensors_and_containers(tmp_path):
    t = ember.randn(3, 4)
    obj = {"a": t, "b": [ember.arange(5), (1, 2.5, "x", None, True)], "c": {"n": ember.tensor(3.0)},
           7: "int key", "big": 2 ** 70, "nan": float("nan"), "inf": -float("inf"), "dt": ember.float64,
           "size": ember.Size([2, 3]), "bytes": b"\x00\xff", "same": t}
    out = roundtrip(obj, tmp_path)
    assert out["a"].tolist() == t.tolist() and out["a"].dtype == ember.float32
    assert out["b"][0].dtype == ember.int64 and out["b"][1] == (1, 2.5, "x", None, True)
    assert out["c"]["n"].shape == () and out[7] == "int key" and out["big"] == 2 ** 70
    assert np.isnan(out["nan"]) and out["inf"] == -float("inf")
    assert out["dt"] is ember.float64 and out["size"] == ember.Size([2, 3]) and out["bytes"] == b"\x00\xff"
    assert out["same"] is out["a"]  # one tensor saved twice loads as one


def test_dtypes_views_and_file_objects():
    for dtype in (ember.float16, ember.float32, ember.float64, ember.int8, ember.int32, ember.int64,
                  ember.uint8, ember.bool):
        x = (ember.arange(6) % 2).to(dtype)
        buf = io.BytesIO()
        ember.save(x, buf)
        buf.seek(0)
        y = ember.load(buf)
        assert y.dtype == dtype and y.tolist() == x.tolist()
    v = ember.arange(12.0).reshape(3, 4).t()[1:]
    buf = io.BytesIO()
    ember.save(v, buf)
    buf.seek(0)
    assert ember.load(buf).tolist() == v.tolist()


def test_module_and_optimizer_state_dicts(tmp_path):
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    opt = ember.optim.Adam(net.parameters(), lr=0.01)
    net(ember.randn(5, 3)).sum().backward()
    opt.step()
    out = roundtrip({"model": net.state_dict(), "opt": opt.state_dict(), "epoch": 4}, tmp_path)
    assert isinstance(out["model"], OrderedDict) and list(out["model"]) == list(net.state_dict())
    assert out["model"]._metadata["1"]["version"] == 2
    net2 = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    net2.load_state_dict(out["model"])
    for a, b in zip(net.state_dict().values(), net2.state_dict().values()):
        assert a.tolist() == b.tolist()
    opt2 = ember.optim.Adam(net2.parameters())
    opt2.load_state_dict(out["opt"])
    assert opt2.param_groups[0]["lr"] == 0.01 and opt2.param_groups[0]["betas"] == (0.9, 0.999)
    assert opt2.state_dict()["state"][0]["step"].item() == 1.0


def test_parameters_and_requires_grad(tmp_path):
    p = nn.Parameter(ember.ones(2))
    q = ember.ones(2, requires_grad=True)
    out = roundtrip([p, q], tmp_path)
    assert isinstance(out[0], nn.Parameter) and out[0].requires_grad
    assert out[1].requires_grad and not isinstance(out[1], nn.Parameter)


def test_meta_map_location(tmp_path):
    p = tmp_path / "m.pt"
    ember.save({"w": ember.ones(3, 2)}, p)
    out = ember.load(p, map_location="meta")
    assert out["w"].is_meta and tuple(out["w"].shape) == (3, 2)


def test_unsupported_objects_are_refused(tmp_path):
    with pytest.raises(TypeError, match="cannot save an object of type .*Linear"):
        ember.save({"m": nn.Linear(2, 2)}, tmp_path / "x.pt")
    with pytest.raises(TypeError, match="object"):
        ember.save(object(), tmp_path / "y.pt")


def _write_ember_v1(path, tensors, tree):
    """A file in ember's earlier format (manifest.json + data/<k>.npy), which ember.load still reads."""
    with zipfile.ZipFile(path, "w") as zf:
        for k, arr in enumerate(tensors):
            buf = io.BytesIO()
            np.save(buf, arr, allow_pickle=arr.dtype == object)
            zf.writestr(f"data/{k}.npy", buf.getvalue())
        zf.writestr("manifest.json", json.dumps({"format": "ember-checkpoint", "version": 1, "object": tree}))


def test_pytorch_layout_and_earlier_ember_files(tmp_path):
    p = tmp_path / "ck.pt"
    ember.save({"w": ember.ones(2)}, p)
    with zipfile.ZipFile(p) as zf:
        names = zf.namelist()
        infos = zf.infolist()
    assert names[0] == "ck/data.pkl" and "ck/data/0" in names and "ck/version" in names and "ck/byteorder" in names
    assert all(i.compress_type == zipfile.ZIP_STORED for i in infos)
    # ember's earlier format loads for a transition period
    old = tmp_path / "old.pt"
    tree = {"t": "dict", "items": [["w", {"t": "tensor", "id": 0, "dtype": "float32", "shape": [2]}],
                                   ["n", 3]]}
    _write_ember_v1(old, [np.ones(2, np.float32)], tree)
    out = ember.load(old)
    assert out["w"].tolist() == [1.0, 1.0] and out["n"] == 3
    # an .npy holding pickled objects is refused instead of being unpickled
    evil = tmp_path / "evil.pt"
    _write_ember_v1(evil, [np.array([{"x": 1}], dtype=object)], tree)
    with pytest.raises(RuntimeError, match="evil.pt is corrupted: the data of tensor 0"):
        ember.load(evil)


def test_corrupted_and_truncated_files(tmp_path):
    p = tmp_path / "ck.pt"
    ember.save({"w": ember.randn(64, 64), "b": ember.randn(64)}, p)
    data = p.read_bytes()
    bad = tmp_path / "bad.pt"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match=r"bad.pt is not an ember checkpoint or is truncated"):
        ember.load(bad)
    flipped = bytearray(data)
    flipped[200] ^= 0xFF
    bad.write_bytes(bytes(flipped))
    with pytest.raises(RuntimeError, match=r"bad.pt is corrupted: .*CRC"):
        ember.load(bad)
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(RuntimeError, match="bad.pt"):
        ember.load(bad)
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("manifest.json", "{not json")
    with pytest.raises(RuntimeError, match="not valid JSON"):
        ember.load(bad)
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("other.txt", "x")
    with pytest.raises(RuntimeError, match="has no data.pkl"):
        ember.load(bad)
    with zipfile.ZipFile(p) as zf, zipfile.ZipFile(bad, "w") as out:
        out.writestr("ck/data.pkl", zf.read("ck/data.pkl"))
    with pytest.raises(RuntimeError, match=r"bad.pt: the data of storage \d .* is missing"):
        ember.load(bad)
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "missing.pt")


def test_resumed_training_matches_uninterrupted(tmp_path):
    """model + optimizer + scheduler checkpointed mid-run: resuming gives the same trajectory."""
    def setup():
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
        opt = ember.optim.AdamW(model.parameters(), lr=0.01)
        sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=10)
        return model, opt, sched
    x = ember.tensor(np.random.RandomState(0).randn(16, 4).astype(np.float32))
    y = ember.tensor(np.random.RandomState(1).randint(0, 3, 16))

    def run(model, opt, sched, steps):
        for _ in range(steps):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            sched.step()
    m1, o1, s1 = setup()
    run(m1, o1, s1, 5)
    m2, o2, s2 = setup()
    run(m2, o2, s2, 3)
    p = tmp_path / "ck.pt"
    ember.save({"model": m2.state_dict(), "opt": o2.state_dict(), "sched": s2.state_dict()}, p)
    m3, o3, s3 = setup()
    ck = ember.load(p)
    m3.load_state_dict(ck["model"])
    o3.load_state_dict(ck["opt"])
    s3.load_state_dict(ck["sched"])
    run(m3, o3, s3, 2)
    for a, b in zip(m1.state_dict().values(), m3.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    assert s3.get_last_lr() == s1.get_last_lr()


def test_loads_pytorch_checkpoints_safely(torch, tmp_path):
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    tm(torch.randn(5, 3))
    p = tmp_path / "torch.pt"
    torch.save({"model": tm.state_dict(), "step": 7, "names": ["a", ("b", None)], "p": torch.nn.Parameter(torch.ones(2)),
                "view": torch.arange(10.0)[2:8:2], "half": torch.ones(3, dtype=torch.float16),
                "mask": torch.tensor([True, False])}, p)
    ck = ember.load(p)
    em = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    em.load_state_dict(ck["model"])
    em.eval()
    tm.eval()
    x = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), atol=1e-6)
    assert ck["step"] == 7 and ck["names"] == ["a", ("b", None)]
    assert isinstance(ck["p"], nn.Parameter) and ck["view"].tolist() == [2.0, 4.0, 6.0]
    assert ck["half"].dtype == ember.float16 and ck["mask"].dtype == ember.bool
    assert ember.load(p, map_location="meta")["model"]["0.weight"].is_meta


def test_pytorch_checkpoint_with_arbitrary_objects_is_refused(torch, tmp_path):
    import fractions
    import pickle
    p = tmp_path / "evil.pt"
    torch.save({"x": fractions.Fraction(1, 3)}, p)
    with pytest.raises(pickle.UnpicklingError, match="evil.pt: unsupported global fractions.Fraction"):
        ember.load(p)
    with pytest.raises(RuntimeError, match="never runs code"):
        ember.load(p, weights_only=False)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(p) == ["fractions.Fraction"]
    with ember.serialization.safe_globals([fractions.Fraction]):
        assert ember.load(p)["x"] == fractions.Fraction(1, 3)
        assert ember.serialization.get_unsafe_globals_in_checkpoint(p) == []
    assert fractions.Fraction not in ember.serialization.get_safe_globals()
