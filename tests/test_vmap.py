"""vmap: in_dims/out_dims pytrees, nesting with itself and with grad/vjp/jacrev, randomness,
chunking, errors (data-dependent control flow names the user's line), the loop fallback."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _dispatch as D
from ember.func import vmap, grad, vjp, jacrev, jacfwd, hessian
from ember.ops import _batching


def _np(t):
    return t.detach().numpy()


def _close(a, b, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def test_alias_and_in_out_dims(torch):
    x = np.random.randn(3, 4, 5)
    y = np.random.randn(5)
    res = {}
    for lib in (ember, torch):
        f = lambda a, b: (a * b).sum(-1)
        r1 = lib.vmap(f, in_dims=(1, None))(lib.tensor(x), lib.tensor(y))
        r2 = lib.vmap(f, in_dims=(2, None), out_dims=1)(lib.tensor(x.transpose(0, 2, 1).copy()), lib.tensor(y))
        r3 = lib.vmap(lib.vmap(f, in_dims=(0, None)), in_dims=(0, None))(lib.tensor(x), lib.tensor(y))
        res[lib.__name__] = [r.numpy() for r in (r1, r2, r3)]
    for a, b in zip(res["ember"], res["torch"]):
        _close(a, b, 1e-10, 1e-12)


def test_pytree_in_dims_and_outputs():
    d = {"a": ember.randn(4, 3), "b": (ember.randn(3), [ember.randn(3, 4)])}
    out = vmap(lambda t: {"s": t["a"] + t["b"][0], "m": t["b"][1][0]},
               in_dims=({"a": 0, "b": (None, [1])},))(d)
    _close(_np(out["s"]), _np(d["a"] + d["b"][0]))
    _close(_np(out["m"]), _np(d["b"][1][0].t()))
    # unbatched outputs are broadcast over the batch
    o = vmap(lambda t: ember.ones(2))(ember.randn(3, 1))
    assert o.shape == (3, 2)
    o = vmap(lambda t: (t, ember.ones(2)), out_dims=(0, None))(ember.randn(3, 1))
    assert o[1].shape == (2,)


def test_in_dims_errors():
    with pytest.raises(ValueError, match="same size"):
        vmap(lambda a, b: a + b)(ember.ones(3), ember.ones(4))
    with pytest.raises(ValueError, match="in_dims"):
        vmap(lambda a, b: a + b, in_dims=(0,))(ember.ones(3), ember.ones(3))
    with pytest.raises(ValueError, match="at least one"):
        vmap(lambda a: a, in_dims=None)(ember.ones(3))
    with pytest.raises(ValueError, match="dimension"):
        vmap(lambda a: a, in_dims=2)(ember.ones(3))


def test_data_dependent_control_flow_names_the_line():
    def f(t):
        if t.sum() > 0:  # the offending line
            return t
        return -t
    with pytest.raises(RuntimeError, match=r"test_vmap.py.*the offending line"):
        vmap(f)(ember.randn(3, 2))
    with pytest.raises(RuntimeError, match="item"):
        vmap(lambda t: ember.tensor(t.sum().item()))(ember.randn(3, 2))


def test_nested_transforms(torch):
    w = np.random.randn(6, 4)
    x = np.random.randn(5, 4)
    res = {}
    for lib in (ember, torch):
        F_ = lib.func
        W = lib.tensor(w)
        f = lambda v: (W @ v).tanh()
        g = lambda v: f(v).pow(2).sum()
        X = lib.tensor(x)
        r = [F_.vmap(F_.grad(g))(X), F_.vmap(F_.jacrev(f))(X), F_.vmap(F_.jacfwd(f))(X), F_.vmap(F_.hessian(g))(X)]
        _, fn = F_.vjp(f, X[0])
        r.append(F_.vmap(fn)(lib.eye(6, dtype=lib.float64))[0])
        res[lib.__name__] = [t.detach().numpy() for t in r]
    for a, b in zip(res["ember"], res["torch"]):
        _close(a, b, 1e-9, 1e-11)


def test_randomness_modes():
    x = ember.ones(4, 3)
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(lambda t: t + ember.randn(3))(x)
    same = vmap(lambda t: t * 0 + ember.rand(3), randomness="same")(x)
    assert np.all(_np(same) == _np(same)[0])
    diff = vmap(lambda t: t * 0 + ember.rand(3), randomness="different")(x)
    assert not np.all(_np(diff) == _np(diff)[0])
    drop = vmap(lambda t: F.dropout(t, 0.5), randomness="different")(ember.ones(4, 200))
    assert not np.all(_np(drop) == _np(drop)[0])
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(lambda t: ember.rand(2), randomness="bogus")


def test_chunk_size():
    x = ember.randn(10, 3)
    f = lambda t: (t.sin() * 2).sum()
    ref = vmap(f)(x)
    for cs in (1, 3, 10, 64, "auto"):
        _close(_np(vmap(f, chunk_size=cs)(x)), _np(ref))
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(f, chunk_size=0)


def test_fallback_reports_once():
    op = D.Op("_test_loop_op", lambda xp, a: a[::-1].copy())
    _batching._reported.discard(op.name)
    x = ember.randn(4, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r1 = vmap(op)(x)
        r2 = vmap(op)(x)
    _close(_np(r1), _np(x)[:, ::-1])
    _close(_np(r2), _np(x)[:, ::-1])
    msgs = [str(m.message) for m in w if "_test_loop_op" in str(m.message)]
    assert len(msgs) == 1 and "ran as a Python loop" in msgs[0] and "_test_loop_op: 1 time, at" in msgs[0]
    assert "test_vmap.py" in msgs[0]   # the user's call site


def test_fallbacks_of_one_call_are_one_report():
    ops = [D.Op(f"_test_loop_op{i}", lambda xp, a: a[::-1].copy()) for i in range(3)]
    for op in ops:
        _batching._reported.discard(op.name)

    def f(t):
        for op in ops:
            t = op(op(t))
        return t
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = vmap(f)(ember.randn(4, 3))
        vmap(f)(ember.randn(4, 3))          # already reported: silent
    assert out.shape == (4, 3)
    msgs = [str(m.message) for m in w if "_test_loop_op" in str(m.message)]
    assert len(msgs) == 1 and "3 ops had no batching rule" in msgs[0]
    assert all(f"_test_loop_op{i}: 2 times" in msgs[0] for i in range(3))


def test_auto_chunk_size_follows_measured_memory(monkeypatch):
    """'auto' measures one sample's working memory: 64 samples of a function that allocates about
    8 MB each stay near the budget instead of holding all 512 MB at once."""
    import tracemalloc
    from ember.func import _vmap
    monkeypatch.setattr(_vmap, "AUTO_BUDGET_BYTES", 32 << 20)

    def f(t):
        big = t.reshape(1, -1).expand(1 << 20, t.numel()).sum(1)  # 1M float64 = 8 MB per sample
        return big.mean() + t.sum()
    x = ember.randn(64, 1, dtype=ember.float64)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = vmap(f, chunk_size="auto")(x)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    _close(_np(out), 2 * _np(x)[:, 0])
    assert peak < 96 << 20, f"peak {peak >> 20} MB"


def test_inplace_under_vmap():
    x = ember.zeros(3, 2)
    vmap(lambda t: t.add_(1.0))(x)  # writes through to the input, as in torch
    _close(_np(x), np.ones((3, 2)))
    with pytest.raises(RuntimeError, match="in-place"):
        vmap(lambda t: ember.zeros(2).add_(t))(ember.ones(3, 2))


def test_batched_index_tensors():
    table = ember.randn(10, 4)
    idx = ember.randint(0, 10, (5, 3))
    _close(_np(vmap(lambda i: table[i])(idx)), _np(table)[_np(idx)])
    x = ember.randn(5, 10)
    _close(_np(vmap(lambda r, i: r[i])(x, idx)), np.stack([_np(x)[k][_np(idx)[k]] for k in range(5)]))


def test_grad_through_vmap_with_outer_autograd():
    w = ember.randn(3, 4, requires_grad=True)
    xs = ember.randn(5, 4)
    out = vmap(lambda x: (w @ x).relu().sum())(xs)
    out.sum().backward()
    w2 = w.detach().clone().requires_grad_()
    sum((w2 @ xs[i]).relu().sum() for i in range(5)).backward()
    _close(_np(w.grad), _np(w2.grad), 1e-5, 1e-6)


def test_conv_model_per_sample_grads_match_loop():
    import ember.nn as nn
    from ember.func import functional_call
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(12, 2)).eval()
    x, t = ember.randn(4, 2, 6, 6), ember.tensor([0, 1, 1, 0])
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss(p, xi, ti):
        return F.cross_entropy(functional_call(model, (p, buffers), (xi.unsqueeze(0),)), ti.unsqueeze(0))
    before = dict(_batching.fallback_counts)
    ps = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, t)
    assert _batching.fallback_counts == before, "a conv-model op fell back to the loop"
    for i in range(4):
        g = grad(loss)(params, x[i], t[i])
        for k in params:
            _close(_np(ps[k][i]), _np(g[k]), 1e-4, 1e-5)
