"""SummaryWriter (issue 17): event files TensorBoard reads, with the same content as
torch.utils.tensorboard writes for the same calls."""
import os

import numpy as np
import pytest

import ember
import ember.nn as nn

pytest.importorskip("tensorboard")
from ember.utils.tensorboard import SummaryWriter  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def _read(d):
    ea = EventAccumulator(str(d), size_guidance={"images": 0, "histograms": 0, "scalars": 0, "tensors": 0})
    ea.Reload()
    return ea


def _write_all(W, d, v, img):
    with W(str(d)) as w:
        for i in range(3):
            w.add_scalar("loss", 1.0 / (i + 1), i)
        w.add_scalar("ember_tensor", np.float32(2.5), 7)
        w.add_scalars("run", {"a": 1.0, "b": 2.0}, 0)
        w.add_histogram("w", v, 0)
        w.add_histogram("w20", v, 0, bins=20)
        w.add_image("img", img, 0)
        w.add_text("note", "hello", 0)
        w.add_hparams({"lr": 0.1, "bs": 32}, {"hparam/acc": 0.9}, run_name="trial")


def test_same_content_as_torch(tmp_path, torch):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    rng = np.random.default_rng(0)
    v = rng.standard_normal(1000)
    img = rng.random((3, 8, 6)).astype(np.float32)
    _write_all(SummaryWriter, tmp_path / "e", v, img)
    _write_all(TorchWriter, tmp_path / "t", v, img)
    e, t = _read(tmp_path / "e"), _read(tmp_path / "t")
    for tag in ("loss", "ember_tensor"):
        assert [(x.step, x.value) for x in e.Scalars(tag)] == [(x.step, x.value) for x in t.Scalars(tag)]
    for tag in ("w", "w20"):
        he, ht = e.Histograms(tag)[0].histogram_value, t.Histograms(tag)[0].histogram_value
        assert list(he.bucket) == list(ht.bucket)
        np.testing.assert_allclose(he.bucket_limit, ht.bucket_limit)
        assert (he.min, he.max, he.num) == (ht.min, ht.max, ht.num)
        np.testing.assert_allclose([he.sum, he.sum_squares], [ht.sum, ht.sum_squares])
    ie, it = e.Images("img")[0], t.Images("img")[0]
    assert (ie.width, ie.height) == (it.width, it.height) == (6, 8)
    from PIL import Image
    import io
    pe = np.asarray(Image.open(io.BytesIO(ie.encoded_image_string)))
    pt = np.asarray(Image.open(io.BytesIO(it.encoded_image_string)))
    assert np.abs(pe.astype(int) - pt.astype(int)).max() <= 1
    sub = sorted(x for x in os.listdir(tmp_path / "e") if os.path.isdir(tmp_path / "e" / x))
    assert sub == sorted(x for x in os.listdir(tmp_path / "t") if os.path.isdir(tmp_path / "t" / x))
    assert _read(tmp_path / "e" / "run_a").Scalars("run")[0].value == 1.0
    hp = _read(tmp_path / "e" / "trial")
    assert hp.Scalars("hparam/acc")[0].value == pytest.approx(0.9)
    assert "note/text_summary" in e.Tags()["tensors"]


def test_graph_from_fx_trace(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(model, ember.randn(5, 3))
    g = _read(tmp_path).Graph()
    ops = [n.op for n in g.node]
    assert ops == ["placeholder", "call_module:0", "call_module:1", "call_module:2", "output"]
    last = [n for n in g.node if n.op == "call_module:2"][0]
    assert [d.size for d in last.attr["_output_shapes"].list.shape[0].dim] == [5, 2]
    assert list(last.input) == [g.node[2].name]


def test_bad_input_is_a_clear_error(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(ValueError, match="single value"):
            w.add_scalar("x", ember.ones(3))
        with pytest.raises(ValueError, match="dataformats"):
            w.add_image("x", ember.rand(3, 4, 4), dataformats="HW")
        with pytest.raises(ValueError, match="non-finite"):
            w.add_histogram("x", np.array([1.0, np.nan]))
        with pytest.raises(ValueError, match="hyper-parameter 'opt'"):
            w.add_hparams({"opt": [1, 2]}, {"m": 1.0})


def test_default_logdir_under_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_x")
    w.close()
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_x")
    assert os.listdir(w.get_logdir())
