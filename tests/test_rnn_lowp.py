"""RNN, LSTM, GRU and their cells in float16 and bfloat16 against PyTorch's CPU build (issue 17).

PyTorch runs all of them in both dtypes. float16 (and packed bfloat16 input, and the cells) go through
its op-by-op kernels, each op rounding to the dtype; a bfloat16 LSTM runs its oneDNN layer: the two
biases summed in bfloat16, gates and cell update in float32, h and c rounded after each step. ember
reproduces both: the forward values to one ulp (they agree exactly here), the gradients to the
low-precision harness's tolerance (tests/test_torch_op_db_lowp.py's GRAD_TOL).
"""
import numpy as np
import pytest

import ember

DTYPES = ["float16", "bfloat16"]
ULP = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
GRAD_TOL = {"float16": 4e-3, "bfloat16": 4e-2}


def _to_ember(t, dtype):
    return ember.from_numpy(t.detach().float().numpy()).to(getattr(ember, dtype))


def _close(e, t, rtol, atol, what):
    assert e.dtype.name == str(t.dtype).split(".")[-1], (what, e.dtype, t.dtype)
    np.testing.assert_allclose(e.detach().float().numpy(), t.detach().float().numpy(), rtol=rtol, atol=atol,
                               err_msg=what)


def _pair(torch, dtype, name, size, **kw):
    torch.manual_seed(0)
    m = getattr(torch.nn, name)(*size, **kw).to(getattr(torch, dtype))
    em = getattr(ember.nn, name)(*size, **kw).to(getattr(ember, dtype))
    em.load_state_dict({k: _to_ember(v, dtype) for k, v in m.state_dict().items()})
    return m, em


def _check_grads(torch, dtype, m, em, outs, eouts, leaves, eleaves):
    rs = np.random.RandomState(1)
    cots = [torch.tensor(rs.randn(*o.shape).astype(np.float32)).to(o.dtype) for o in outs]
    tg = torch.autograd.grad(outs, leaves + list(m.parameters()), cots)
    eg = ember.autograd.grad(eouts, eleaves + list(em.parameters()), [_to_ember(c, dtype) for c in cots])
    names = [f"input {k}" for k in range(len(leaves))] + [n for n, _ in m.named_parameters()]
    for n, a, b in zip(names, eg, tg):
        scale = float(b.float().abs().max()) or 1.0  # (relative to the largest entry: sums that cancel)
        _close(a, b, GRAD_TOL[dtype], GRAD_TOL[dtype] * scale, f"grad of {n}")


CONFIGS = [({}, False), ({"num_layers": 2, "bidirectional": True, "batch_first": True}, True), ({"bias": False}, False)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("cfg", range(len(CONFIGS)))
def test_recurrent_layers_match_torch(torch, dtype, name, cfg):
    kw, with_hx = CONFIGS[cfg]
    m, em = _pair(torch, dtype, name, (5, 6), **kw)
    tdt = getattr(torch, dtype)
    rs = np.random.RandomState(0)
    x = torch.tensor(rs.randn(3, 7, 5).astype(np.float32)).to(tdt).requires_grad_()
    leaves = [x]
    args = ()
    if with_hx:
        nd = 2 * kw["num_layers"] if kw.get("bidirectional") else kw.get("num_layers", 1)
        hs = [torch.tensor(rs.randn(nd, 3 if kw.get("batch_first") else 7, 6).astype(np.float32)).to(tdt)
              .requires_grad_() for _ in range(2 if name == "LSTM" else 1)]
        leaves += hs
        args = (tuple(hs),) if name == "LSTM" else (hs[0],)
    eleaves = [_to_ember(v, dtype).requires_grad_() for v in leaves]
    eargs = ((tuple(eleaves[1:]),) if name == "LSTM" else (eleaves[1],)) if with_hx else ()
    out, h = m(x, *args)
    eout, eh = em(eleaves[0], *eargs)
    outs, eouts = [out] + (list(h) if name == "LSTM" else [h]), [eout] + (list(eh) if name == "LSTM" else [eh])
    for k, (a, b) in enumerate(zip(eouts, outs)):
        _close(a, b, ULP[dtype], ULP[dtype], f"output {k}")
    _check_grads(torch, dtype, m, em, outs, eouts, leaves, eleaves)


@pytest.mark.parametrize("dtype", DTYPES)
def test_packed_lstm_matches_torch(torch, dtype):
    m, em = _pair(torch, dtype, "LSTM", (4, 5))
    rs = np.random.RandomState(0)
    x = torch.tensor(rs.randn(6, 3, 4).astype(np.float32)).to(getattr(torch, dtype)).requires_grad_()
    ex = _to_ember(x, dtype).requires_grad_()
    lens = [6, 4, 2]
    P, EP = torch.nn.utils.rnn, ember.nn.utils.rnn
    out, (h, c) = m(P.pack_padded_sequence(x, lens))
    eout, (eh, ec) = em(EP.pack_padded_sequence(ex, lens))
    for k, (a, b) in enumerate(zip((eout.data, eh, ec), (out.data, h, c))):
        _close(a, b, ULP[dtype], ULP[dtype], f"output {k}")
    _check_grads(torch, dtype, m, em, [out.data, h, c], [eout.data, eh, ec], [x], [ex])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["RNNCell", "GRUCell", "LSTMCell"])
def test_cells_match_torch(torch, dtype, name):
    m, em = _pair(torch, dtype, name, (4, 5))
    rs = np.random.RandomState(0)
    x = torch.tensor(rs.randn(3, 4).astype(np.float32)).to(getattr(torch, dtype)).requires_grad_()
    ex = _to_ember(x, dtype).requires_grad_()
    out, eout = m(x), em(ex)
    outs, eouts = (list(out), list(eout)) if name == "LSTMCell" else ([out], [eout])
    for k, (a, b) in enumerate(zip(eouts, outs)):
        _close(a, b, ULP[dtype], ULP[dtype], f"output {k}")
    _check_grads(torch, dtype, m, em, outs, eouts, [x], [ex])
