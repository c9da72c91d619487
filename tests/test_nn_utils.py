"""nn.utils: gradient clipping and parameters/vector conversion against PyTorch."""
import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters


def _params(M, scale):
    rs = np.random.RandomState(0)
    ps = []
    for shape in [(3, 4), (4,), (2, 2)]:
        p = M.nn.Parameter(M.tensor(rs.randn(*shape).astype(np.float32)))
        p.grad = M.tensor(rs.randn(*shape).astype(np.float32) * scale)
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
@pytest.mark.parametrize("scale", [0.01, 10.0])
def test_clip_grad_norm_matches_torch(torch, norm_type, scale):
    e, t = _params(ember, scale), _params(torch, scale)
    en = clip_grad_norm_(e, max_norm=1.0, norm_type=norm_type)
    tn = torch.nn.utils.clip_grad_norm_(t, max_norm=1.0, norm_type=norm_type)
    assert en.item() == pytest.approx(tn.item(), rel=1e-5)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_nonfinite_and_single_tensor():
    p = nn.Parameter(ember.ones(2))
    p.grad = ember.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = nn.Parameter(ember.ones(2))
    q.grad = ember.tensor([3.0, 4.0])
    assert clip_grad_norm_(q, 1.0).item() == pytest.approx(5.0)
    assert q.grad.tolist() == pytest.approx([0.6, 0.8], rel=1e-5)
    assert clip_grad_norm_([nn.Parameter(ember.ones(1))], 1.0).item() == 0.0


def test_clip_grad_value(torch):
    e, t = _params(ember, 3.0), _params(torch, 3.0)
    clip_grad_value_(e, 0.5)
    torch.nn.utils.clip_grad_value_(t, 0.5)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())


def test_parameters_vector_round_trip():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    v = parameters_to_vector(m.parameters())
    assert v.shape == (11,) and v.requires_grad
    vector_to_parameters(ember.arange(11.0), m.parameters())
    assert m[0].weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and m[1].bias.tolist() == [10.0]
    assert m[0].weight.requires_grad
    with pytest.raises(RuntimeError, match="11 elements"):
        vector_to_parameters(ember.ones(5), m.parameters())
    with pytest.raises(TypeError):
        vector_to_parameters([1.0], m.parameters())


def test_pad_sequence_matches_torch(torch):
    from ember.nn.utils.rnn import pad_sequence, unpad_sequence
    seqs = [np.random.RandomState(i).randn(n, 3).astype(np.float32) for i, n in enumerate((4, 2, 5))]
    for kw in (dict(), dict(batch_first=True, padding_value=-1.0), dict(batch_first=True, padding_side="left")):
        e = pad_sequence([ember.tensor(s) for s in seqs], **kw)
        t = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], **kw)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    back = unpad_sequence(pad_sequence([ember.tensor(s) for s in seqs]), [4, 2, 5])
    assert [b.shape[0] for b in back] == [4, 2, 5] and back[1].tolist() == ember.tensor(seqs[1]).tolist()


def test_weight_norm_matches_torch(torch):
    from ember.nn.utils import weight_norm, remove_weight_norm
    from _checks import to_torch_state
    import warnings
    e = weight_norm(nn.Linear(4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    assert sorted(e.state_dict()) == sorted(t.state_dict())
    t.load_state_dict(to_torch_state(torch, e))
    x = np.random.RandomState(0).randn(2, 4).astype(np.float32)
    eo, to = e(ember.tensor(x)), t(torch.tensor(x))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    eo.sum().backward()
    to.sum().backward()
    for n in ("weight_g", "weight_v", "bias"):
        np.testing.assert_allclose(getattr(e, n).grad.numpy(), getattr(t, n).grad.numpy(), rtol=1e-5, atol=1e-6)
    remove_weight_norm(e)
    assert sorted(e.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_total_norm_matches_torch_for_every_order(torch):
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in [(300, 200), (200,), (50, 7, 3)]]
    arrs[1][:] = 0.0
    for nt in (2.0, 1.0, 3.0, 0.5, float("inf"), 0.0):
        tn = float(torch.nn.utils.get_total_norm([torch.tensor(a) for a in arrs], nt))
        en = float(ember.nn.utils.get_total_norm([ember.tensor(a) for a in arrs], nt))
        assert en == pytest.approx(tn, rel=1e-5), nt
