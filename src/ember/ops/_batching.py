"""Batching rules (vmap): the rule signature, the family rules and the loop fallback.

A rule is ``rule(op, vals, batched, params, size) -> (out, out_batched)``: ``vals`` are the
inputs one level below vmap, a batched one carrying its batch dimension first (``batched[i]``
says which); ``out_batched`` says which outputs carry it (a bool, or a tuple for several
outputs). Rules call ember ops (through dispatch), so the batched computation is itself seen by
the levels below: autograd, forward mode, an outer vmap.

Families: elementwise (broadcasting) and reductions/scans (dims shift by one) apply to every op of
the family; ``dim_shift_rule`` serves the views, joins and gather-like ops that their files bind
it to. Op-specific rules (view, expand, cat, indexing, matmul, linear, einsum, conv, pooling,
norms, losses) sit next to their ops in ember/ops/*.py. ``fallback_rule`` loops over the batch
for an op without a rule and says so once per op.
"""
import inspect
import warnings

from .. import _dispatch as D
from .._dispatch import dispatch

def _ln(v, b):
    return v.dim() - 1 if b else (v.dim() if isinstance(v, D.Tensor) else 0)


def _pad_to(v, n):
    """A batched value with logical ndim < n, with size-1 dims after the batch dim."""
    k = v.dim() - 1
    if k >= n:
        return v
    s = tuple(v.shape)
    return v.reshape((s[0],) + (1,) * (n - k) + s[1:])


def _materialize(v, size):
    """An unbatched value as a batched one (a broadcast view)."""
    return v.unsqueeze(0).expand((size,) + tuple(v.shape))


def _shift(d):
    if d is None:
        return None
    if isinstance(d, (tuple, list)):
        return type(d)(x + 1 if x >= 0 else x for x in d)
    return d + 1 if d >= 0 else d


def _prod(s):
    n = 1
    for v in s:
        n *= v
    return n


def _flags(op, b):
    return b if op.nout == 1 else (b,) * op.nout


# ----------------------------------------------------------------------------- elementwise


def elementwise_rule(op, vals, bd, params, size):
    n = 0
    for v, b in zip(vals, bd):
        if isinstance(v, D.Tensor):
            n = max(n, _ln(v, b))
    new = [(_pad_to(v, n) if b else v) for v, b in zip(vals, bd)]
    if params.get("memory_format") is not None:
        params = dict(params, memory_format=None)
    return dispatch(op, tuple(new), params), _flags(op, True)


# ----------------------------------------------------------------------------- reductions / scans

_param_names = {}


def _names(op):
    r = _param_names.get(op.name)
    if r is None:
        r = _param_names[op.name] = tuple(inspect.signature(op.impl).parameters)
    return r


def reduction_rule(op, vals, bd, params, size):
    if not bd[0] or any(bd[1:]):
        return fallback_rule(op, vals, bd, params, size)
    x = vals[0]
    n = x.dim() - 1
    names = _names(op)
    p = dict(params)
    if n == 0 and ("dim" in names and p.get("dim") is not None or "dims" in names and p.get("dims")):
        # dim 0 of logical 0-dim inputs: run on (batch, 1) over dim 1; each result is one value a row
        p["dim" if "dim" in names else "dims"] = 1 if "dim" in names else (1,)
        r = dispatch(op, (x.reshape(size, 1),) + tuple(vals[1:]), p)
        fix = (lambda t: t.reshape(size) if t.numel() == size else t)
        return (fix(r) if op.nout == 1 else tuple(fix(t) for t in r)), _flags(op, True)
    if "dims" in names:
        dims = p.get("dims")
        p["dims"] = tuple(range(1, n + 1)) if dims is None else _shift(tuple(dims))
    elif "dim" in names:
        dim = p.get("dim")
        if dim is None:  # argmax/argmin over all elements
            keep = p.get("keepdim", False)
            p["dim"] = 1
            p["keepdim"] = False
            r = dispatch(op, (x.reshape(size, -1),) + tuple(vals[1:]), p)
            if keep:
                r = r.reshape((size,) + (1,) * n)
            return r, _flags(op, True)
        p["dim"] = _shift(dim)
    return dispatch(op, tuple(vals), p), _flags(op, True)


# ----------------------------------------------------------------------------- dim-shifting ops


def dim_shift_rule(op, vals, bd, params, size):
    """Ops whose tensor inputs share their dims (cat, stack, gather, scatter, sort, flip, ...):
    unbatched inputs are broadcast to the batch, dim-like parameters shift by one."""
    new = []
    for v, b in zip(vals, bd):
        if isinstance(v, D.Tensor) and not b:
            v = _materialize(v, size)
        new.append(v)
    p = dict(params)
    for k in ("dim", "dims", "dim1", "dim2"):
        if k in p:
            p[k] = _shift(p[k])
    if "shape" in p:
        p["shape"] = (size,) + tuple(p["shape"])
    return dispatch(op, tuple(new), p), _flags(op, True)


def gather_like_rule(op, vals, bd, params, size):
    """dim_shift_rule for ops whose result has their operands' rank (gather, scatter, sort, topk):
    with logical 0-dim operands (dim 0 of a scalar, which may meet a 1-element vector index), they
    run on (batch, n) over dim 1. The result has the shape of operand ``op.out_like`` (0: input; gather's
    is its index)."""
    lds = [_ln(v, b) for v, b in zip(vals, bd) if isinstance(v, D.Tensor)]
    if 0 in lds and max(lds) <= 1:
        p = dict(params, dim=1)
        r = dispatch(op, tuple((v if b else _materialize(v, size)).reshape(size, -1) if isinstance(v, D.Tensor)
                               else v for v, b in zip(vals, bd)), p)
        k = getattr(op, "out_like", 0)
        zero = _ln(vals[k], bd[k]) == 0
        fix = (lambda t: t.reshape(size) if zero else t)
        return (fix(r) if op.nout == 1 else tuple(fix(t) for t in r)), _flags(op, True)
    return dim_shift_rule(op, vals, bd, params, size)


# ----------------------------------------------------------------------------- the fallback

_reported = set()
fallback_counts = {}  # op name -> times the loop ran (tests check that hot ops never get here)
_pending = []  # one {what: [count, {call sites}]} per outermost vmap call running


def _note_fallback(what):
    """Count a per-sample loop; inside a vmap call it joins that call's one report (see
    ``report_fallbacks``), outside one it is reported at once."""
    fallback_counts[what] = fallback_counts.get(what, 0) + 1
    if what in _reported:
        return
    from ..func._vmap import _user_line
    site = _user_line()
    if _pending:
        entry = _pending[-1].setdefault(what, [0, []])
        entry[0] += 1
        if site not in entry[1]:
            entry[1].append(site)
        return
    _reported.add(what)
    warnings.warn(f"vmap: {what} ran as a Python loop over the batch (there is no batching rule for it "
                  f"with these inputs). At {site}", RuntimeWarning, stacklevel=4)


def collect_fallbacks():
    """Start collecting the loops of one outermost vmap call."""
    _pending.append({})


def report_fallbacks():
    """End the collection: one warning naming every op that looped (first time each), how often,
    and where the user's code called it."""
    found = _pending.pop()
    new = {k: v for k, v in found.items() if k not in _reported}
    if not new:
        return
    _reported.update(new)
    lines = [f"  {k}: {n} time{'s' if n != 1 else ''}, at " + "; ".join(sites[:3]) +
             (f" (and {len(sites) - 3} more places)" if len(sites) > 3 else "")
             for k, (n, sites) in new.items()]
    warnings.warn(f"vmap: {len(new)} op{'s' if len(new) != 1 else ''} had no batching rule for their inputs "
                  f"and ran as a Python loop over the batch (slow; reported once per op):\n" + "\n".join(lines),
                  RuntimeWarning, stacklevel=3)


def fallback_rule(op, vals, bd, params, size):
    """Run the op once per batch element and stack the results."""
    _note_fallback(op.name)
    from .shape import stack
    outs = []
    for i in range(size):
        a = tuple(v.select(0, i) if b else v for v, b in zip(vals, bd))
        outs.append(dispatch(op, a, params))
    if op.nout == 1:
        return stack(outs), True
    return tuple(stack([o[k] for o in outs]) for k in range(op.nout)), (True,) * op.nout


def _loop_note(what):
    _note_fallback(what)


FAMILY = {
    "elementwise": elementwise_rule,
    "reduction": reduction_rule,
    "scan": reduction_rule,
}


def rule_for(op):
    r = op.batch
    if r is None:
        r = FAMILY.get(op.family)
        if r is not None:
            op.batch = r
    return r
