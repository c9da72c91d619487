"""Attention: scaled_dot_product_attention as one primitive where no mask tensor or dropout takes part
(no mask, or the causal one), float32/float64. F.scaled_dot_product_attention composes the other
cases (a mask tensor, dropout, float16/bfloat16) from matmul, masked_fill and softmax.

The forward runs softmax(q k^T * scale, causal entries -inf) v on one buffer of scores (scaled,
masked, exponentiated and normalised in place) and hands the probabilities to the node; the fused
backward (grad mode off, no transform) reuses them:
    dv = P^T g,  dP = g v^T,  dS = P * (dP - rowsum(dP * P)) * scale,  dq = dS k,  dk = dS^T q
(masked entries have P = 0, so their dS is 0). Under create_graph, a transform or without the kept
probabilities, the same formulas run in ember ops on P recomputed from q and k (differentiable,
batchable); the forward-mode rule is written the same way.
"""
import numpy as np

from .. import _dispatch as D
from .. import _parallel as _P
from .._dispatch import defop, dispatch
from . import _util as U
from .shape import sum_to

_CAUSAL = {}               # (L, S) -> the read-only mask of the keys a query may not see (j > i)


def _causal_hidden(xp, L, S):
    m = _CAUSAL.get((L, S))
    if m is None:
        if len(_CAUSAL) > 32:
            _CAUSAL.clear()
        m = _CAUSAL[(L, S)] = xp.triu(xp.ones((L, S), bool), 1)
        m.flags.writeable = False
    return m


def _probs_impl(xp, q, k, scale, is_causal, out=None):
    s = xp.matmul(q, xp.swapaxes(k, -1, -2))
    s *= s.dtype.type(scale)
    if is_causal:
        xp.copyto(s, -np.inf, where=_causal_hidden(xp, s.shape[-2], s.shape[-1]))
    if s.shape[-1] == 0:
        return s if out is None else out
    return U.softmax_rows(xp, s, out)


# Each attention problem is a dozen NumPy calls; two threads running small ones hand the GIL back
# and forth at every call, which made (8, 4, 64, 32) twice as slow on two threads as on one
# (0.60 -> 1.40 ms forward, 1.17 -> 2.71 backward) while (8, 4, 128, 32) gained (2.38 -> 1.92,
# 5.49 -> 3.08): split from 2^25 multiply-adds of work.
_SPLIT_GRAIN = 1 << 24


def _split(q, k, v):
    """Whether the work splits over dim 0 (equal leading dims, plain arrays): each thread runs whole
    attention problems, OpenBLAS on one thread (split_gemms: the same result on any thread count)."""
    return (q.ndim >= 3 and q.shape[:-2] == k.shape[:-2] == v.shape[:-2] and q.shape[0] > 1
            and type(q) is type(k) is type(v) is np.ndarray)


def _sdpa_impl(xp, q, k, v, *, scale, is_causal):
    if not _split(q, k, v):
        p = _probs_impl(xp, q, k, scale, is_causal)
        D.keep(p)
        return xp.matmul(p, v)
    p = xp.empty(q.shape[:-1] + k.shape[-2:-1], q.dtype)
    out = xp.empty(q.shape[:-1] + v.shape[-1:], q.dtype)

    def run(lo, hi):
        xp.matmul(_probs_impl(xp, q[lo:hi], k[lo:hi], scale, is_causal, out=p[lo:hi]), v[lo:hi], out=out[lo:hi])
    _P.split_gemms(q.shape[0], run, p.size * (q.shape[-1] + v.shape[-1]), _SPLIT_GRAIN)
    D.keep(p)
    return out


def _sum_to_arr(a, shape):
    """a summed down to ``shape`` (the broadcast leading dims of q, k, v)."""
    if a.shape == shape:
        return a
    lead = a.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and a.shape[i + lead] != 1)
    return a.sum(dims, keepdims=True).reshape(shape) if dims else a.reshape(shape)


def _sdpa_bwd_impl(xp, g, q, k, v, p=None, *, scale, is_causal):
    """(dq, dk, dv) on raw arrays; p: the forward's probabilities when kept (overwritten)."""
    if p is None or p.dtype != q.dtype or p.shape != (np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
                                                      + (q.shape[-2], k.shape[-2])):
        p = None
    if _split(q, k, v) and g.shape[:-2] == q.shape[:-2] and type(g) is np.ndarray:
        dq, dk, dv = xp.empty(q.shape, q.dtype), xp.empty(k.shape, k.dtype), xp.empty(v.shape, v.dtype)

        def run(lo, hi):
            sl = slice(lo, hi)
            dq[sl], dk[sl], dv[sl] = _sdpa_grads(xp, g[sl], q[sl], k[sl], v[sl], None if p is None else p[sl],
                                                 scale, is_causal)
        _P.split_gemms(q.shape[0], run, 2 * g.size * k.shape[-2] + 2 * q.size * k.shape[-2], _SPLIT_GRAIN)
        return dq, dk, dv
    dq, dk, dv = _sdpa_grads(xp, g, q, k, v, p, scale, is_causal)
    return _sum_to_arr(dq, q.shape), _sum_to_arr(dk, k.shape), _sum_to_arr(dv, v.shape)


def _sdpa_grads(xp, g, q, k, v, p, scale, is_causal):
    if p is None:
        p = _probs_impl(xp, q, k, scale, is_causal)
    dv = xp.matmul(xp.swapaxes(p, -1, -2), g)
    ds = xp.matmul(g, xp.swapaxes(v, -1, -2))
    ds *= p
    p *= U.row_sums(xp, ds)
    ds -= p
    ds *= ds.dtype.type(scale)
    return xp.matmul(ds, k), xp.matmul(xp.swapaxes(ds, -1, -2), q), dv


def _node_name(args, params):
    """PyTorch's node: its CPU flash kernel's for 4-D operands with equal batch and head dims, else
    that of the math kernel's last op (the product, viewed back)."""
    q, k, v = (a._data.shape for a in args)
    if len(q) == len(k) == len(v) == 4 and q[:2] == k[:2] == v[:2] and v[3] == q[3]:
        return "ScaledDotProductFlashAttentionForCpuBackward0"
    return "MmBackward0" if len(q) == len(k) == len(v) == 2 else "UnsafeViewBackward0"


sdpa_op = defop("scaled_dot_product_attention", _sdpa_impl, save=("inputs",), family="nn",
                node_name=_node_name)
sdpa_bwd_op = defop("scaled_dot_product_attention_backward", _sdpa_bwd_impl, nout=3, family="nn",
                    differentiable=False)


@sdpa_bwd_op.def_batch
def _(op, vals, bd, params, size):
    """Every operand brought to the batch (each example's gradients differ even for an unbatched
    operand), padded to one rank; the gradients are viewed back to the operands' logical shapes."""
    from ._batching import _ln, _materialize, _pad_to
    vals, bd = list(vals), list(bd)
    if len(vals) == 5:  # (kept probabilities are the plain path's only)
        vals.pop(), bd.pop()
    n = max(_ln(v, b) for v, b in zip(vals, bd))
    full = [_pad_to(v if b else _materialize(v, size), n) for v, b in zip(vals, bd)]
    outs = dispatch(op, tuple(full), params)
    return tuple(o.reshape((size,) + tuple(v.shape[1:] if b else v.shape))
                 for o, v, b in zip(outs, vals[1:], bd[1:])), (True, True, True)


def _probs(q, k, params):
    """P in ember ops (differentiable in q and k)."""
    from .reduce import softmax
    from .indexing import masked_fill
    s = (q @ k.mT) * params["scale"]
    if params["is_causal"]:
        s = masked_fill(s, D._new_tensor(_causal_hidden(D.xp, s.shape[-2], s.shape[-1])), float("-inf"))
    return softmax(s, -1)


@sdpa_op.def_vjp
def _(ctx, g):
    q, k, v = ctx.inputs
    n = ctx.needs
    if not D.grad_mode.enabled and D.state.simple:
        kept = ctx.__dict__.pop("_kept", None)
        dq, dk, dv = dispatch(sdpa_bwd_op, (g, q, k, v) + ((kept,) if kept is not None else ()), ctx.params)
        return (dq if n[0] else None), (dk if n[1] else None), (dv if n[2] else None)
    p = _probs(q, k, ctx.params)
    dv = sum_to(p.mT @ g, v.shape) if n[2] else None
    dq = dk = None
    if n[0] or n[1]:
        dp = g @ v.mT
        ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * ctx.params["scale"]
        dq = sum_to(ds @ k, q.shape) if n[0] else None
        dk = sum_to(ds.mT @ q, k.shape) if n[1] else None
    return dq, dk, dv


@sdpa_op.def_jvp
def _(ctx, tq, tk, tv):
    q, k, v = ctx.inputs
    p = _probs(q, k, ctx.params)
    ds = None
    if tq is not None:
        ds = tq @ k.mT
    if tk is not None:
        s2 = q @ tk.mT
        ds = s2 if ds is None else ds + s2
    r = None
    if ds is not None:
        ds = ds * ctx.params["scale"]
        r = (p * (ds - (ds * p).sum(-1, keepdim=True))) @ v
    if tv is not None:
        r2 = p @ tv
        r = r2 if r is None else r + r2
    return r


@sdpa_op.def_batch
def _(op, vals, bd, params, size):
    """Leading dims broadcast as matmul's: batched operands get size-1 dims after the batch dim up to
    the highest logical rank, unbatched ones broadcast from the right."""
    from ._batching import _ln, _pad_to
    n = max(_ln(v, b) for v, b in zip(vals, bd))
    return dispatch(op, tuple(_pad_to(v, n) if b else v for v, b in zip(vals, bd)), params), True


def usable(q, k, v):
    """Whether the primitive serves these operands (F.scaled_dot_product_attention composes the rest)."""
    qd, kd, vd = q._data, k._data, v._data
    dt = qd.dtype
    if not (dt == np.float32 or dt == np.float64) or kd.dtype is not dt or vd.dtype is not dt:
        return False
    if qd.ndim < 2 or kd.ndim < 2 or vd.ndim < 2 or not (qd.size and kd.size and vd.size):
        return False
    if qd.shape[-1] != kd.shape[-1] or kd.shape[-2] != vd.shape[-2]:
        return False
    try:
        np.broadcast_shapes(qd.shape[:-2], kd.shape[:-2], vd.shape[:-2])
    except ValueError:
        return False
    return True


def scaled_dot_product_attention(q, k, v, scale, is_causal):
    return D.dispatch_keeping(sdpa_op, (q, k, v), {"scale": scale, "is_causal": is_causal})
