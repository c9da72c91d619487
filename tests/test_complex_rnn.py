"""Complex recurrent layers against PyTorch 2.13's CPU build, which runs nn.LSTM/GRU/RNN and their cells
with complex weights and input (tanh nonlinearity; relu has no complex kernel): values and
torch.autograd's gradients; the fused lstm_layer primitive by gradcheck/gradgradcheck with forward mode;
a model/input dtype mismatch raises PyTorch's ValueError."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops.rnn import lstm_layer


def _c(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _outputs(o):
    if not isinstance(o, tuple):
        return [o]
    out = [o[0]]
    for t in o[1:]:
        out += list(t) if isinstance(t, tuple) else [t]
    return out


@pytest.mark.parametrize("mod,kw,shape", [
    ("LSTM", {}, (5, 2, 3)),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}, (2, 4, 3)),
    ("LSTM", {"bias": False}, (4, 3)),
    ("GRU", {"num_layers": 2}, (5, 2, 3)),
    ("RNN", {"bidirectional": True}, (5, 3)),
    ("LSTMCell", {}, (2, 3)),
    ("GRUCell", {}, (2, 3)),
    ("RNNCell", {}, (3,)),
])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_recurrent_modules_match_torch(torch, mod, kw, shape, dtype):
    torch.manual_seed(0)
    tm = getattr(torch.nn, mod)(3, 4, dtype=getattr(torch, dtype), **kw)
    em = getattr(ember.nn, mod)(3, 4, dtype=getattr(ember, dtype), **kw)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = _c(np.random.default_rng(0), shape).astype(dtype)
    res = []
    for lib, m in ((torch, tm), (ember, em)):
        xt = lib.tensor(x, requires_grad=True)
        outs = _outputs(m(xt))
        loss = sum((lib.view_as_real(t) * (k + 1)).sin().sum() for k, t in enumerate(outs))
        loss.backward()
        res.append([t.detach().numpy() for t in outs] + [xt.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
    tol = 1e-4 if dtype == "complex64" else 1e-10
    for a, b in zip(res[1], res[0]):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("mod", ["RNN", "RNNCell"])
def test_relu_rnn_has_no_complex_kernel_as_torch(torch, mod):
    x = np.ones((2, 3), np.complex64)
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex"):
        getattr(torch.nn, mod)(3, 4, nonlinearity="relu", dtype=torch.cfloat)(torch.tensor(x))
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex"):
        getattr(ember.nn, mod)(3, 4, nonlinearity="relu", dtype=ember.cfloat)(ember.tensor(x))


@pytest.mark.parametrize("mod", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("xd,wd", [("complex64", "float32"), ("float32", "complex64"), ("complex128", "complex64"),
                                   ("float64", "float32")])
def test_input_and_weight_dtypes_must_match_as_torch(torch, mod, xd, wd):
    with pytest.raises(ValueError, match="does not match weight dtype"):
        getattr(torch.nn, mod)(3, 4, dtype=getattr(torch, wd))(torch.ones(2, 3, dtype=getattr(torch, xd)))
    with pytest.raises(ValueError, match=f"RNN input dtype \\(ember.{xd}\\) does not match weight dtype "
                                         f"\\(ember.{wd}\\)"):
        getattr(ember.nn, mod)(3, 4, dtype=getattr(ember, wd))(ember.ones(2, 3, dtype=getattr(ember, xd)))


@pytest.mark.parametrize("reverse,bias", [(False, True), (True, False)])
def test_lstm_layer_gradcheck_complex128(reverse, bias):
    rng = np.random.default_rng(1)
    T, B, H, I = 3, 2, 2, 3
    args = [_c(rng, (T, B, I)), _c(rng, (B, H)) * 0.5, _c(rng, (B, H)) * 0.5, _c(rng, (4 * H, I)) * 0.5,
            _c(rng, (4 * H, H)) * 0.5]
    if bias:
        args.append(_c(rng, (4 * H,)) * 0.5)
    ts = [ember.tensor(a, requires_grad=True) for a in args]

    def f(*t):
        return lstm_layer(*t, reverse=reverse) if bias else lstm_layer(*t, None, reverse=reverse)
    assert gradcheck(f, ts, check_forward_ad=True)
    assert gradgradcheck(f, ts)
    # the fused backward (grad mode off, no transform) agrees with the composite one
    outs = f(*ts)
    gs = [ember.tensor(_c(rng, tuple(o.shape))) for o in outs]
    fused = ember.autograd.grad(outs, ts, gs, retain_graph=True)
    composite = ember.autograd.grad(outs, ts, gs, create_graph=True)
    for a, b in zip(fused, composite):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_lstm_layer_forward_mode_with_only_a_cell_state_tangent():
    """A c0 tangent alone reaches the outputs (the forward-mode rule once dropped it at the first step)."""
    rng = np.random.default_rng(2)
    ts = [ember.tensor(rng.standard_normal(s), requires_grad=True)
          for s in ((3, 2, 5), (2, 2), (2, 2), (8, 5), (8, 2))]
    assert gradcheck(lambda c0: lstm_layer(ts[0], ts[1], c0, ts[3], ts[4]), (ts[2],), check_forward_ad=True)
