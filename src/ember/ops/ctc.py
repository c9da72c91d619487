"""Connectionist temporal classification loss (F.ctc_loss).

The forward (alpha) and backward (beta) recursions run in log space over time steps, each step
vectorised over the batch and the extended label sequence (blanks between the labels). The
primitive returns the per-sample negative log likelihood; its gradient is PyTorch's:
``exp(log_probs) - exp(log(sum of alpha*beta over the positions of class c) + nll - log_probs)``
for the time steps inside each input length (zero after), which is the gradient with respect to
the logits whose log_softmax gave ``log_probs`` (exact through a log_softmax, as in PyTorch; not
the partial derivative in the log_probs themselves). Like PyTorch's, that backward is not
differentiable again.
"""
import numpy as np

from .. import _dtype as dt
from .._dispatch import defop, dispatch
from . import _util as U
from .nn import NN, _bm

_NEG = -np.inf


def _ext_labels(targets, blank, L):
    N = targets.shape[0]
    lab = np.full((N, L), blank, np.int64)
    lab[:, 1::2] = targets[:, :(L - 1) // 2]
    return lab


def _lse3(a, b, c):
    m = np.maximum(np.maximum(a, b), c)
    ms = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.exp(a - ms) + np.exp(b - ms) + np.exp(c - ms)) + ms


def _alpha_beta(xp, lp, targets, il, tl, blank, want_beta):
    T, N, C = lp.shape
    S = targets.shape[1] if targets.ndim == 2 else 0
    L = 2 * S + 1
    lab = _ext_labels(targets, blank, L)                              # (N, L)
    n_idx = np.arange(N)[:, None]
    lpl = lp[:, n_idx, lab]                                          # (T, N, L): log p of each extended label
    s = np.arange(L)
    valid = s[None, :] < (2 * tl[:, None] + 1)                       # (N, L)
    skip = np.zeros((N, L), bool)                                    # s-2 -> s allowed
    skip[:, 2:] = (lab[:, 2:] != blank) & (lab[:, 2:] != lab[:, :-2])
    neg = np.full((N, L), _NEG, lp.dtype)
    alpha = np.full((T, N, L), _NEG, lp.dtype)
    if T:
        a0 = neg.copy()
        a0[:, 0] = lpl[0, :, 0]
        if L > 1:
            a0[:, 1] = np.where(tl > 0, lpl[0, :, 1], _NEG)
        alpha[0] = np.where(valid, a0, _NEG)
    for t in range(1, T):  # one step of the recursion for the whole batch
        a = alpha[t - 1]
        a1 = np.concatenate([neg[:, :1], a[:, :-1]], 1)
        a2 = np.where(skip, np.concatenate([neg[:, :2], a[:, :-2]], 1), _NEG)
        alpha[t] = np.where(valid, _lse3(a, a1, a2) + lpl[t], _NEG)
    last = np.clip(il - 1, 0, max(T - 1, 0))
    end = alpha[last, np.arange(N)] if T else np.full((N, L), _NEG, lp.dtype)  # (N, L) at t = il - 1
    e1 = end[np.arange(N), 2 * tl]
    e2 = np.where(tl > 0, end[np.arange(N), np.maximum(2 * tl - 1, 0)], _NEG)
    m = np.maximum(e1, e2)
    ms = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        nll = -(np.log(np.exp(e1 - ms) + np.exp(e2 - ms)) + ms)
    if not want_beta:
        return nll, None, None, lab, lpl
    beta = np.full((T, N, L), _NEG, lp.dtype)
    skip_b = np.zeros((N, L), bool)                                  # s+2 -> s allowed
    skip_b[:, :-2] = skip[:, 2:]
    init = neg.copy()
    init[np.arange(N), 2 * tl] = 0.0
    has = tl > 0
    init[np.arange(N)[has], 2 * tl[has] - 1] = 0.0
    for t in range(T - 1, -1, -1):
        if t + 1 < T:
            b = beta[t + 1]
            b1 = np.concatenate([b[:, 1:], neg[:, :1]], 1)
            b2 = np.where(skip_b, np.concatenate([b[:, 2:], neg[:, :2]], 1), _NEG)
            rec = _lse3(b, b1, b2)
        else:
            rec = neg
        here = np.where((t == il - 1)[:, None], init, np.where((t < il - 1)[:, None], rec, _NEG))
        beta[t] = np.where(valid, here + lpl[t], _NEG)
    return nll, alpha, beta, lab, lpl


def _check(lp, targets, il, tl):
    T, N, C = lp.shape
    if targets.ndim != 2 or targets.shape[0] != N:
        raise RuntimeError(f"ctc_loss: expected padded targets of shape (N, S), got {list(targets.shape)}")
    if il.shape != (N,) or tl.shape != (N,):
        raise RuntimeError(f"ctc_loss: Expected input_lengths and target_lengths to have {N} elements (the batch "
                           f"size), got {il.shape[0] if il.ndim else 1} and {tl.shape[0] if tl.ndim else 1}")
    if N and (il.max() > T or il.min() < 0):
        raise RuntimeError(f"ctc_loss: Expected input_lengths to have value at most {T} (the input length), but "
                           f"got value {int(il.max())}")
    if N and (tl.min() < 0 or tl.max() > targets.shape[1]):
        raise RuntimeError(f"ctc_loss: Expected target_lengths to be at most the padded target length "
                           f"{targets.shape[1]}, got {int(tl.max())}")


def _ctc_impl(xp, lp, targets, il, tl, *, blank, zero_infinity):
    if lp.dtype.kind != "f":
        raise RuntimeError(f"ctc_loss: expected log_probs of a floating point dtype, got {dt.FROM_NP[lp.dtype].name}")
    targets = np.asarray(targets, np.int64)
    il = np.asarray(il, np.int64)
    tl = np.asarray(tl, np.int64)
    _check(lp, targets, il, tl)
    nll = _alpha_beta(xp, lp, targets, il, tl, blank, False)[0]
    if zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    return nll.astype(lp.dtype)


def _ctc_bwd_impl(xp, g, lp, targets, il, tl, *, blank, zero_infinity):
    targets = np.asarray(targets, np.int64)
    il = np.asarray(il, np.int64)
    tl = np.asarray(tl, np.int64)
    T, N, C = lp.shape
    nll, alpha, beta, lab, lpl = _alpha_beta(xp, lp, targets, il, tl, blank, True)
    ab = alpha + beta                                                # (T, N, L): both include p at t
    L = lab.shape[1]
    # log-sum-exp of ab over the positions of each class: (T, N, C)
    flat = (np.arange(N)[:, None] * C + lab).reshape(-1)             # (N*L,) -> class slot per (n, s)
    idx = np.broadcast_to(flat, (T, N * L))
    abf = ab.reshape(T, N * L)
    mx = np.full((T, N * C), _NEG, lp.dtype)
    np.maximum.at(mx, (np.arange(T)[:, None], idx), abf)
    mxs = np.where(np.isfinite(mx), mx, 0)
    tot = np.zeros((T, N * C), lp.dtype)
    with np.errstate(invalid="ignore"):
        np.add.at(tot, (np.arange(T)[:, None], idx), np.exp(abf - np.take_along_axis(mxs, idx, 1)))
    with np.errstate(divide="ignore"):
        lcab = (np.log(tot) + mxs).reshape(T, N, C)
    with np.errstate(invalid="ignore", over="ignore"):
        grad = np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)
    inside = (np.arange(T)[:, None] < il[None, :])[:, :, None]
    grad = np.where(inside, grad, 0.0)
    if zero_infinity:
        grad = np.where(np.isinf(nll)[None, :, None], 0.0, grad)
    return (grad * g.reshape(1, N, 1)).astype(lp.dtype)


ctc_loss_op = defop("ctc_loss", _ctc_impl, save=("inputs",), family=NN, node_name="CtcLossBackward0")
# PyTorch's backward of the CTC loss has no derivative of its own either
ctc_loss_bwd_op = defop("ctc_loss_backward", _ctc_bwd_impl, family=NN, differentiable=False)


@ctc_loss_op.def_vjp
def _(ctx, g):
    lp, targets, il, tl = ctx.inputs
    return dispatch(ctc_loss_bwd_op, (g, lp, targets, il, tl), ctx.params), None, None, None


@ctc_loss_op.def_jvp
def _(ctx, t, *_):
    # the tangent of nll along t, by the same (PyTorch) gradient: sum over t, c of grad * tangent
    lp, targets, il, tl = ctx.inputs
    from .._creation import ones
    gr = dispatch(ctc_loss_bwd_op, (ones((lp.shape[1],), dtype=lp.dtype), lp, targets, il, tl), ctx.params)
    return (gr * t).sum((0, 2))


def _fold_rule(op, vals, bd, params, size):
    """vmap: the vmap dim joins the batch (N) of every input."""
    out = []
    for v, b in zip(vals, bd):
        v = _bm(v, b, size)
        s = tuple(v.shape)
        if v.dim() == 4:        # log_probs (B, T, N, C) -> (T, B*N, C)
            v = v.movedim(0, 1).reshape(s[1], s[0] * s[2], s[3])
        else:                   # (B, N, ...) -> (B*N, ...)
            v = v.reshape((s[0] * s[1],) + s[2:])
        out.append(v)
    r = dispatch(op, tuple(out), params)
    if r.dim() == 3:            # the backward's (T, B*N, C) -> (B, T, N, C)
        T, BN, C = r.shape
        return r.reshape(T, size, BN // size, C).movedim(1, 0), True
    return r.reshape(size, -1), True


ctc_loss_op.batch = _fold_rule
ctc_loss_bwd_op.batch = _fold_rule


def _lengths(v, name, N):
    from .._creation import tensor
    if U.is_tensor(v):
        if v.dtype.np.kind not in "iu":
            raise RuntimeError(f"ctc_loss: {name} must be integral, got {v.dtype}")
        return v.reshape(-1).long() if v.dim() else v.reshape(1).long()
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"ctc_loss(): argument '{name}' must be a Tensor or a tuple of ints, not {type(v).__name__}")
    return tensor([int(x) for x in v], dtype=dt.int64)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not U.is_tensor(log_probs) or not U.is_tensor(targets):
        raise TypeError("ctc_loss(): argument 'log_probs' and 'targets' must be Tensors")
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D (T, C) or 3-D (T, N, C), got "
                           f"{U.fmt_shape(log_probs.shape)}")
    U.no_lowp("ctc_loss_cpu", log_probs)
    if log_probs.is_complex():
        U.no_complex("ctc_loss_cpu", log_probs)
    if log_probs.dtype.np.kind != "f":
        raise RuntimeError(f"ctc_loss: \"ctc_loss_cpu\" not implemented for '{log_probs.dtype.name}' (log_probs must "
                           f"be floating point)")
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError(f"ctc_loss: blank must be in label range [0, {C}), got {blank}")
    if targets.dtype.np.kind not in "iu":
        raise RuntimeError(f"ctc_loss: targets must be integral, got {targets.dtype}")
    il = _lengths(input_lengths, "input_lengths", N)
    tl = _lengths(target_lengths, "target_lengths", N)
    if unbatched:
        tg = targets.reshape(1, -1)
    elif targets.dim() == 1:  # the targets of all samples concatenated: padded here
        from .._creation import tensor
        lens = tl.numpy()
        flat = targets.numpy()
        if lens.sum() > flat.shape[0]:
            raise RuntimeError(f"ctc_loss: Expected tensor to have size at least {int(lens.sum())} at dimension 0 "
                               f"(the sum of target_lengths), but got size {flat.shape[0]}")
        pad = np.zeros((N, int(lens.max()) if N else 0), np.int64)
        off = np.concatenate([[0], np.cumsum(lens)])
        for n in range(N):  # one slice per sample
            pad[n, :lens[n]] = flat[off[n]:off[n + 1]]
        tg = tensor(pad)
    else:
        tg = targets.long()
    nll = dispatch(ctc_loss_op, (lp, tg, il, tl), {"blank": int(blank), "zero_infinity": bool(zero_infinity)})
    if reduction == "mean":
        return (nll / tl.clamp_min(1).to(nll.dtype)).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.squeeze(0) if unbatched else nll
