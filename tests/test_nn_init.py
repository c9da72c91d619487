"""nn.init: distributions, fan rules, gains, in-place and no-grad behaviour."""
import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import init


def test_gain_and_fans(torch):
    for nl, p in [("linear", None), ("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("selu", None),
                  ("sigmoid", None), ("conv2d", None)]:
        assert init.calculate_gain(nl, p) == pytest.approx(torch.nn.init.calculate_gain(nl, p))
    w = ember.empty(8, 4, 3, 3)
    assert init._calculate_fan_in_and_fan_out(w) == (36, 72)
    with pytest.raises(ValueError):
        init._calculate_fan_in_and_fan_out(ember.empty(3))
    with pytest.raises(ValueError):
        init.calculate_gain("nope")


def test_bounds_and_stds():
    w = nn.Parameter(ember.empty(400, 300))
    init.kaiming_uniform_(w, a=math.sqrt(5))
    assert np.abs(w.detach().numpy()).max() <= 1 / math.sqrt(300) + 1e-7
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.detach().numpy().std() == pytest.approx(math.sqrt(2 / 400), rel=0.03)
    init.xavier_uniform_(w, gain=2.0)
    bound = 2.0 * math.sqrt(6 / 700)
    assert np.abs(w.detach().numpy()).max() <= bound and np.abs(w.detach().numpy()).max() > 0.95 * bound
    init.xavier_normal_(w)
    assert w.detach().numpy().std() == pytest.approx(math.sqrt(2 / 700), rel=0.03)
    init.normal_(w, 1.0, 0.5)
    assert w.detach().numpy().mean() == pytest.approx(1.0, abs=0.01)
    init.uniform_(w, -2, -1)
    assert w.detach().numpy().min() >= -2 and w.detach().numpy().max() <= -1
    init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert np.abs(w.detach().numpy()).max() <= 0.5
    assert w.requires_grad and w.grad_fn is None and w.is_leaf


def test_constant_eye_dirac_orthogonal():
    w = ember.empty(3, 5)
    assert init.constant_(w, 0.25) is w and w.tolist() == [[0.25] * 5] * 3
    init.ones_(w)
    assert w.sum().item() == 15
    init.zeros_(w)
    assert w.sum().item() == 0
    init.eye_(w)
    assert w.numpy().tolist() == np.eye(3, 5).tolist()
    k = ember.empty(4, 4, 3, 3)
    init.dirac_(k)
    x = ember.randn(1, 4, 5, 5)
    assert k.numpy()[1, 1, 1, 1] == 1 and k.numpy().sum() == 4
    q = ember.empty(6, 4)
    init.orthogonal_(q)
    np.testing.assert_allclose(q.numpy().T @ q.numpy(), np.eye(4), atol=1e-5)
    s = ember.empty(10, 4)
    init.sparse_(s, 0.3)
    assert ((s.numpy() == 0).sum(0) >= 3).all()
    assert x.shape == (1, 4, 5, 5)


def test_seeded_init_is_reproducible():
    ember.manual_seed(5)
    a = nn.Linear(4, 4).weight.tolist()
    ember.manual_seed(5)
    b = nn.Linear(4, 4).weight.tolist()
    assert a == b
