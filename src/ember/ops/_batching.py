"""Batching rules (vmap) for the registry, by family, with the few per-op rules next to them.

A rule is ``rule(op, vals, batched, params, size) -> (out, out_batched)``: ``vals`` are the
inputs one level below vmap, a batched one carrying its batch dimension first (``batched[i]``
says which); ``out_batched`` says which outputs carry it (a bool, or a tuple for several
outputs). Rules call ember ops (through dispatch), so the batched computation is itself seen by
the levels below: autograd, forward mode, an outer vmap.

Families: elementwise (broadcasting), reductions and scans (dims shift by one), views and joins
(dims shift, shapes gain the batch size), indexing (gather-like ops shift their dim), linalg
(matmul, linear, einsum). ``FALLBACK`` loops over the batch for an op without a rule and says so
once per op.
"""
import inspect
import warnings

from .. import _dispatch as D
from .._dispatch import dispatch, REGISTRY

Tensor = None  # bound below (ember.ops imports this module last)


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


def _first_only(rule):
    """A rule valid when only the first tensor input is batched (others fall back to the loop)."""
    def r(op, vals, bd, params, size):
        if any(bd[1:]):
            return fallback_rule(op, vals, bd, params, size)
        return rule(op, vals, bd, params, size)
    return r


def view_rule(op, vals, bd, params, size):
    x = vals[0]
    shape = (size,) + tuple(params["shape"])
    try:
        return dispatch(op, (x,), {"shape": shape}), True
    except RuntimeError:
        return dispatch(REGISTRY["_unsafe_view"], (x,), {"shape": shape}), True


def permute_rule(op, vals, bd, params, size):
    return dispatch(op, (vals[0],), {"dims": (0,) + tuple(d + 1 for d in params["dims"])}), True


def expand_rule(op, vals, bd, params, size):
    shape = tuple(params["shape"])
    x = _pad_to(vals[0], len(shape))
    return dispatch(op, (x,), {"shape": (size,) + shape}), True


def repeat_rule(op, vals, bd, params, size):
    reps = tuple(params["repeats"])
    x = _pad_to(vals[0], len(reps))
    return dispatch(op, (x,), {"repeats": (1,) + reps}), True


def cat_rule(op, vals, bd, params, size):
    if op.name == "cat":  # legacy: 1-d empty tensors are skipped by cat
        keep = [(v, b) for v, b in zip(vals, bd) if tuple(v.shape[1 if b else 0:]) != (0,)]
        if keep and len(keep) < len(vals):
            vals, bd = [k[0] for k in keep], [k[1] for k in keep]
    return dim_shift_rule(op, vals, bd, params, size)


def _flat_batch_index(a, idx, dim, size):
    """(a viewed as (B*n, rest...) with dim moved first, idx shifted per sample and flattened)."""
    from .._creation import arange
    am = a.movedim(dim + 1, 1)
    n = am.shape[1]
    rest = tuple(am.shape[2:])
    offs = (arange(size, dtype=idx.dtype) * n).reshape((size,) + (1,) * (idx.dim() - 1))
    return am.reshape((size * n,) + rest), (idx + offs).reshape(-1), n, rest


def index_select_rule(op, vals, bd, params, size):
    a, idx = vals
    ba, bi = bd
    n = _ln(a, ba)
    dim = params["dim"] % max(n, 1)
    if not bi:
        return dispatch(op, (a, idx), {"dim": dim + 1}), True
    if not ba:
        a = _materialize(a, size)
    flat, gidx, _, rest = _flat_batch_index(a, idx, dim, size)
    r = dispatch(op, (flat, gidx), {"dim": 0})
    k = idx.shape[1] if idx.dim() > 1 else 1
    return r.reshape((size, k) + rest).movedim(1, dim + 1), True


def index_add_rule(op, vals, bd, params, size):
    a, idx, src = vals
    ba, bi, bs = bd
    n = _ln(a, ba)
    dim = params["dim"] % max(n, 1)
    if not ba:
        a = _materialize(a, size)
    if not bi:
        if not bs:
            src = _materialize(src, size)
        return dispatch(op, (a, idx, src), dict(params, dim=dim + 1)), True
    if not bs:
        src = _materialize(src, size)
    flat, gidx, nn_, rest = _flat_batch_index(a, idx, dim, size)
    sm = src.movedim(dim + 1, 1)
    sm = sm.reshape((-1,) + tuple(sm.shape[2:]))
    r = dispatch(op, (flat, gidx, sm), dict(params, dim=0))
    return r.reshape((size, nn_) + rest).movedim(1, dim + 1), True


def masked_fill_rule(op, vals, bd, params, size):
    vals = list(vals)
    bd = list(bd)
    if not bd[0] and any(bd[1:]):
        n = max(_ln(v, b) for v, b in zip(vals, bd) if isinstance(v, D.Tensor))
        a = vals[0]
        a = a.reshape((1,) * (n - a.dim()) + tuple(a.shape)) if a.dim() < n else a
        vals[0] = _materialize(a, size)
        bd[0] = True
    return elementwise_rule(op, vals, bd, params, size)


def index_rule(op, vals, bd, params, size):
    """x[spec] with x batched: a leading full slice; when the advanced indices are split by a
    slice NumPy puts their dims first, so the batch dim is moved back to the front."""
    if any(bd[1:]):
        return fallback_rule(op, vals, bd, params, size)
    import numpy as np
    spec = params["spec"]
    items = spec if isinstance(spec, tuple) else (spec,)
    adv = [i for i, s in enumerate(items) if isinstance(s, (np.ndarray, list))]
    r = dispatch(op, (vals[0],), dict(params, spec=(slice(None),) + items))
    if adv and adv != list(range(adv[0], adv[0] + len(adv))):
        shapes = [np.shape(items[i]) if getattr(items[i], "dtype", None) != bool else
                  (int(np.count_nonzero(items[i])),) for i in adv]
        nd = len(np.broadcast_shapes(*shapes))
        r = r.movedim(nd, 0)
    return r, True


def matmul_rule(op, vals, bd, params, size):
    a, b = vals
    ba, bb = bd
    la, lb = _ln(a, ba), _ln(b, bb)
    if la == 0 or lb == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    if la == 1:
        a = a.unsqueeze(-2)
    if lb == 1:
        b = b.unsqueeze(-1)
    n = max(max(la, 2), max(lb, 2))
    if ba and not bb and lb <= 2:
        # one GEMM: the batch (and a's other leading dims) fold into a's rows
        s = tuple(a.shape)
        r = dispatch(op, (a.reshape(_prod(s[:-1]), s[-1]), b), params)
        r = r.reshape(s[:-1] + (r.shape[-1],))
    else:
        if ba:
            a = _pad_to(a, n)
        if bb:
            b = _pad_to(b, n)
        if a.shape[-1] == 1:  # outer products (per-sample weight gradients): a broadcast multiply
            r = dispatch(REGISTRY["mul"], (a, b))
        else:
            r = dispatch(op, (a, b), params)
    if la == 1:
        r = r.squeeze(-2)
    if lb == 1:
        r = r.squeeze(-1)
    return r, True


def linear_rule(op, vals, bd, params, size):
    x, w = vals[0], vals[1]
    bias = vals[2] if len(vals) > 2 else None
    bx, bw = bd[0], bd[1]
    bb = bd[2] if len(bd) > 2 else False
    if not bw and not bb:
        if bx:  # one GEMM over the batch and the leading dims
            s = tuple(x.shape)
            r = dispatch(op, (x.reshape(_prod(s[:-1]), s[-1]),) + tuple(vals[1:]), params)
            return r.reshape(s[:-1] + (r.shape[-1],)), True
    if bw and not bx and w.dim() == 3:
        # the same input to every member (ensembles): one GEMM against all members' rows stacked
        out_f = w.shape[1]
        bf = None
        if bias is not None:
            bf = bias.reshape(-1) if bb else bias.repeat(size)
        r = dispatch(op, (x, w.reshape(size * out_f, w.shape[2])) + ((bf,) if bf is not None else ()), params)
        r = r.reshape(tuple(r.shape[:-1]) + (size, out_f))
        return r.movedim(-2, 0).contiguous(), True  # later GEMMs want each member's rows contiguous
    # batched weight and input: x @ w^T (+ b) through the matmul rule
    wt = w.transpose(-1, -2)
    if bx or bw:
        r, _ = matmul_rule(REGISTRY["matmul"], (x, wt), (bx, bw), {}, size)
    else:
        r = dispatch(REGISTRY["matmul"], (x, wt))
    if bias is not None:
        r, _ = elementwise_rule(REGISTRY["add"], (r, bias), (bx or bw, bb), {}, size)
    return r, True


def einsum_rule(op, vals, bd, params, size):
    eq = params["eq"].replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if not arrow:
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    used = set(eq)
    z = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in used)
    ins = [(z + s if b else s) for s, b in zip(ins, bd)]
    return dispatch(op, tuple(vals), dict(params, eq=",".join(ins) + "->" + z + rhs)), True


# ----------------------------------------------------------------------------- the fallback

_reported = set()
fallback_counts = {}  # op name -> times the loop ran (tests check that hot ops never get here)


def fallback_rule(op, vals, bd, params, size):
    """Run the op once per batch element and stack the results (reported once per op)."""
    fallback_counts[op.name] = fallback_counts.get(op.name, 0) + 1
    if op.name not in _reported:
        _reported.add(op.name)
        from ..func._vmap import _user_line
        warnings.warn(f"vmap: there is no batching rule for {op.name} with these inputs; it runs as a "
                      f"Python loop over the batch (reported once per op). At {_user_line()}",
                      RuntimeWarning, stacklevel=2)
    from .shape import stack
    outs = []
    for i in range(size):
        a = tuple(v.select(0, i) if b else v for v, b in zip(vals, bd))
        outs.append(dispatch(op, a, params))
    if op.nout == 1:
        return stack(outs), True
    return tuple(stack([o[k] for o in outs]) for k in range(op.nout)), (True,) * op.nout


def _loop_note(what):
    fallback_counts[what] = fallback_counts.get(what, 0) + 1
    if what not in _reported:
        _reported.add(what)
        warnings.warn(f"vmap: {what} runs as a Python loop over the batch (reported once)", RuntimeWarning,
                      stacklevel=5)


def batched_index(x, idx, value=None, setitem=False):
    """x[idx] (or x[idx] = value) when an index tensor is batched by vmap. A single integer index
    tensor becomes index_select (which has a batching rule); anything else loops over the batch."""
    items = idx if isinstance(idx, tuple) else (idx,)
    lvl = None
    for it in items:
        w = it._wr if isinstance(it, D.Tensor) else None
        if w is not None and (lvl is None or w.index > lvl.index):
            lvl = w
    if getattr(lvl, "kind", None) != "vmap":
        items = tuple(D.unwrap_at(it, lvl) for it in items)
        if setitem:
            x[items] = value
            return None
        return x[items]
    if all(isinstance(it, D.Tensor) and it.dtype.category == 1 for it in items):  # integer tensors
        # integer index tensors on the leading dims: one advanced index with a batch arange in front
        from .._creation import arange
        size = lvl.size
        n = max(it.dim() for it in items)
        ar = arange(size).reshape((size,) + (1,) * n)
        phys = tuple(it._val if it._wr is lvl else it for it in items)
        xb = isinstance(x, D.Tensor) and x._wr is lvl
        if not setitem:
            xv = x._val if xb else _materialize(x, size)
            return lvl.wrap(xv[(ar,) + phys])
        if not xb:
            raise RuntimeError("vmap: in-place indexing (x[idx] = v) with a batched index needs x to be "
                               "batched too; use the out-of-place index_put")
        if isinstance(value, D.Tensor) and value._wr is lvl:
            value = _pad_to(value._val, n + x.dim() - len(items))
        x._val[(ar,) + phys] = value
        x._bump("index_put_")
        return None
    _loop_note("indexing with batched index tensors")
    from .shape import stack
    size = lvl.size
    xb = x._wr is lvl
    if setitem and not xb:
        raise RuntimeError("vmap: in-place indexing (x[idx] = v) with a batched index needs x to be batched "
                           "too; use the out-of-place index_put")
    xv = x._val if xb else x
    vb = isinstance(value, D.Tensor) and value._wr is lvl
    outs = []
    for b in range(size):
        xi = xv.select(0, b) if xb else x
        ii = tuple(it._val.select(0, b) if isinstance(it, D.Tensor) and it._wr is lvl else it for it in items)
        if setitem:
            xi[ii] = value._val.select(0, b) if vb else value
        else:
            outs.append(xi[ii])
    if setitem:
        x._bump("index_put_")
        return None
    shapes = {tuple(o.shape) for o in outs}
    if len(shapes) > 1:
        raise RuntimeError(f"vmap: indexing with a batched boolean mask gives results of different shapes "
                           f"{sorted(shapes)} across the batch (data-dependent shape); use ember.where or "
                           f"masked_fill instead")
    return lvl.wrap(stack(outs))


def copy_like_rule(op, vals, bd, params, size):
    """copy/fill_tensor: the destination takes the batch when the source has it."""
    vals, bd = list(vals), list(bd)
    if not bd[0] and any(bd[1:]):
        vals[0] = _materialize(vals[0], size)
        bd[0] = True
    return elementwise_rule(op, vals, bd, params, size)


def nonzero_rule(op, vals, bd, params, size):
    raise RuntimeError(f"vmap: {op.name} has an output whose shape depends on the data, so it cannot be "
                       f"batched (use a masked computation instead)")


FAMILY = {
    "elementwise": elementwise_rule,
    "reduction": reduction_rule,
    "scan": reduction_rule,
}

PER_OP = {
    "view": view_rule, "_unsafe_view": view_rule, "permute": permute_rule, "expand": expand_rule,
    "squeeze": dim_shift_rule, "unsqueeze": dim_shift_rule, "select": dim_shift_rule,
    "select_backward": dim_shift_rule, "slice": dim_shift_rule, "slice_backward": dim_shift_rule,
    "diagonal": dim_shift_rule, "diagonal_backward": dim_shift_rule,
    "cat": cat_rule, "stack": cat_rule, "repeat": repeat_rule, "flip": dim_shift_rule,
    "roll": dim_shift_rule, "tril": elementwise_rule, "triu": elementwise_rule,
    "index": index_rule, "gather": dim_shift_rule, "scatter": dim_shift_rule,
    "scatter_add": dim_shift_rule, "index_select": index_select_rule,
    "index_add": index_add_rule, "masked_fill": masked_fill_rule, "copy": copy_like_rule, "fill_tensor": copy_like_rule, "sort": dim_shift_rule, "topk": dim_shift_rule,
    "nonzero": nonzero_rule,
    "matmul": matmul_rule, "linear": linear_rule, "einsum": einsum_rule,
}


def install():
    for name, op in REGISTRY.items():
        if op.batch is None:
            rule = PER_OP.get(name) or FAMILY.get(op.family)
            if rule is not None:
                op.batch = rule


def rule_for(op):
    r = op.batch
    if r is None:
        r = PER_OP.get(op.name) or FAMILY.get(op.family)
        if r is not None:
            op.batch = r
    return r
