"""RNN / LSTM / GRU and cells against PyTorch (same weights), names, shapes, finite differences."""
import numpy as np
import pytest

import ember
from ember import nn
from _checks import PER_ELEMENT, check_grads, to_torch_state

rs = np.random.RandomState(0)


def run_both(torch, make, x, hx=None, lstm=False):
    e, t = make(nn), make(torch.nn)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert repr(e) == repr(t)
    t.load_state_dict(to_torch_state(torch, e))
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    args_e, args_t = [ex], [tx]
    if hx is not None:
        if lstm:
            args_e.append(tuple(ember.tensor(h) for h in hx))
            args_t.append(tuple(torch.tensor(h) for h in hx))
        else:
            args_e.append(ember.tensor(hx))
            args_t.append(torch.tensor(hx))
    eo, to = e(*args_e), t(*args_t)
    eo_flat = [eo] if not isinstance(eo, tuple) else [eo[0]] + (list(eo[1]) if isinstance(eo[1], tuple) else [eo[1]])
    to_flat = [to] if not isinstance(to, tuple) else [to[0]] + (list(to[1]) if isinstance(to[1], tuple) else [to[1]])
    le, lt = 0, 0
    for k, (a, b) in enumerate(zip(eo_flat, to_flat)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5, rtol=1e-4)
        w = np.asarray(rs.randn(*a.shape)).astype(np.float32)
        le = le + (a * ember.tensor(w)).sum()
        lt = lt + (b * torch.tensor(w)).sum()
    le.backward()
    lt.backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), atol=1e-5, rtol=1e-4)
    tp = dict(t.named_parameters())
    for n, p in e.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[n].grad.numpy(), atol=1e-5, rtol=1e-4, err_msg=n)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True), dict(batch_first=True, bias=False),
                                dict(num_layers=2)])
def test_recurrent_layers_match_torch(torch, cls, kw):
    x = rs.randn(5, 3, 4).astype(np.float32)  # (T, B, F) or (B, T, F) with batch_first
    run_both(torch, lambda m: getattr(m, cls)(4, 6, **kw), x)


def test_initial_state_unbatched_and_relu(torch):
    hx = rs.randn(2, 3, 6).astype(np.float32)
    run_both(torch, lambda m: m.GRU(4, 6, num_layers=2), rs.randn(5, 3, 4).astype(np.float32), hx)
    run_both(torch, lambda m: m.LSTM(4, 6), rs.randn(5, 3, 4).astype(np.float32),
             (rs.randn(1, 3, 6).astype(np.float32), rs.randn(1, 3, 6).astype(np.float32)), lstm=True)
    run_both(torch, lambda m: m.RNN(4, 6, nonlinearity="relu"), rs.randn(5, 4).astype(np.float32))


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(torch, cls):
    run_both(torch, lambda m: getattr(m, cls)(4, 5), rs.randn(3, 4).astype(np.float32))


def test_lstm_finite_differences():
    ember.set_default_dtype(ember.float64)
    m = nn.LSTM(3, 2, bidirectional=True)
    x = ember.randn(4, 2, 3, requires_grad=True)
    check_grads(lambda a, *ps: m(a)[0], [x] + list(m.parameters()), **PER_ELEMENT)


def test_errors():
    with pytest.raises(RuntimeError, match="input_size"):
        nn.LSTM(4, 3)(ember.randn(2, 1, 5))
    with pytest.raises(NotImplementedError):
        nn.LSTM(4, 3, proj_size=2)
    with pytest.raises(RuntimeError, match="hidden size"):
        nn.GRU(4, 3)(ember.randn(2, 1, 4), ember.zeros(2, 1, 3))


@pytest.mark.parametrize("mode,kw", [("LSTM", dict(num_layers=2, bidirectional=True)), ("GRU", dict(bidirectional=True)),
                                     ("RNN", dict(num_layers=2)), ("LSTM", dict(batch_first=True))])
def test_packed_sequences_match_torch(torch, mode, kw):
    # nn.utils.rnn.pack_padded_sequence & co. were missing, and the recurrent layers refused packed input
    rs = np.random.RandomState(0)
    seqs = [rs.randn(n, 3).astype(np.float32) for n in (2, 4, 1)]
    h0 = rs.randn(kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1), 3, 4).astype(np.float32)
    res = []
    for m in (ember, torch):
        m.manual_seed(0)
        layer = getattr(m.nn, mode)(3, 4, **kw)
        if m is torch:
            layer.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in ember_layer.state_dict().items()})
        else:
            ember_layer = layer
        xs = [m.tensor(s, requires_grad=True) for s in seqs]
        packed = m.nn.utils.rnn.pack_sequence(xs, enforce_sorted=False)
        hx = m.tensor(h0)
        out, h = layer(packed, (hx, hx * 0.5) if mode == "LSTM" else hx)
        padded, lengths = m.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=5)
        hn = h[0] if mode == "LSTM" else h
        (padded.sum() + (hn * hn).sum()).backward()
        res.append([padded.detach().numpy(), lengths.numpy(), hn.detach().numpy(), out.data.detach().numpy(),
                    out.batch_sizes.numpy(), out.sorted_indices.numpy()] + [x.grad.numpy() for x in xs]
                   + [layer.weight_hh_l0.grad.numpy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4)


def test_pack_padded_sequence_layout_and_errors(torch):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4, 1)  # (T, B, 1)
    for m in (ember, torch):
        R = m.nn.utils.rnn
        p = R.pack_padded_sequence(m.tensor(x), [3, 3, 2, 1])
        assert p.batch_sizes.tolist() == [4, 3, 2] and p.sorted_indices is None
        assert p.data.flatten().tolist() == [0, 1, 2, 3, 4, 5, 6, 8, 9]
        with pytest.raises(RuntimeError, match="sorted in decreasing order"):
            R.pack_padded_sequence(m.tensor(x), [1, 3, 2, 1])
        assert [s.flatten().tolist() for s in R.unpack_sequence(R.pack_sequence(
            [m.tensor([1.0]), m.tensor([2.0, 3.0])], enforce_sorted=False))] == [[1.0], [2.0, 3.0]]
