"""Optimizers and schedulers against torch.optim trajectories; state dicts; param groups."""
import numpy as np
import pytest

import ember
from ember import nn, optim

W0 = np.random.RandomState(0).randn(5, 3).astype(np.float32)
B0 = np.random.RandomState(2).randn(3).astype(np.float32)
X = np.random.RandomState(1).randn(8, 5).astype(np.float32)


def trajectory(M, name, kw, steps=6, sched=None, groups=False):
    w = M.nn.Parameter(M.tensor(W0))
    b = M.nn.Parameter(M.tensor(B0))
    params = [{"params": [w]}, {"params": [b], "lr": 0.05}] if groups else [w, b]
    opt = getattr(M.optim, name)(params, **kw)
    s = sched(M, opt) if sched else None
    lrs = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((M.tensor(X) @ w + b).tanh() ** 2).sum()
        loss.backward()
        opt.step()
        if s is not None:
            s.step()
            lrs.append(s.get_last_lr()[0])
    return w.detach().numpy().copy(), b.detach().numpy().copy(), lrs, opt


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1, alpha=0.9)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5, maximize=True)),
]


@pytest.mark.parametrize("name,kw", CASES)
def test_trajectory_matches_torch(torch, name, kw):
    ew, eb, _, eo = trajectory(ember, name, kw, groups=True)
    tw, tb, _, to = trajectory(torch, name, kw, groups=True)
    np.testing.assert_allclose(ew, tw, atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(eb, tb, atol=2e-5, rtol=1e-4)
    esd, tsd = eo.state_dict(), to.state_dict()
    assert esd["param_groups"] == tsd["param_groups"]
    assert set(esd["state"]) == set(tsd["state"])
    for k in tsd["state"]:
        assert set(esd["state"][k]) == set(tsd["state"][k])
        for key, v in tsd["state"][k].items():
            np.testing.assert_allclose(np.asarray(esd["state"][k][key].numpy()), v.numpy(), atol=2e-5, rtol=1e-4)


SCHEDULERS = [
    lambda M, o: M.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
    lambda M, o: M.optim.lr_scheduler.MultiStepLR(o, milestones=[1, 4], gamma=0.3),
    lambda M, o: M.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    lambda M, o: M.optim.lr_scheduler.LambdaLR(o, lambda e: 1.0 / (e + 1)),
    lambda M, o: M.optim.lr_scheduler.CosineAnnealingLR(o, T_max=3, eta_min=0.01),
    lambda M, o: M.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=10),
    lambda M, o: M.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=10, three_phase=True,
                                                 anneal_strategy="linear"),
    lambda M, o: M.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=4),
    lambda M, o: M.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3),
    lambda M, o: M.optim.lr_scheduler.PolynomialLR(o, total_iters=6, power=2.0),
    lambda M, o: M.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001),
    lambda M, o: M.optim.lr_scheduler.SequentialLR(o, [M.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=3),
                                                       M.optim.lr_scheduler.ExponentialLR(o, gamma=0.8)],
                                                   milestones=[3]),
    lambda M, o: M.optim.lr_scheduler.ChainedScheduler([M.optim.lr_scheduler.ConstantLR(o, 0.5, total_iters=2),
                                                        M.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)]),
]


@pytest.mark.parametrize("sched", SCHEDULERS)
def test_schedulers_match_torch(torch, sched):
    ew, _, elr, eo = trajectory(ember, "SGD", dict(lr=0.1, momentum=0.9), steps=9, sched=sched)
    tw, _, tlr, to = trajectory(torch, "SGD", dict(lr=0.1, momentum=0.9), steps=9, sched=sched)
    np.testing.assert_allclose(elr, tlr, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ew, tw, atol=2e-5, rtol=1e-4)
    assert eo.param_groups[0]["momentum"] == pytest.approx(to.param_groups[0]["momentum"])


def test_onecycle_adam_cycles_beta1(torch):
    _, _, elr, eo = trajectory(ember, "Adam", dict(lr=0.1), steps=5,
                               sched=lambda M, o: M.optim.lr_scheduler.OneCycleLR(o, 0.1, total_steps=8))
    _, _, tlr, to = trajectory(torch, "Adam", dict(lr=0.1), steps=5,
                               sched=lambda M, o: M.optim.lr_scheduler.OneCycleLR(o, 0.1, total_steps=8))
    assert eo.param_groups[0]["betas"] == pytest.approx(to.param_groups[0]["betas"])
    np.testing.assert_allclose(elr, tlr)


def test_state_dict_round_trip_continues_identically():
    _, _, _, opt = trajectory(ember, "Adam", dict(lr=0.01), steps=3)
    sd = opt.state_dict()
    w = nn.Parameter(ember.tensor(W0))
    b = nn.Parameter(ember.tensor(B0))
    opt2 = optim.Adam([w, b], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01 and opt2.param_groups[0]["params"] == [w, b]
    assert opt2.state[w]["step"].item() == 3.0
    assert opt2.state[w]["exp_avg"] is not sd["state"][0]["exp_avg"]
    with pytest.raises(ValueError, match="parameter groups"):
        optim.Adam([{"params": [w]}, {"params": [b]}]).load_state_dict(sd)


def test_param_groups_and_errors():
    a = nn.Parameter(ember.ones(2))
    b = nn.Parameter(ember.ones(2))
    opt = optim.SGD([a], lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.5, "momentum": 0.9})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["dampening"] == 0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Adam([a], lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {a}}], lr=0.1)


def test_zero_grad_and_step_without_grads():
    a = nn.Parameter(ember.ones(2))
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.step()  # no gradient: nothing happens
    assert a.tolist() == [1.0, 1.0]
    (a * 3).sum().backward()
    v = a._version
    opt.step()
    assert a._version > v and a.tolist() == pytest.approx([0.7, 0.7])
    opt.zero_grad(set_to_none=False)
    assert a.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert a.grad is None


def test_step_after_inplace_update_is_caught_by_autograd():
    a = nn.Parameter(ember.ones(2))
    opt = optim.SGD([a], lr=0.1)
    y = (a * a).sum()
    a.grad = ember.ones(2)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_closure_and_repr(torch):
    a = nn.Parameter(ember.ones(2))
    opt = optim.SGD([a], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss
    assert opt.step(closure).item() == 2.0
    t = torch.nn.Parameter(torch.ones(2))
    assert repr(optim.Adam([a])) == repr(torch.optim.Adam([t]))


def test_step_hooks():
    a = nn.Parameter(ember.ones(2))
    opt = optim.SGD([a], lr=0.1)
    seen = []
    h1 = opt.register_step_pre_hook(lambda o, args, kw: seen.append(("pre", a.tolist())))
    h2 = opt.register_step_post_hook(lambda o, args, kw: seen.append(("post", a.tolist())))
    g = optim.optimizer.register_optimizer_step_post_hook(lambda o, args, kw: seen.append("global"))
    a.grad = ember.ones(2)
    opt.step()
    assert [s[0] if isinstance(s, tuple) else s for s in seen] == ["pre", "post", "global"]
    assert seen[0][1] == [1.0, 1.0] and seen[1][1] == pytest.approx([0.9, 0.9])
    for h in (h1, h2, g):
        h.remove()
    opt.step()
    assert len(seen) == 3


def test_reduce_lr_on_plateau_matches_torch(torch):
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.89, 0.9, 0.91, 0.92, 0.93, 0.94]
    lrs = []
    for M in (ember, torch):
        p = M.nn.Parameter(M.ones(1))
        opt = M.optim.SGD([p], lr=1.0)
        s = M.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, min_lr=0.1)
        got = []
        for m in metrics:
            s.step(m)
            got.append(opt.param_groups[0]["lr"])
        lrs.append(got)
    assert lrs[0] == pytest.approx(lrs[1])


def test_lbfgs_matches_torch(torch):
    """In float64, so that rounding does not get amplified along the L-BFGS iterations."""
    Y = np.random.RandomState(3).randn(8, 3)
    out = []
    for M in (ember, torch):
        w = M.nn.Parameter(M.tensor(W0.astype(np.float64)))
        opt = M.optim.LBFGS([w], lr=1, max_iter=4, history_size=3)

        def closure():
            opt.zero_grad()
            loss = ((M.tensor(X.astype(np.float64)) @ w - M.tensor(Y)) ** 2).mean() + (w ** 2).sum() * 0.01
            loss.backward()
            return loss
        losses = [float(opt.step(closure)) for _ in range(3)]
        st = opt.state[w]
        out.append((w.detach().numpy().copy(), losses, st["func_evals"], st["n_iter"]))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-10)
    assert out[0][2:] == out[1][2:]
    assert out[0][1][-1] < out[0][1][0]


def test_grad_scaler_and_disabled_autocast_match_torch(torch):
    # torch.amp.GradScaler / torch.cuda.amp.GradScaler(enabled=...) and autocast(enabled=False), which
    # training scripts create unconditionally, raised AttributeError
    import warnings
    res = []
    for m in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            off = m.cuda.amp.GradScaler(enabled=True)  # no CUDA: disabled, a pass-through
        assert not off.is_enabled() and off.get_scale() == 1.0
        s = m.amp.GradScaler("cpu", init_scale=2.0 ** 4, growth_interval=2)
        p = m.nn.Parameter(m.tensor([1.0, 2.0]))
        opt = m.optim.SGD([p], lr=0.1)
        out = []
        for g in ([3.0, 3.0], [float("inf"), 1.0], [1.0, 1.0], [2.0, 0.5]):
            opt.zero_grad()
            if g[0] == float("inf"):
                p.grad = m.tensor(g)  # an overflowed gradient: the step is skipped, the scale halves
            else:
                s.scale((p * m.tensor(g)).sum()).backward()
            r = s.step(opt)
            s.update()
            out.append((p.detach().numpy().copy(), s.get_scale(), r is None))
        with m.autocast("cpu", enabled=False):
            pass
        res.append((out, s.state_dict()))
    for (a, sa, ra), (b, sb, rb) in zip(res[0][0], res[1][0]):
        np.testing.assert_allclose(a, b)
        assert (sa, ra) == (sb, rb)
    assert res[0][1] == res[1][1]
    with pytest.raises(NotImplementedError):
        ember.autocast("cpu", dtype=ember.float16)
