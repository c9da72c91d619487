"""Losses: nll_loss, cross_entropy and the fused pointwise losses (mse, bce, smooth_l1, huber).

``cross_entropy`` on 2-d logits with class-index targets (the training hot path) runs as one
fused primitive whose backward is a second primitive, ``cross_entropy_backward``; that one's
vjp is written in ember ops, so double backward (hessians, create_graph) works. Under an active
transform (vmap, forward mode) the same loss is composed from log_softmax and gather, whose
rules the transforms already know. nll_loss on (N, C) input and the pointwise losses without
weights are primitives too (PyTorch's node names, one pass); weighted variants are composed from
ember ops.
"""

import numpy as np

from .. import _parallel as _P
from .. import _dispatch as D
from .._dispatch import defop, dispatch
from . import reduce as _R
from . import indexing as _I
from . import elementwise as _E
from . import _util as U


def _long_check(op, target):
    if target.dtype.name not in ("int64", "int32", "int16", "int8", "uint8"):
        raise RuntimeError(f"{op}: expected target of integer dtype (class indices) or of the input's "
                           f"floating dtype (class probabilities), got {target.dtype}")


def _check_index_target(op, input, target, ignore_index, values=True):
    _long_check(op, target)
    if input.dim() == 0:
        raise ValueError(f"{op}: input tensor should be 1D or 2D (or N-d with class dim 1), got a 0-d tensor")
    if input.dim() == 1:
        if target.dim() != 0:
            raise ValueError(f"{op}: Expected a 0-d target for a 1-d input (one sample), got target of "
                             f"shape {list(target.shape)}")
        C = input.shape[0]
    else:
        if target.dim() == 0 or target.shape[0] != input.shape[0]:
            raise ValueError(f"{op}: Expected input batch_size ({input.shape[0]}) to match target batch_size "
                             f"({target.shape[0] if target.dim() else 0}).")
        if tuple(target.shape[1:]) != tuple(input.shape[2:]):
            raise RuntimeError(f"{op}: expected target of shape {[input.shape[0]] + list(input.shape[2:])}, "
                               f"got {list(target.shape)}")
        C = input.shape[1]
    if values and not D.state.levels and not target._meta:
        t = target._data
        if t.size and (t.min() < 0 or t.max() >= C):
            bad = (t != ignore_index) & ((t < 0) | (t >= C))
            if bad.any():
                raise IndexError(f"{op}: Target {int(t[bad].reshape(-1)[0])} is out of bounds (classes "
                                 f"0..{C - 1}).")
    return C


def _weight_check(op, weight, C):
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != C):
        raise RuntimeError(f"{op}: weight tensor should be defined either for all {C} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """-input[target] per sample (weighted), composed from gather so every transform applies."""
    C = _check_index_target("nll_loss", input, target, ignore_index)
    _weight_check("nll_loss", weight, C)
    if input.is_complex():
        U.no_complex("nll_loss_out_frame", input)
    if not input.is_floating_point():
        raise RuntimeError(f"nll_loss: not implemented for {input.dtype} input (log-probabilities of a "
                           f"floating point dtype are expected)")
    cdim = 0 if input.dim() == 1 else 1
    if input.dim() == 2 and weight is None and not input._meta:
        # (N, C) without weights, the usual case: one primitive, PyTorch's NllLossBackward0
        return dispatch(nll_loss_op, (input, target), {"ignore_index": ignore_index, "reduction": reduction})
    valid = target != ignore_index
    safe = _E.where(valid, target, 0).long()
    picked = _I.gather(input, cdim, safe.unsqueeze(cdim)).squeeze(cdim)
    wv = valid.to(input.dtype)
    if weight is not None:
        wv = wv * _I.index_select(weight, 0, safe.reshape(-1)).reshape(safe.shape)
    loss = -picked * wv
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wv.sum()


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.dim() == 0:
        raise ValueError("cross_entropy: input tensor should be 1D or 2D (or N-d with class dim 1)")
    if input.is_complex():
        if target.is_complex():
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{U.torch_scalar_name(target)}")
        U.no_complex("log_softmax_lastdim_kernel_impl", input)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"cross_entropy: expected a floating point input (logits), got {input.dtype}")
    cdim = 0 if input.dim() == 1 else 1
    C = input.shape[cdim]
    if target.is_floating_point():
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing, cdim, C)
    if (input.dim() == 2 and weight is None and label_smoothing == 0.0
            and input.is_floating_point() and not input._meta):
        _check_index_target("cross_entropy", input, target, ignore_index, values=False)  # values: in impl
        return D.dispatch_keeping(cross_entropy_op, (input, target),
                                  {"ignore_index": ignore_index, "reduction": reduction})
    logp = _R.log_softmax(input, cdim)
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return nll
    # the smoothing term: -sum_c w_c logp_c per sample, over the same samples and normaliser
    valid = target != ignore_index
    if weight is not None:
        shape = [1] * input.dim()
        shape[cdim] = C
        smooth = -(logp * weight.reshape(shape)).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    smooth = smooth * valid.to(input.dtype)
    if reduction == "none":
        pass
    elif reduction == "sum":
        smooth = smooth.sum()
    else:
        if weight is not None:
            safe = _E.where(valid, target, 0).long()
            denom = (_I.index_select(weight, 0, safe.reshape(-1)).reshape(safe.shape)
                     * valid.to(input.dtype)).sum()
        else:
            denom = valid.sum().to(input.dtype)
        smooth = smooth.sum() / denom
    return (1 - label_smoothing) * nll + (label_smoothing / C) * smooth


def _cross_entropy_probs(input, target, weight, reduction, ls, cdim, C):
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"cross_entropy: expected target of the input's shape {list(input.shape)} for "
                           f"class probabilities, got {list(target.shape)}")
    _weight_check("cross_entropy", weight, C)
    logp = _R.log_softmax(input, cdim)
    if ls > 0.0:
        target = target * (1 - ls) + ls / C
    prod = logp * target
    if weight is not None:
        shape = [1] * input.dim()
        shape[cdim] = C
        prod = prod * weight.reshape(shape)
    loss = -prod.sum(cdim)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    n = input.numel() // C if input.numel() else 0
    return loss.sum() / n


# ----------------------------------------------------------------------------- fused primitive


def _softmax_rows(xp, x):
    m = x.max(axis=1, keepdims=True)
    e = xp.exp(x - m)
    e /= e.sum(axis=1, keepdims=True)
    return e


def _all_valid(t, ign):
    """No target equals ignore_index (one reduction in the usual case of a negative ignore_index)."""
    if t.size == 0:
        return True
    if ign < 0:
        return bool(t.min() > ign)
    return not bool((t == ign).any())


def _check_targets(t, C, ign):
    """Whether every target is a class (no ignored ones); IndexError for out-of-range targets.
    The usual case (no target below 0, ignore_index negative) costs one reduction: targets >= C
    are caught by the indexing itself (see _picked)."""
    if t.size == 0 or (ign < 0 and t.min() >= 0):
        return True
    valid = t != ign
    bad = valid & ((t < 0) | (t >= C))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")
    return bool(valid.all())


def _picked(xp, s, t):
    try:
        return s[xp.arange(s.shape[0]), t]
    except IndexError:
        raise IndexError(f"Target {int(t.max())} is out of bounds.") from None


def _ce_impl(xp, x, t, ignore_index=-100, reduction="mean"):
    n = x.shape[0]
    m = x.max(axis=1, keepdims=True)
    e = xp.subtract(x, m)
    if e.dtype.kind == "f":
        xp.exp(e, out=e)
    else:
        e = xp.exp(e)
    se = e.sum(axis=1)
    D.keep((e, se))  # (for the fused backward: no second exp pass)
    lse = xp.log(se)
    if _check_targets(t, x.shape[1], ignore_index):
        picked = _picked(xp, x, t) - m[:, 0]   # (the entries of x - max, rounded as they were)
        if reduction == "none":
            lse -= picked
            return lse
        total = lse.sum() - picked.sum()
        return xp.asarray(total if reduction == "sum" else total / x.dtype.type(n) if n else np.nan,
                          dtype=x.dtype)
    valid = t != ignore_index
    rows = xp.arange(n)
    loss = lse - (x[rows, xp.where(valid, t, 0)] - m[:, 0])
    loss *= valid
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    cnt = int(valid.sum())
    return xp.asarray(total / x.dtype.type(cnt) if cnt else x.dtype.type(np.nan), dtype=x.dtype)


cross_entropy_op = defop("cross_entropy", _ce_impl, save=("inputs",), node_name="NllLossBackward0")


@cross_entropy_op.def_vjp
def _(ctx, g):
    x, t = ctx.inputs
    # the forward's buffers (set by cross_entropy()), used once and in place: grad mode off only
    # (the backward op records no node that would read them)
    kept = ctx.__dict__.pop("_kept", None) if not D.grad_mode.enabled and D.state.simple else None
    return dispatch(cross_entropy_backward_op, (g, x, t) + (kept or ()), ctx.params), None


def _ce_backward_impl(xp, g, x, t, e=None, se=None, ignore_index=-100, reduction="mean"):
    """g * d(loss)/dx = scale * (softmax(x) - onehot(t)) per row, masked where t == ignore_index.
    e, se: the forward's exp(x - max) and its row sums, when kept (overwritten with the result)."""
    n = x.shape[0]
    if e is None or e.shape != x.shape or e.dtype != x.dtype:
        e = xp.subtract(x, x.max(axis=1, keepdims=True))
        if e.dtype.kind == "f":
            xp.exp(e, out=e)
        else:
            e = xp.exp(e)
        se = None
    rows = xp.arange(n)
    if _all_valid(t, ignore_index):
        ssum = e.sum(axis=1, keepdims=True) if se is None else se[:, None]
        if reduction == "none":
            scale = g.astype(x.dtype, copy=False)[:, None]
            e *= scale / ssum
            e[rows, t] -= scale[:, 0]
            return e
        scale = x.dtype.type(g / n if reduction == "mean" else g)
        e *= scale / ssum
        e[rows, t] -= scale
        return e
    valid = t != ignore_index
    e /= e.sum(axis=1, keepdims=True)
    e[rows, xp.where(valid, t, 0)] -= 1
    sc = g * valid
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            sc = sc / valid.sum()
    e *= sc[:, None].astype(x.dtype, copy=False)
    return e


cross_entropy_backward_op = defop("cross_entropy_backward", _ce_backward_impl, save=("inputs",),
                                  node_name="NllLossBackwardBackward0")


@cross_entropy_backward_op.def_vjp
def _(ctx, gg):
    g, x, t = ctx.inputs
    p_ = ctx.params
    ign, red = p_["ignore_index"], p_["reduction"]
    valid = (t != ign)
    vf = valid.to(x.dtype)
    p = _R.softmax(x, 1)
    gg_g = gg_x = None
    if ctx.needs[1]:
        if red == "none":
            scale = (g * vf).unsqueeze(1)
        elif red == "sum":
            scale = (g * vf).unsqueeze(1)
        else:
            scale = (g * vf / vf.sum()).unsqueeze(1)
        gg_x = scale * p * (gg - (gg * p).sum(1, keepdim=True))
    if ctx.needs[0]:
        onehot = D._new_tensor(_onehot(x.shape, _E.where(valid, t, 0)._data, x._data.dtype))
        per_row = (gg * (p - onehot)).sum(1) * vf
        if red == "none":
            gg_g = per_row
        elif red == "sum":
            gg_g = per_row.sum()
        else:
            gg_g = per_row.sum() / vf.sum()
    return gg_g, gg_x, None


def _nll_impl(xp, x, t, ignore_index=-100, reduction="mean"):
    n = x.shape[0]
    if _check_targets(t, x.shape[1], ignore_index):
        loss = _picked(xp, x, t)
        cnt = n
    else:
        valid = t != ignore_index
        loss = xp.where(valid, x[xp.arange(n), xp.where(valid, t, 0)], 0)
        cnt = int(valid.sum())
    if reduction == "none":
        return -loss
    total = -loss.sum()
    if reduction == "sum":
        return xp.asarray(total, dtype=x.dtype)
    return xp.asarray(total / x.dtype.type(cnt) if cnt else np.nan, dtype=x.dtype)


# nll_loss on (N, C) input: -x[i, t_i], reduced; rules in ember ops (double backward, forward mode)
nll_loss_op = defop("nll_loss", _nll_impl, save=("inputs",))


def _nll_coef(x, t, g, p_):
    """The per-row factor of d loss / d x[i, t_i] (0 on ignored rows) and the safe class indices."""
    valid = t != p_["ignore_index"]
    vf = valid.to(x.dtype)
    coef = -(g * vf)
    if p_["reduction"] == "mean":
        coef = coef / vf.sum()
    return coef, _E.where(valid, t, 0).unsqueeze(1)


@nll_loss_op.def_vjp
def _(ctx, g):
    x, t = ctx.inputs
    coef, idx = _nll_coef(x, t, g, ctx.params)
    from .._creation import zeros
    return zeros(x.shape, dtype=x.dtype).scatter(1, idx, coef.unsqueeze(1)), None


@nll_loss_op.def_jvp
def _(ctx, tx, tt=None):
    x, t = ctx.inputs
    p_ = ctx.params
    vf = _valid_f(t, p_["ignore_index"], x.dtype)
    r = -(_I.gather(tx, 1, _E.where(t != p_["ignore_index"], t, 0).unsqueeze(1)).squeeze(1) * vf)
    return _ce_reduce(r, vf, p_["reduction"])


def _onehot(shape, t, dtype):
    oh = np.zeros(shape, dtype)
    oh[np.arange(shape[0]), t] = 1
    return oh





def _valid_f(t, ign, dtype):
    return (t != ign).to(dtype)


def _ce_reduce(r, vf, red):
    if red == "none":
        return r
    if red == "sum":
        return r.sum()
    return r.sum() / vf.sum()


@cross_entropy_op.def_jvp
def _(ctx, tx, tt=None):
    x, t = ctx.inputs
    p_ = ctx.params
    vf = _valid_f(t, p_["ignore_index"], x.dtype)
    onehot = D._new_tensor(_onehot(x.shape, _E.where(t != p_["ignore_index"], t, 0)._data, x._data.dtype))
    r = ((_R.softmax(x, 1) - onehot) * tx).sum(1) * vf
    return _ce_reduce(r, vf, p_["reduction"])


@cross_entropy_backward_op.def_jvp
def _(ctx, tg, tx, tt=None):
    g, x, t = ctx.inputs
    p_ = ctx.params
    red = p_["reduction"]
    vf = _valid_f(t, p_["ignore_index"], x.dtype)
    denom = vf.sum() if red == "mean" else None
    p = _R.softmax(x, 1)
    out = None
    if tg is not None:
        s = tg * vf if denom is None else tg * vf / denom
        onehot = D._new_tensor(_onehot(x.shape, _E.where(t != p_["ignore_index"], t, 0)._data, x._data.dtype))
        out = s.unsqueeze(1) * (p - onehot)
    if tx is not None:
        s = g * vf if denom is None else g * vf / denom
        d = s.unsqueeze(1) * p * (tx - (tx * p).sum(1, keepdim=True))
        out = d if out is None else out + d
    return out


def _batched_rows(vals, bd, size):
    """x (B, N, C) and t (B, N) with the batch made explicit, flattened to B*N rows."""
    from ._batching import _materialize
    x, t = vals[-2], vals[-1]
    bx, bt = bd[-2], bd[-1]
    if not bx:
        x = _materialize(x, size)
    if not bt:
        t = _materialize(t, size)
    B, N, C = x.shape
    return x.reshape(B * N, C), t.reshape(B * N), B, N


@cross_entropy_op.def_batch
def _(op, vals, bd, params, size):
    """vmap: the per-row losses of all examples at once, then each example's reduction."""
    x2, t2, B, N = _batched_rows(vals, bd, size)
    ign, red = params["ignore_index"], params["reduction"]
    rows = dispatch(op, (x2, t2), {"ignore_index": ign, "reduction": "none"}).reshape(B, N)
    if red == "none":
        return rows, True
    if red == "sum":
        return rows.sum(1), True
    return rows.sum(1) / (t2.reshape(B, N) != ign).sum(1).to(rows.dtype), True


nll_loss_op.batch = cross_entropy_op.batch  # the same per-row losses, then each example's reduction


@cross_entropy_backward_op.def_batch
def _(op, vals, bd, params, size):
    from ._batching import _materialize
    x2, t2, B, N = _batched_rows(vals, bd, size)
    g = vals[0] if bd[0] else _materialize(vals[0], size)
    ign, red = params["ignore_index"], params["reduction"]
    if red == "none":
        g2 = g.reshape(B * N)
    else:
        if red == "mean":
            g = g / (t2.reshape(B, N) != ign).sum(1).to(g.dtype)
        g2 = g.unsqueeze(1).expand(B, N).reshape(B * N)
    out = dispatch(op, (g2, x2, t2), {"ignore_index": ign, "reduction": "none"})
    return out.reshape(B, N, x2.shape[1]), True


# ----------------------------------------------------------------------------- pointwise losses
# mse_loss, binary_cross_entropy(_with_logits), smooth_l1_loss, huber_loss: one primitive each
# (PyTorch's MseLossBackward0, BinaryCrossEntropyBackward0, ...; one pass instead of several ops); their rules are written in
# ember ops, so double backward, forward mode and vmap compose.


def _reduce_arr(xp, r, reduction):
    if reduction == "none":
        return r
    return xp.sum(r) if reduction == "sum" else xp.mean(r)


def _reduce_t(r, reduction):
    return r if reduction == "none" else r.sum() if reduction == "sum" else r.mean()


def _grad_scale(ctx, g, x):
    """The output gradient as each element's factor: g / numel for the mean."""
    return g / x.numel() if ctx.params.get("reduction", "mean") == "mean" and x.numel() else g


def _pointwise_loss_batch(op, vals, bd, params, size):
    """vmap: the elementwise losses of all examples at once, then each example's reduction."""
    from ._batching import elementwise_rule
    r, _ = elementwise_rule(op, vals, bd, dict(params, reduction="none"), size)
    red = params.get("reduction", "mean")
    dims = tuple(range(1, r.dim()))
    if red == "none" or not dims:
        return r, True
    return (r.sum(dims) if red == "sum" else r.mean(dims)), True


def _mse_impl(xp, a, b, reduction="mean"):
    d = a - b
    return _reduce_arr(xp, d * d, reduction)


mse_loss_op = defop("mse_loss", _mse_impl, save=("inputs",), bcast=True)
mse_loss_op.batch = _pointwise_loss_batch


@mse_loss_op.def_vjp
def _(ctx, g):
    a, b = ctx.inputs
    d = a - b
    if ctx.params.get("reduction", "mean") == "mean" and d.numel():
        d = d * (2.0 / d.numel())
    else:
        d = d * 2.0
    gd = d * g
    n = ctx.needs
    return (gd if n[0] else None), (-gd if n[1] else None)


@mse_loss_op.def_jvp
def _(ctx, ta, tb):
    a, b = ctx.inputs
    t = ta if tb is None else (-tb if ta is None else ta - tb)
    return _reduce_t((a - b) * 2.0 * t, ctx.params.get("reduction", "mean"))


def _bce_logs(xp, x):
    # log is clamped at -100 as PyTorch does, so that log(0) gives a finite loss
    with np.errstate(divide="ignore"):
        return xp.maximum(xp.log(x), -100), xp.maximum(xp.log1p(-x), -100)


def _bce_impl(xp, x, t, reduction="mean"):
    lp, l1p = _bce_logs(xp, x)
    return _reduce_arr(xp, (t - 1) * l1p - t * lp, reduction)


binary_cross_entropy_op = defop("binary_cross_entropy", _bce_impl, save=("inputs",))
binary_cross_entropy_op.batch = _pointwise_loss_batch


def _bce_target_grad(x):
    with np.errstate(divide="ignore"):
        return (-x).log1p().clamp_min(-100.0) - x.log().clamp_min(-100.0)


@binary_cross_entropy_op.def_vjp
def _(ctx, g):
    x, t = ctx.inputs
    gs = _grad_scale(ctx, g, x)
    n = ctx.needs
    gx = (x - t) / ((1 - x) * x).clamp_min(1e-12) * gs if n[0] else None
    gt = _bce_target_grad(x) * gs if n[1] else None
    return gx, gt


@binary_cross_entropy_op.def_jvp
def _(ctx, tx, tt):
    x, t = ctx.inputs
    r = None if tx is None else (x - t) / ((1 - x) * x).clamp_min(1e-12) * tx
    if tt is not None:
        d = _bce_target_grad(x) * tt
        r = d if r is None else r + d
    return _reduce_t(r, ctx.params.get("reduction", "mean"))


def _bce_logits_impl(xp, x, t, reduction="mean"):
    # (1 - t) x + log(1 + exp(-x)), the softplus computed stably
    return _reduce_arr(xp, (1 - t) * x + xp.maximum(-x, 0) + xp.log1p(xp.exp(-xp.abs(x))), reduction)


binary_cross_entropy_with_logits_op = defop("binary_cross_entropy_with_logits", _bce_logits_impl, save=("inputs",))
binary_cross_entropy_with_logits_op.batch = _pointwise_loss_batch


@binary_cross_entropy_with_logits_op.def_vjp
def _(ctx, g):
    x, t = ctx.inputs
    gs = _grad_scale(ctx, g, x)
    n = ctx.needs
    return ((x.sigmoid() - t) * gs if n[0] else None), (-x * gs if n[1] else None)


@binary_cross_entropy_with_logits_op.def_jvp
def _(ctx, tx, tt):
    x, t = ctx.inputs
    r = None if tx is None else (x.sigmoid() - t) * tx
    if tt is not None:
        r = -x * tt if r is None else r - x * tt
    return _reduce_t(r, ctx.params.get("reduction", "mean"))


def _smooth_l1_impl(xp, a, b, reduction="mean", beta=1.0):
    if U.is_lowp(a):  # float32 inside, rounded once (PyTorch's opmath)
        return U.lowp_f32(_smooth_l1_impl, xp, a, b, reduction, beta)
    d = xp.abs(a - b)
    return _reduce_arr(xp, _P.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def _huber_impl(xp, a, b, reduction="mean", delta=1.0):
    if U.is_lowp(a):
        return U.lowp_f32(_huber_impl, xp, a, b, reduction, delta)
    d = xp.abs(a - b)
    return _reduce_arr(xp, _P.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


smooth_l1_loss_op = defop("smooth_l1_loss", _smooth_l1_impl, save=("inputs",), bcast=True)
huber_loss_op = defop("huber_loss", _huber_impl, save=("inputs",), bcast=True)


def _smooth_l1_slope(params, d):
    beta = params.get("beta", 1.0)
    return _E.where(d.abs() < beta, d / beta, d.sign())


def _huber_slope(params, d):
    delta = params.get("delta", 1.0)
    return _E.where(d.abs() < delta, d, d.sign() * delta)


for _op, _slope in ((smooth_l1_loss_op, _smooth_l1_slope), (huber_loss_op, _huber_slope)):
    def _vjp(ctx, g, _slope=_slope):
        a, b = ctx.inputs
        gd = _slope(ctx.params, a - b) * _grad_scale(ctx, g, a)
        n = ctx.needs
        return (gd if n[0] else None), (-gd if n[1] else None)

    def _jvp(ctx, ta, tb, _slope=_slope):
        a, b = ctx.inputs
        t = ta if tb is None else (-tb if ta is None else ta - tb)
        return _reduce_t(_slope(ctx.params, a - b) * t, ctx.params.get("reduction", "mean"))
    _op.vjp, _op.jvp, _op.batch = _vjp, _jvp, _pointwise_loss_batch
