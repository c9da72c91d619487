"""MultiheadAttention and TransformerEncoder against PyTorch with the same weights."""
import numpy as np
import pytest

import ember
from ember import nn
from _checks import to_torch_state

rs = np.random.RandomState(0)


def _both(torch, make):
    e, t = make(nn), make(torch.nn)
    assert list(e.state_dict()) == list(t.state_dict())
    assert repr(e) == repr(t)
    t.load_state_dict(to_torch_state(torch, e))
    e.eval()
    t.eval()
    return e, t


def _grads_match(e, t, ex, tx):
    for a, b in zip(ex, tx):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-5, rtol=1e-4)
    tp = dict(t.named_parameters())
    for n, p in e.named_parameters():
        if tp[n].grad is not None:
            np.testing.assert_allclose(p.grad.numpy(), tp[n].grad.numpy(), atol=1e-5, rtol=1e-4, err_msg=n)


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True), dict(bias=False)])
@pytest.mark.parametrize("masks", ["none", "attn_bool", "attn_float", "padding"])
def test_multihead_attention_matches_torch(torch, kw, masks):
    e, t = _both(torch, lambda m: m.MultiheadAttention(8, 2, **kw))
    q, k = rs.randn(4, 3, 8).astype(np.float32), rs.randn(5, 3, 8).astype(np.float32)
    if kw.get("batch_first"):
        q, k = q.transpose(1, 0, 2).copy(), k.transpose(1, 0, 2).copy()
    ex = [ember.tensor(a, requires_grad=True) for a in (q, k, k)]
    tx = [torch.tensor(a, requires_grad=True) for a in (q, k, k)]
    ekw, tkw = {}, {}
    if masks == "attn_bool":
        m = rs.rand(4, 5) > 0.6
        m[:, 0] = False
        ekw["attn_mask"], tkw["attn_mask"] = ember.tensor(m), torch.tensor(m)
    elif masks == "attn_float":
        m = rs.randn(4, 5).astype(np.float32)
        ekw["attn_mask"], tkw["attn_mask"] = ember.tensor(m), torch.tensor(m)
    elif masks == "padding":
        m = np.zeros((3, 5), bool)
        m[1, 3:] = True
        ekw["key_padding_mask"], tkw["key_padding_mask"] = ember.tensor(m), torch.tensor(m)
    eo, ew = e(*ex, **ekw)
    to, tw = t(*tx, **tkw)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), atol=1e-5, rtol=1e-4)
    (eo.sum() + (ew * ew).sum()).backward()
    (to.sum() + (tw * tw).sum()).backward()
    _grads_match(e, t, ex, tx)


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True, activation="gelu"), dict(batch_first=True)])
def test_transformer_encoder_matches_torch(torch, kw):
    def make(m):
        layer = m.TransformerEncoderLayer(8, 2, dim_feedforward=16, **kw)
        return m.TransformerEncoder(layer, 2, norm=m.LayerNorm(8), enable_nested_tensor=False)
    e, t = _both(torch, make)
    x = rs.randn(5, 3, 8).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eo, to = e(ex), t(tx)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-5, rtol=1e-4)
    eo.sum().backward()
    to.sum().backward()
    _grads_match(e, t, [ex], [tx])


def test_unbatched_and_need_weights(torch):
    e, t = _both(torch, lambda m: m.MultiheadAttention(4, 2))
    x = rs.randn(3, 4).astype(np.float32)
    eo, ew = e(ember.tensor(x), ember.tensor(x), ember.tensor(x), average_attn_weights=False)
    to, tw = t(torch.tensor(x), torch.tensor(x), torch.tensor(x), average_attn_weights=False)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), atol=1e-5)
    assert e(ember.tensor(x), ember.tensor(x), ember.tensor(x), need_weights=False)[1] is None


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True, batch_first=True)])
def test_full_transformer_matches_torch(torch, kw):
    e, t = _both(torch, lambda m: m.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                                                dim_feedforward=16, **kw))
    src, tgt = rs.randn(5, 3, 8).astype(np.float32), rs.randn(4, 3, 8).astype(np.float32)
    if kw.get("batch_first"):
        src, tgt = src.transpose(1, 0, 2).copy(), tgt.transpose(1, 0, 2).copy()
    em = nn.Transformer.generate_square_subsequent_mask(4)
    tm = torch.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(em.numpy(), tm.numpy())
    es, et = ember.tensor(src, requires_grad=True), ember.tensor(tgt, requires_grad=True)
    ts, tt = torch.tensor(src, requires_grad=True), torch.tensor(tgt, requires_grad=True)
    eo = e(es, et, tgt_mask=em)
    to = t(ts, tt, tgt_mask=tm)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-5, rtol=1e-4)
    eo.sum().backward()
    to.sum().backward()
    _grads_match(e, t, [es, et], [ts, tt])
