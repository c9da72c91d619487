"""Registry-wide forward mode: every differentiable op's jvp rule against float64 central finite
differences (samples from tests/op_db.py, so a new op cannot skip it), plus jvp-of-jvp on one
sample per op, and the clear error for an op without a rule."""
import numpy as np
import pytest

import ember
import ember.nn  # noqa: F401  (registers the nn primitives)
import ember.autograd.forward_ad as fwAD
from ember import _dispatch as D

from op_db import ENTRIES, sample_list, diff_outputs
from _checks import central_diff

GRAD = [e for e in ENTRIES if e.grad]


def _ids(es):
    return [e.name for e in es]


def _jvp(entry, s, tangents):
    """Output tangents by forward-mode AD (float64)."""
    pos = s.diff_positions()
    with fwAD.dual_level():
        inputs = s.tensors(ember)
        for p, t in zip(pos, tangents):
            inputs[p] = fwAD.make_dual(inputs[p], ember.tensor(t))
        outs = diff_outputs(entry.fn(ember, *inputs, **s.kwargs))
        res = []
        for o in outs:
            p, t = fwAD.unpack_dual(o)
            res.append(np.zeros(tuple(o.shape)) if t is None else t.numpy().astype(np.float64))
    return res


def _fd_jvp(entry, s, tangents):
    """Output tangents by central differences of the outputs along the input tangents."""
    pos = s.diff_positions()

    def h(t):
        args = list(s.args)
        for p, d in zip(pos, tangents):
            args[p] = np.array(s.args[p] + t * d, dtype=s.args[p].dtype)
        inputs = [ember.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in args]
        with ember.no_grad():
            return [o.numpy().astype(np.float64) for o in diff_outputs(entry.fn(ember, *inputs, **s.kwargs))]
    return central_diff(h)


@pytest.mark.parametrize("entry", GRAD, ids=_ids(GRAD))
def test_jvp_matches_finite_differences(entry):
    rng = np.random.default_rng(3)
    checked = 0
    for s in sample_list(entry):
        if not s.grad:
            continue
        pos = s.diff_positions()
        if not pos:
            continue
        tangents = [rng.standard_normal(s.args[p].shape) for p in pos]
        got = _jvp(entry, s, tangents)
        if entry.fd_tol is None:
            continue
        want = _fd_jvp(entry, s, tangents)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape, f"{entry.name} {s}: tangent shape {g.shape}, expected {w.shape}"
            np.testing.assert_allclose(g, w, rtol=entry.fd_tol, atol=entry.fd_tol,
                                       err_msg=f"{entry.name} {s}")
        checked += 1
    assert checked or entry.fd_tol is None or not any(s.grad for s in sample_list(entry))


@pytest.mark.parametrize("entry", GRAD, ids=_ids(GRAD))
def test_jvp_of_jvp(entry):
    """Second-order forward mode: the jvp rules are written in ember ops, so they carry tangents
    of an outer level; checked against finite differences of the first-order jvp."""
    s = next((s for s in sample_list(entry) if s.grad and s.diff_positions() and
              all(not isinstance(a, np.ndarray) or a.size > 0 for a in s.args)), None)
    if s is None or entry.fd_tol is None:
        pytest.skip("no sample for second order")
    rng = np.random.default_rng(4)
    pos = s.diff_positions()
    t1 = [rng.standard_normal(s.args[p].shape) for p in pos]
    t2 = [rng.standard_normal(s.args[p].shape) for p in pos]
    with fwAD.dual_level() as outer:
        inputs = s.tensors(ember)
        for p, t in zip(pos, t2):
            inputs[p] = fwAD.make_dual(inputs[p], ember.tensor(t))
        with fwAD.dual_level() as inner:
            for p, t in zip(pos, t1):
                inputs[p] = fwAD.make_dual(inputs[p], ember.tensor(t), level=inner)
            outs = diff_outputs(entry.fn(ember, *inputs, **s.kwargs))
            tans = [fwAD.unpack_dual(o, level=inner).tangent for o in outs]
        got = []
        for t, o in zip(tans, outs):
            tt = None if t is None else fwAD.unpack_dual(t, level=outer).tangent
            got.append(np.zeros(tuple(o.shape)) if tt is None else tt.numpy())
    eps = 1e-6

    def first(sign):
        s2 = type(s)(tuple(np.array(a + sign * eps * t2[pos.index(i)], dtype=a.dtype) if i in pos else a
                           for i, a in enumerate(s.args)), s.kwargs, s.nondiff, s.desc, s.grad)
        return _jvp(entry, s2, t1)
    want = [(a - b) / (2 * eps) for a, b in zip(first(1), first(-1))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"{entry.name} {s}")


def test_every_differentiable_op_has_a_jvp_rule():
    missing = sorted(n for n, op in D.REGISTRY.items() if op.differentiable and op.jvp is None)
    assert not missing, f"differentiable ops without a jvp rule: {missing}"


def test_missing_rule_is_a_clear_error():
    op = D.Op("_test_no_jvp", lambda xp, a: a * 2)
    try:
        with fwAD.dual_level():
            x = fwAD.make_dual(ember.ones(3), ember.ones(3))
            with pytest.raises(RuntimeError, match="forward AD not implemented for _test_no_jvp"):
                op(x)
    finally:
        pass
