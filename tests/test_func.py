"""ember.func against torch.func: grad, vjp, jvp, jacrev, jacfwd, hessian, linearize, their
nesting (levels), functional_call, stack_module_state and Ensemble."""
import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import func as EF


def _np(t):
    return t.detach().numpy()


def _both(torch):
    return ((ember, EF), (torch, torch.func))


def _close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


W = np.random.RandomState(0).randn(5, 4)
B = np.random.RandomState(1).randn(5)
X = np.random.RandomState(2).randn(4)


def _pred(lib):
    w, b = lib.tensor(W), lib.tensor(B)
    return lambda x: (w @ x + b).tanh()


def test_grad_and_value_against_torch(torch):
    res = {}
    for lib, F in _both(torch):
        f = lambda x, y: ((x * y).sin().sum(), x.mean())
        g, (v, aux) = F.grad_and_value(f, argnums=(0, 1), has_aux=True)(lib.tensor(X), lib.tensor(X[::-1].copy()))
        res[lib.__name__] = [_np(g[0]), _np(g[1]), _np(v), _np(aux)]
    for a, b in zip(res["ember"], res["torch"]):
        _close(a, b)


def test_jacobians_and_hessian_against_torch(torch):
    res = {}
    for lib, F in _both(torch):
        f = _pred(lib)
        x = lib.tensor(X)
        g = lambda x: f(x).pow(2).sum()
        res[lib.__name__] = [_np(F.jacrev(f)(x)), _np(F.jacfwd(f)(x)), _np(F.hessian(g)(x)),
                             _np(F.jacrev(F.jacrev(g))(x)), _np(F.jacfwd(F.jacfwd(g))(x))]
    for a, b in zip(res["ember"], res["torch"]):
        _close(a, b, rtol=1e-9, atol=1e-11)


def test_vjp_jvp_linearize_against_torch(torch):
    res = {}
    for lib, F in _both(torch):
        f = _pred(lib)
        x, v, u = lib.tensor(X), lib.tensor(X * 0.5), lib.tensor(B)
        out, fn = F.vjp(f, x)
        (ct,) = fn(u)
        o2, t2 = F.jvp(f, (x,), (v,))
        o3, jfn = F.linearize(f, x)
        res[lib.__name__] = [_np(out), _np(ct), _np(o2), _np(t2), _np(o3), _np(jfn(v))]
    for a, b in zip(res["ember"], res["torch"]):
        _close(a, b)


def test_pytree_argnums_and_outputs(torch):
    res = {}
    for lib, F in _both(torch):
        def f(p, x):
            return {"a": (p["w"] @ x).sum(), "b": [p["b"] * 2]}
        p = {"w": lib.tensor(W), "b": lib.tensor(B)}
        j = F.jacrev(f)(p, lib.tensor(X))
        res[lib.__name__] = [_np(j["a"]["w"]), _np(j["a"]["b"]), _np(j["b"][0]["b"])]
        g = F.grad(lambda p, x: f(p, x)["a"])(p, lib.tensor(X))
        res[lib.__name__] += [_np(g["w"]), _np(g["b"])]
    for a, b in zip(res["ember"], res["torch"]):
        _close(a, b)


def test_no_perturbation_confusion():
    outer = EF.grad(lambda a: a * EF.grad(lambda b: a * b)(ember.tensor(2.0)))(ember.tensor(3.0))
    assert abs(outer.item() - 6.0) < 1e-6
    # the inner variable aliasing the outer one is still a fresh variable
    r = EF.grad(lambda x: EF.grad(lambda y: (x * y).sum())(x).sum())(ember.tensor([1.5, 2.0]))
    _close(_np(r), [1.0, 1.0])


def test_grad_of_grad_and_closure():
    x = ember.tensor(0.7, dtype=ember.float64)
    d2 = EF.grad(EF.grad(lambda t: t.sin() * t))(x)
    _close(d2.item(), 2 * np.cos(0.7) - 0.7 * np.sin(0.7))
    d3 = EF.grad(EF.grad(EF.grad(lambda t: t ** 4)))(x)
    _close(d3.item(), 24 * 0.7)


def test_grad_composes_with_outer_autograd():
    w = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    g = EF.grad(lambda x: (w * x ** 2).sum())(ember.tensor([3.0, 4.0], dtype=ember.float64))
    g.sum().backward()  # d/dw sum(2 w x) = 2x
    _close(_np(w.grad), [6.0, 8.0])


def test_hvp_two_ways():
    f = lambda t: t.sin().sum()
    x, v = ember.randn(50, dtype=ember.float64), ember.randn(50, dtype=ember.float64)
    fwd = EF.jvp(EF.grad(f), (x,), (v,))[1]
    _, fn = EF.vjp(EF.grad(f), x)
    _close(_np(fwd), _np(fn(v)[0]))
    _close(_np(fwd), -np.sin(_np(x)) * _np(v))


def test_errors():
    with pytest.raises(RuntimeError, match="scalar"):
        EF.grad(lambda x: x * 2)(ember.ones(3))
    with pytest.raises(RuntimeError, match="argnums"):
        EF.grad(lambda x: x.sum(), argnums=2)(ember.ones(3))
    with pytest.raises(RuntimeError, match="has_aux"):
        EF.grad(lambda x: x.sum(), has_aux=True)(ember.ones(3))
    with pytest.raises(RuntimeError, match="floating"):
        EF.grad(lambda x: x.sum())(ember.ones(3, dtype=ember.int64))
    _, fn = EF.vjp(lambda x: x * 2, ember.ones(3))
    with pytest.raises(RuntimeError, match="shape"):
        fn(ember.ones(4))
    with pytest.raises(RuntimeError, match="same"):
        EF.jvp(lambda x: x, (ember.ones(3),), (ember.ones(4),))


def test_unused_input_gets_zero_grad():
    g = EF.grad(lambda x, y: x.sum(), argnums=(0, 1))(ember.ones(2), ember.ones(3))
    _close(_np(g[1]), np.zeros(3))


def test_chunked_jacobians():
    f = _pred(ember)
    x = ember.tensor(X)
    ref = EF.jacrev(f)(x)
    for cs in (1, 2, "auto"):
        _close(_np(EF.jacrev(f, chunk_size=cs)(x)), _np(ref))
        _close(_np(EF.jacfwd(f, chunk_size=cs)(x)), _np(ref))
    g = lambda x: f(x).sum()
    _close(_np(EF.hessian(g, chunk_size=3)(x)), _np(EF.hessian(g)(x)))


# ----------------------------------------------------------------------------- modules


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)
        self.register_buffer("scale", ember.tensor(2.0))

    def forward(self, x):
        return self.fc2(self.fc1(x).relu()) * self.scale


def test_functional_call_replaces_and_restores():
    m = MLP()
    x = ember.randn(5, 4)
    params = {k: ember.zeros_like(v) for k, v in m.named_parameters()}
    out = EF.functional_call(m, params, (x,))
    _close(_np(out), np.zeros((5, 3)))
    assert m.fc1.weight.abs().sum().item() > 0  # restored
    out2 = EF.functional_call(m, (params, {"scale": ember.tensor(0.0)}), x)
    _close(_np(out2), np.zeros((5, 3)))
    with pytest.raises(RuntimeError, match="missing"):
        EF.functional_call(m, {"fc1.weight": params["fc1.weight"]}, (x,), strict=True)
    with pytest.raises(ValueError, match="multiple"):
        EF.functional_call(m, ({"scale": ember.tensor(1.0)}, {"scale": ember.tensor(1.0)}), (x,))


def test_functional_call_tied_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3, bias=False)
            self.b = nn.Linear(3, 3, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))
    m = Tied()
    x = ember.randn(2, 3)
    eye = ember.eye(3)
    _close(_np(EF.functional_call(m, {"a.weight": eye}, (x,))), _np(x), rtol=1e-6, atol=1e-6)
    out = EF.functional_call(m, {"a.weight": eye}, (x,), tie_weights=False)
    _close(_np(out), _np(m.b(x)), rtol=1e-6, atol=1e-6)


def test_stack_module_state_and_ensemble_training():
    models = [MLP() for _ in range(3)]
    params, buffers = EF.stack_module_state(models)
    assert all(p.is_leaf and p.requires_grad for p in params.values())
    assert params["fc1.weight"].shape == (3, 8, 4) and buffers["scale"].shape == (3,)
    x = ember.randn(6, 4)
    ens = EF.Ensemble(models)
    ref = ember.stack([m(x) for m in models])
    _close(_np(ens(x)), _np(ref), rtol=1e-6, atol=1e-6)
    per = ember.randn(3, 6, 4)
    ens2 = EF.Ensemble(models, same_input=False)
    _close(_np(ens2(per)), _np(ember.stack([m(per[i]) for i, m in enumerate(models)])), rtol=1e-6, atol=1e-6)
    opt = ember.optim.Adam(ens.parameters(), lr=0.05)
    y = ember.randn(6, 3)
    first = None
    for _ in range(15):
        loss = ((ens(x) - y) ** 2).mean()
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < first
    members = ens.members()
    _close(_np(members[2](x)), _np(ens(x)[2]), rtol=1e-6, atol=1e-6)


def test_per_sample_grads_match_loop(torch):
    model = MLP()
    x, t = ember.randn(7, 4), ember.randn(7, 3)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, ti):
        return ((EF.functional_call(model, p, (xi,)) - ti) ** 2).sum()
    ps = EF.vmap(EF.grad(loss), in_dims=(None, 0, 0))(params, x, t)
    for i in range(7):
        g = EF.grad(loss)(params, x[i], t[i])
        for k in params:
            _close(_np(ps[k][i]), _np(g[k]), rtol=1e-5, atol=1e-6)


class Cube(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        ctx.save_for_forward(x, w)
        return x ** 3 * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return 3 * x ** 2 * w * g, x ** 3 * g

    @staticmethod
    def jvp(ctx, tx, tw):
        x, w = ctx._saved_fw
        return 3 * x ** 2 * w * tx + x ** 3 * tw


def test_custom_function_under_transforms():
    x = ember.randn(4, 3, dtype=ember.float64)
    w = ember.randn(3, dtype=ember.float64)
    _close(_np(EF.vmap(EF.grad(lambda v: Cube.apply(v, w).sum()))(x)), 3 * _np(x) ** 2 * _np(w))
    d = np.diag(3 * _np(x[0]) ** 2 * _np(w))
    _close(_np(EF.jacrev(lambda v: Cube.apply(v, w))(x[0])), d)
    _close(_np(EF.jacfwd(lambda v: Cube.apply(v, w))(x[0])), d)
    _close(_np(EF.hessian(lambda v: Cube.apply(v, w).sum())(x[0])), np.diag(6 * _np(x[0]) * _np(w)))
    _close(EF.grad(EF.grad(lambda v: Cube.apply(v, w[0]).sum()))(x[0, 0]).item(),
           6 * x[0, 0].item() * w[0].item())


def test_custom_function_in_vmap_under_outer_autograd():
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(3, dtype=ember.float64, requires_grad=True)
    EF.vmap(lambda r: Cube.apply(r, w).sum())(x).sum().backward()
    _close(_np(x.grad), 3 * _np(x) ** 2 * _np(w))
    _close(_np(w.grad), (_np(x) ** 3).sum(0))


def test_has_aux_and_argnums_for_jacobians(torch):
    res = {}
    for lib, F in _both(torch):
        w = lib.tensor(W)
        f = lambda x, y: ((w @ x) * y.sum(), (x * 2).sum())
        x, y = lib.tensor(X), lib.tensor(X[:2].copy())
        jr, auxr = F.jacrev(f, argnums=(0, 1), has_aux=True)(x, y)
        jf, auxf = F.jacfwd(f, argnums=(0, 1), has_aux=True)(x, y)
        res[lib.__name__] = [_np(jr[0]), _np(jr[1]), _np(auxr), _np(jf[0]), _np(jf[1]), _np(auxf)]
    for a, b in zip(res["ember"], res["torch"]):
        _close(a, b)


def test_inplace_on_views_inside_grad(torch):
    res = {}
    for lib, F in _both(torch):
        x = lib.tensor([1.5, 2.0, 3.0], dtype=lib.float64)

        def f(x):
            y = x * 2
            y[0].mul_(x[1])
            return (y * y).sum()

        def g(x):
            y = x.sin()
            y[1:].mul_(x[:2])
            y[0] = x[2] * 2
            return (y * x).sum()
        res[lib.__name__] = [_np(F.grad(f)(x)), _np(F.grad(g)(x)), _np(F.jacfwd(F.grad(g))(x))]
    for a, b in zip(res["ember"], res["torch"]):
        _close(a, b)


def test_ensemble_of_batchnorm_models_updates_each_members_statistics():
    models = [nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2)) for _ in range(3)]
    ens = EF.Ensemble(models)
    x = ember.randn(16, 4)
    out = ens(x)
    ref = ember.stack([m(x) for m in models])
    _close(_np(out), _np(ref), rtol=1e-5, atol=1e-6)
    _close(_np(ens._buffers["1__running_mean"]), np.stack([_np(m[1].running_mean) for m in models]), 1e-6, 1e-7)
    assert ens._buffers["1__num_batches_tracked"].tolist() == [1, 1, 1]
    ens.eval()
    for m in models:
        m.eval()
    _close(_np(ens(x)), _np(ember.stack([m(x) for m in models])), rtol=1e-5, atol=1e-6)
