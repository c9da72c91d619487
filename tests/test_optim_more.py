"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and SparseAdam against torch.optim (issue 20): the
same parameters after several steps on the same gradients, in float64 and float32."""
import numpy as np
import pytest

import ember

CASES = [
    ("Adadelta", {}), ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {}), ("Adamax", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.05}),
    ("NAdam", {}), ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {}), ("RAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("RAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "betas": (0.5, 0.6)}),
    ("ASGD", {}), ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 3, "weight_decay": 0.1}),
    ("Rprop", {}), ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
]


def _run(lib, name, kw, dtype, steps=12):
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((4, 3))
    targets = [rng.standard_normal((5, 3)) for _ in range(steps)]
    xs = [rng.standard_normal((5, 4)) for _ in range(steps)]
    dt = getattr(lib, dtype)
    w = lib.tensor(w0, dtype=dt, requires_grad=True)
    b = lib.zeros(3, dtype=dt, requires_grad=True)
    opt = getattr(lib.optim, name)([w, b], **kw)
    for x, y in zip(xs, targets):
        opt.zero_grad()
        loss = ((lib.tensor(x, dtype=dt) @ w + b - lib.tensor(y, dtype=dt)) ** 2).mean()
        loss.backward()
        opt.step()
    return w.detach().numpy().copy(), b.detach().numpy().copy(), opt.state_dict()


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matches_torch(torch, name, kw, dtype):
    ew, eb, est = _run(ember, name, kw, dtype)
    tw, tb, tst = _run(torch, name, kw, dtype)
    tol = 1e-10 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(ew, tw, rtol=tol, atol=tol)
    np.testing.assert_allclose(eb, tb, rtol=tol, atol=tol)
    # the same state keys, as PyTorch names them (checkpoints move between the two)
    assert sorted(est["state"][0]) == sorted(tst["state"][0])
    assert est["param_groups"][0] == tst["param_groups"][0]


def test_state_dict_round_trip_continues_identically():
    def make():
        w = ember.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        return w, ember.optim.NAdam([w], lr=0.05)

    def step(w, opt):
        opt.zero_grad()
        (w.sin().sum() + (w ** 2).sum()).backward()
        opt.step()

    w1, o1 = make()
    for _ in range(3):
        step(w1, o1)
    w2, o2 = make()
    with ember.no_grad():
        w2.copy_(w1)
    o2.load_state_dict(o1.state_dict())
    step(w1, o1)
    step(w2, o2)
    np.testing.assert_array_equal(w1.detach().numpy(), w2.detach().numpy())


def test_argument_checks_as_pytorch(torch):
    p = [ember.zeros(2, requires_grad=True)]
    tp = [torch.zeros(2, requires_grad=True)]
    for name, kw in [("Adamax", {"betas": (1.0, 0.9)}), ("NAdam", {"lr": -1}), ("RAdam", {"eps": -1}),
                     ("Rprop", {"etas": (1.5, 1.2)}), ("Adadelta", {"rho": 1.5}), ("ASGD", {"lr": -0.1})]:
        with pytest.raises(ValueError) as t:
            getattr(torch.optim, name)(tp, **kw)
        with pytest.raises(ValueError) as e:
            getattr(ember.optim, name)(p, **kw)
        assert str(e.value) == str(t.value), name


def test_sparse_adam_refuses_dense_gradients(torch):
    w = ember.ones(3, requires_grad=True)
    opt = ember.optim.SparseAdam([w])
    (w * 2).sum().backward()
    tw = torch.ones(3, requires_grad=True)
    topt = torch.optim.SparseAdam([tw])
    (tw * 2).sum().backward()
    with pytest.raises(RuntimeError) as t:
        topt.step()
    with pytest.raises(RuntimeError) as e:
        opt.step()
    assert str(e.value) == str(t.value)
