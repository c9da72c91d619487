"""ember.onnx.export (issue 20): the exported files pass onnx's checker and, run in onnxruntime,
give ember's own outputs; what cannot be exported is an error naming the node."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import ember.onnx  # noqa: E402
from ember.models import SimpleCNN, SimpleMLP, resnet18  # noqa: E402


def _roundtrip(tmp_path, model, *xs, rtol=1e-5, atol=1e-5, **kw):
    path = tmp_path / "m.onnx"
    names = [f"x{i}" for i in range(len(xs))]
    ember.onnx.export(model, xs, str(path), input_names=names, output_names=["y"], **kw)
    sess = ort.InferenceSession(str(path))
    got = sess.run(None, {n: x.numpy() for n, x in zip(names, xs)})[0]
    model.eval()
    with ember.no_grad():
        ref = model(*xs).numpy()
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    return sess


class _Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.ln = nn.LayerNorm(8)
        self.proj = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)

    def forward(self, idx):
        h = self.ln(self.emb(idx))
        att = F.softmax(h @ h.transpose(1, 2) / 8 ** 0.5, dim=-1)
        y = F.gelu(self.proj(self.drop(att @ h))) + h[:, :1]
        return y.permute(0, 2, 1).reshape(idx.shape[0], -1).tanh()


class _Convs(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, padding="same", groups=2, dilation=2)
        self.pool = nn.AvgPool2d(2, ceil_mode=True)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x):
        y = self.act(self.bn(self.c1(x)))
        y = F.silu(self.c2(y)) * 0.5 - y
        return self.gap(self.pool(y)).flatten(1).unsqueeze(1).squeeze(1)


def test_mlp_and_cnn(tmp_path):
    ember.manual_seed(0)
    _roundtrip(tmp_path, SimpleMLP(), ember.randn(4, 784))
    _roundtrip(tmp_path, SimpleCNN(), ember.randn(2, 1, 28, 28))
    _roundtrip(tmp_path, _Convs(), ember.randn(2, 3, 11, 11))


def test_resnet18_with_a_dynamic_batch(tmp_path):
    ember.manual_seed(0)
    model = resnet18(num_classes=10)
    sess = _roundtrip(tmp_path, model, ember.randn(1, 3, 64, 64), rtol=1e-4, atol=1e-4,
                      dynamic_axes={"x0": {0: "batch"}, "y": {0: "batch"}})
    x = ember.randn(3, 3, 64, 64)
    with ember.no_grad():
        ref = model(x).numpy()
    np.testing.assert_allclose(sess.run(None, {"x0": x.numpy()})[0], ref, rtol=1e-4, atol=1e-4)
    assert sess.get_inputs()[0].shape[0] == "batch"


def test_attention_block(tmp_path):
    ember.manual_seed(0)
    _roundtrip(tmp_path, _Attention(), ember.tensor([[1, 2, 3], [4, 5, 6]]))


def test_file_object_and_returned_model(tmp_path):
    import io
    import onnx
    buf = io.BytesIO()
    proto = ember.onnx.export(nn.Sequential(nn.Linear(3, 2), nn.ReLU()), (ember.randn(1, 3),), buf)
    assert onnx.load_from_string(buf.getvalue()) == proto
    assert proto.opset_import[0].version == 17 and ember.onnx.is_in_onnx_export() is False


def test_unsupported_is_a_clear_error(tmp_path):
    class Odd(nn.Module):
        def forward(self, x):
            return ember.cumsum(x, 0)
    with pytest.raises(ember.onnx.OnnxExporterError, match=r"node 'cumsum'.*no ONNX conversion"):
        ember.onnx.export(Odd(), (ember.randn(3),), str(tmp_path / "x.onnx"))
    with pytest.raises(ember.onnx.OnnxExporterError, match="opset_version 9"):
        ember.onnx.export(nn.ReLU(), (ember.randn(3),), str(tmp_path / "x.onnx"), opset_version=9)
    m = nn.Linear(2, 2)
    m.train()
    ember.onnx.export(m, (ember.randn(1, 2),), str(tmp_path / "y.onnx"))
    assert m.training  # the mode is restored
