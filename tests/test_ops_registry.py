"""Registry-wide tests: every primitive's forward against PyTorch, its backward against float64
central finite differences and PyTorch, and its double backward against finite differences of
the backward. Samples come from tests/op_db.py."""
import numpy as np
import pytest

import ember
import ember.nn  # noqa: F401  (registers the nn primitives the samples cover)
from ember import _dispatch as D

import op_db
from op_db import ENTRIES, sample_list, diff_outputs, flat_outputs
from _checks import analytic_vjp, numeric_vjp

# modules that register primitives when imported (the registry is complete only after them)
for _mod in ("ember.nn",):
    try:
        __import__(_mod)
    except ImportError:
        pass

GRAD = [e for e in ENTRIES if e.grad]
ORACLE = [e for e in ENTRIES if e.oracle]


def _ids(es):
    return [e.name for e in es]


# ----------------------------------------------------------------------------- coverage


def test_every_registered_op_has_samples():
    covered = {e.op for e in ENTRIES}
    missing = sorted(set(D.REGISTRY) - covered)
    assert not missing, f"ops without op_db samples: {missing}"


def test_every_differentiable_op_has_gradient_samples():
    covered = {e.op for e in ENTRIES if e.grad}
    missing = sorted(n for n, op in D.REGISTRY.items() if op.differentiable and n not in covered)
    assert not missing, f"differentiable ops without gradient samples: {missing}"
    nondiff = sorted(n for n, op in D.REGISTRY.items() if not op.differentiable)
    assert nondiff == op_db.NON_DIFFERENTIABLE


def test_entries_name_real_ops():
    assert not [e.name for e in ENTRIES if e.op not in D.REGISTRY]


class _Recorder:
    def __init__(self):
        self.seen = set()

    def on_op(self, op, args, params):
        self.seen.add(op.name)
        return None

    def on_node(self, node):
        return None


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_entry_dispatches_its_op(entry):
    rec = _Recorder()
    D.add_listener(rec)
    try:
        for s in sample_list(entry):
            entry.fn(ember, *s.tensors(ember), **s.kwargs)
    finally:
        D.remove_listener(rec)
    assert entry.op in rec.seen, f"{entry.name} ran {sorted(rec.seen)}, not {entry.op}"


# ----------------------------------------------------------------------------- gradients


def _fn_of(entry, sample):
    def f(*inputs):
        return diff_outputs(entry.fn(ember, *inputs, **sample.kwargs))
    return f


def _cotangents(rng, outs):
    return [rng.standard_normal(tuple(o.shape)) for o in outs]


@pytest.mark.parametrize("entry", GRAD, ids=_ids(GRAD))
def test_backward_matches_finite_differences(entry):
    rng = np.random.default_rng(1)
    for s in sample_list(entry):
        if not s.grad:
            continue
        pos = s.diff_positions()
        inputs = s.tensors(ember, requires_grad=True)
        f = _fn_of(entry, s)
        probe = f(*inputs)
        cots = _cotangents(rng, probe)
        ana, outs = analytic_vjp(f, inputs, cots)
        for o in outs:
            assert o.requires_grad, f"{entry.name} {s}: output does not require grad"
        if entry.fd_tol is None:
            continue
        num = numeric_vjp(f, list(s.args), pos, cots)
        for p in pos:
            got = ana[p].numpy()
            assert got.shape == s.args[p].shape, f"{entry.name} {s}: grad shape {got.shape}"
            np.testing.assert_allclose(got, num[p], rtol=entry.fd_tol, atol=entry.fd_tol,
                                       err_msg=f"{entry.name} {s} input {p}")


GRADGRAD = [e for e in GRAD if e.gradgrad and e.fd_tol is not None]


@pytest.mark.parametrize("entry", GRADGRAD, ids=_ids(GRADGRAD))
def test_double_backward_matches_finite_differences(entry):
    rng = np.random.default_rng(2)
    s = next((s for s in sample_list(entry) if s.grad and all(
        not isinstance(a, np.ndarray) or a.size > 0 for a in s.args)), None)
    if s is None:
        pytest.skip("no non-empty sample")
    pos = s.diff_positions()
    f = _fn_of(entry, s)
    probe = f(*s.tensors(ember))
    nout = len(probe)
    cots0 = _cotangents(rng, probe)
    ws = [rng.standard_normal(s.args[p].shape) for p in pos]

    # g(x..., v...) = <w, vjp_x(v)>, differentiated w.r.t. x and v
    def g(*xv):
        xs, vs = list(xv[:len(s.args)]), xv[len(s.args):]
        grads, _ = analytic_vjp(f, xs, [v for v in vs], create_graph=True)
        tot = None
        for p, w in zip(pos, ws):
            term = (grads[p] * ember.tensor(w)).sum()
            tot = term if tot is None else tot + term
        return [tot]

    xs = s.tensors(ember, requires_grad=True)
    vs = [ember.tensor(c, requires_grad=True) for c in cots0]
    # analytic_vjp passes numpy cotangents to ember.tensor; pass tensors through unchanged
    res = g(*xs, *vs)[0]
    wrt = [x for x in xs if isinstance(x, ember.Tensor) and x.requires_grad] + vs
    if res.requires_grad:
        ana = ember.autograd.grad([res], wrt, allow_unused=True)
    else:
        ana = [None] * len(wrt)
    ana = [np.zeros(tuple(t.shape)) if a is None else a.numpy() for a, t in zip(ana, wrt)]

    arrays = list(s.args) + list(cots0)
    allpos = pos + list(range(len(s.args), len(s.args) + nout))

    def g_plain(*xv):
        return g(*[ember.tensor(a.numpy(), requires_grad=(i in allpos)) if isinstance(a, ember.Tensor)
                   else a for i, a in enumerate(xv)])

    with ember.enable_grad():
        num = numeric_vjp(g_plain, arrays, allpos)
    for a, p in zip(ana, allpos):
        np.testing.assert_allclose(a, num[p], rtol=1e-4, atol=1e-4, err_msg=f"{entry.name} {s} arg {p}")


# ----------------------------------------------------------------------------- against PyTorch


def _same_dtype(e, t):
    return e.dtype.name == str(t.dtype).replace("torch.", "")


def _cmp(eo, to, entry, s, rtol, atol):
    eo, to = flat_outputs(eo), flat_outputs(to)
    assert len(eo) == len(to), f"{entry.name} {s}: {len(eo)} outputs, torch {len(to)}"
    for a, b in zip(eo, to):
        assert tuple(a.shape) == tuple(b.shape), f"{entry.name} {s}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        assert _same_dtype(a, b), f"{entry.name} {s}: dtype {a.dtype} vs {b.dtype}"
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=f"{entry.name} {s}")


@pytest.mark.parametrize("entry", ORACLE, ids=_ids(ORACLE))
def test_forward_matches_torch(entry, torch):
    for s in sample_list(entry):
        eo = entry.fn(ember, *s.tensors(ember), **s.kwargs)
        to = entry.torch_call()(torch, *s.tensors(torch), **s.kwargs)
        _cmp(eo, to, entry, s, entry.rtol, entry.atol)
        if entry.float32 and any(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in s.args):
            eo = entry.fn(ember, *s.tensors(ember, np.float32), **s.kwargs)
            to = entry.torch_call()(torch, *s.tensors(torch, np.float32), **s.kwargs)
            _cmp(eo, to, entry, f"{s} float32", 2e-5, 2e-5)


ORACLE_GRAD = [e for e in ORACLE if e.grad]


@pytest.mark.parametrize("entry", ORACLE_GRAD, ids=_ids(ORACLE_GRAD))
def test_backward_matches_torch(entry, torch):
    rng = np.random.default_rng(3)
    for s in sample_list(entry):
        if not s.grad:
            continue
        ei = s.tensors(ember, requires_grad=True)
        ti = s.tensors(torch, requires_grad=True)
        eo = diff_outputs(entry.fn(ember, *ei, **s.kwargs))
        to = [o for o in flat_outputs(entry.torch_call()(torch, *ti, **s.kwargs)) if o.dtype.is_floating_point]
        cots = _cotangents(rng, eo)
        ew = [x for x in ei if isinstance(x, ember.Tensor) and x.requires_grad]
        tw = [x for x in ti if isinstance(x, torch.Tensor) and x.requires_grad]
        eg = ember.autograd.grad(eo, ew, [ember.tensor(c) for c in cots], allow_unused=True)
        tg = torch.autograd.grad(to, tw, [torch.tensor(c) for c in cots], allow_unused=True)
        for a, b, x in zip(eg, tg, ew):
            a = np.zeros(tuple(x.shape)) if a is None else a.numpy()
            b = np.zeros(tuple(x.shape)) if b is None else b.numpy()
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-7, err_msg=f"{entry.name} {s}")


@pytest.mark.parametrize("entry", GRAD, ids=_ids(GRAD))
def test_float32_gradients_keep_dtype_and_shape(entry):
    """A float32 input gets a float32 gradient of its own shape (no silent float64 upcast)."""
    rng = np.random.default_rng(4)
    for s in sample_list(entry):
        if not s.grad:
            continue
        inputs = s.tensors(ember, np.float32, requires_grad=True)
        outs = diff_outputs(entry.fn(ember, *inputs, **s.kwargs))
        if not outs:
            continue
        wrt = [x for x in inputs if isinstance(x, ember.Tensor) and x.requires_grad]
        cots = [ember.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in outs]
        grads = ember.autograd.grad(outs, wrt, cots, allow_unused=True)
        for x, g in zip(wrt, grads):
            if g is not None:
                assert g.dtype is x.dtype, f"{entry.name} {s}: grad {g.dtype} for input {x.dtype}"
                assert tuple(g.shape) == tuple(x.shape), f"{entry.name} {s}: grad shape {tuple(g.shape)}"
