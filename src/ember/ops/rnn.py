"""The recurrent family: one LSTM layer over a whole sequence as one primitive (issue 22).

``lstm_layer(x, h0, c0, w_ih, w_hh, b=None, reverse=False) -> (out, h_n, c_n)`` runs one direction
of one layer over the sequence x (T, B, I); b is the layer's bias (PyTorch's b_ih + b_hh). Gates are
PyTorch's (i, f, g, o):

    gates = x[t] @ w_ih.T + h @ w_hh.T + b;  c = sigmoid(f) * c + sigmoid(i) * tanh(g);  h = sigmoid(o) * tanh(c)

Forward runs the time loop on raw arrays (one GEMM, over [x[t]; 1; h], and a few ufuncs per step, no
graph per step); the backward is one fused NumPy pass (back-propagation through time, the weight
gradients as GEMMs over the sequence) when nothing observes it (grad mode off, no transform), and
otherwise the same formulas in ember ops (so create_graph, forward mode and vmap compose).
"""
import contextlib
import itertools

import numpy as np

from .. import _dispatch as D, _parallel
from . import _util as U
from .._dispatch import defop, dispatch
from .elementwise import _cj  # conj of a complex tensor (the complex vjp)

FAM = "rnn"


def _steps(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _check(x, h0, c0, w_ih, w_hh, b):
    if x.ndim < 2 or x.shape[0] == 0:
        raise RuntimeError(f"lstm_layer: Expected a (T, B, input_size) input with T > 0, got shape {list(x.shape)}")
    H = h0.shape[-1] if h0.ndim else 0
    want = tuple(x.shape[1:-1]) + (H,)
    if (tuple(h0.shape) != want or tuple(c0.shape) != want or tuple(w_ih.shape) != (4 * H, x.shape[-1])
            or tuple(w_hh.shape) != (4 * H, H) or (b is not None and tuple(b.shape) != (4 * H,))):
        raise RuntimeError(f"lstm_layer: shapes do not fit: input {list(x.shape)}, h0 {list(h0.shape)}, c0 "
                           f"{list(c0.shape)}, w_ih {list(w_ih.shape)}, w_hh {list(w_hh.shape)}, b "
                           f"{None if b is None else list(b.shape)}; expected (T, B, I), (B, H), (B, H), (4H, I), "
                           f"(4H, H), (4H,)")
    arrs = (x, h0, c0, w_ih, w_hh) + ((b,) if b is not None else ())
    for a in arrs:
        if a.dtype.kind not in "fc":
            raise RuntimeError(f"lstm_layer: expected floating point or complex inputs, got {a.dtype}")
    if x.dtype != w_ih.dtype:  # (the input projection is a matmul, which refuses mixed dtypes as PyTorch's)
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {U.dt.FROM_NP[x.dtype].name} != "
                           f"{U.dt.FROM_NP[w_ih.dtype].name}")
    dt = np.result_type(*arrs)  # mixed float inputs promote, as the ops of the recurrence do
    return tuple(a if a is None or a.dtype == dt else a.astype(dt) for a in (x, h0, c0, w_ih, w_hh, b))


# The fused kernels work feature-major: the state is (H, B) and a step's gates (4H, B), so that each
# gate block, the state and every per-step operand is one contiguous block (NumPy's ufuncs run their
# SIMD loops on contiguous blocks and cost about twice as much on strided rows). The gate blocks are
# kept in the order o, i, f, g (PyTorch's rows are i, f, g, o): the three sigmoids are one block, and
# [i; f] sits against [g; c_prev] so that both products of the cell update are one ufunc call.
_ROWS = (3, 0, 1, 2)  # kernel gate block r holds PyTorch's gate block _ROWS[r]


# The input projection joins the step's GEMM when the input is narrow: a column of w_ih there costs
# the step's small GEMM about what a row of the projected sequence costs in the one big GEMM plus its
# transposition, reordering and per-step addition when the input is about 90 wide (H = 64, B = 16:
# I = 8 and I = 64 run faster folded; H = I = 200, B = 20 about 2% slower).
_FOLD_INPUT = 64


def _folded_width(I):
    """The rows of x in the step's GEMM operand (0: the projection is one GEMM before the loop)."""
    return I if I <= _FOLD_INPUT else 0


def _run(xp, x, h0, c0, w_ih, w_hh, b, reverse):
    """The recurrence on raw arrays: (out, S, tc). out (T, ..., H) is h after each step. S
    (T + 1, 8H + F + e, B) holds, for processing step k (k = T-1-t when reverse), in row blocks: the
    activations sigmoid(o), sigmoid(i), sigmoid(f), tanh(g) (H rows each); the cell state before the
    step (S[k + 1] block 4 is c after step k); with a narrow input (F = I, see _FOLD_INPUT) the next
    step's input x^T; with a bias (e = 1) a row of ones; h after the step; the products
    i * tanh(g) and f * c_prev (the backward's factors are cheaper from h and the products than from
    the activations alone). So rows 5H to 5H + F + e + H of step k are the next step's GEMM operand
    [x; 1; h], against the weights [w_ih, b, w_hh]: the bias, and a narrow input's projection, join
    the recurrent GEMM. A wide input is projected by one GEMM before the loop, transposed to
    feature-major and added per step. tc (T, H, B) is tanh(c) after each step. Nine or ten ufunc
    calls and a GEMM per step, no allocation."""
    T, H, I = x.shape[0], h0.shape[-1], x.shape[-1]
    lead = tuple(x.shape[1:-1])
    B = _prod(lead)
    dt = x.dtype
    H3, H4, H5 = 3 * H, 4 * H, 5 * H
    e = 0 if b is None else 1
    F = _folded_width(I)
    K = F + e + H       # the GEMM operand's rows
    r = H5 + F + e      # h's first row in S
    xs = x.reshape(T, B, I)
    if reverse:
        xs = xs[::-1]
    # the weights [w_ih (narrow input),  b, w_hh], gate blocks reordered, the sigmoid blocks negated:
    # sigmoid(z) = 1 / (1 + exp(-z)) needs no negation per step (negating is exact)
    wc = xp.concatenate(([w_ih] if F else []) + ([] if b is None else [b.reshape(H4, 1)]) + [w_hh], 1)
    wc = wc.reshape(4, H, K)
    wn = xp.empty((4, H, K), dtype=dt)
    xp.negative(wc[3], out=wn[0])
    xp.negative(wc[:2], out=wn[1:3])
    wn[3] = wc[2]
    wn = wn.reshape(H4, K)
    xn = None
    if not F:  # the projection of the whole sequence, in the kernel's layout, block order and signs
        x4 = (xs.reshape(T * B, I) @ w_ih.T).reshape(T, B, 4, H)
        xn = xp.empty((T, 4, H, B), dtype=dt)
        xp.negative(x4[:, :, 3].transpose(0, 2, 1), out=xn[:, 0])  # (as fast as a plain strided copy)
        xp.negative(x4[:, :, :2].transpose(0, 2, 3, 1), out=xn[:, 1:3])
        xn[:, 3] = x4[:, :, 2].transpose(0, 2, 1)
        xn = xn.reshape(T, H4, B)
    S = xp.empty((T + 1, r + 3 * H, B), dtype=dt)
    tc = xp.empty((T, H, B), dtype=dt)
    S[0, H4:H5] = c0.reshape(B, H).T
    S[:T, H5 + F:r] = 1
    h = xp.empty((K, B), dtype=dt)  # the first step's operand [x; 1; h0] (read only)
    if F:
        S[:T - 1, H5:H5 + F] = xs[1:].transpose(0, 2, 1)
        h[:F] = xs[0].T
    h[F:F + e] = 1
    h[F + e:] = h0.reshape(B, H).T
    one = xp.array(1, dtype=dt)  # (a 0-d array: NumPy's ufuncs take it faster than a scalar)
    matmul, exp, recip, tanh, mul, add = xp.matmul, xp.exp, xp.reciprocal, xp.tanh, xp.multiply, xp.add
    # each step's blocks as views made by one iteration each (slicing a step's rows again per step
    # costs a view per block): gates, the projected input (or None), sigmoids, g, [i; f], [g; c_prev],
    # [i * g; f * c_prev] and its two halves, o, the next step's c, tanh(c), h, and the next step's
    # GEMM operand
    A = S[:T]
    steps = zip(A[:, :H4], itertools.repeat(None) if xn is None else xn, A[:, :H3], A[:, H3:H4], A[:, H:H3],
                A[:, H3:H5], A[:, r + H:], A[:, r + H:r + 2 * H], A[:, r + 2 * H:], A[:, :H], S[1:, H4:H5], tc,
                A[:, r:r + H], A[:, H5:r + H])
    with xp.errstate(over="ignore"), _step_blas(xp, H4 * K * B):  # (exp(-a) overflowing to inf: sigmoid 0)
        for a, xk, sg, gg, gif, ggc, prod, p_ig, p_fc, go, c, t, hk, hnext in steps:
            matmul(wn, h, out=a)
            if xk is not None:
                a += xk
            exp(sg, out=sg)
            sg += one
            recip(sg, out=sg)
            tanh(gg, out=gg)
            mul(gif, ggc, out=prod)  # [i * g; f * c_prev]
            add(p_ig, p_fc, out=c)
            tanh(c, out=t)
            mul(go, t, out=hk)
            h = hnext
    hs = A[:, r:r + H]
    out = xp.empty((T, B, H), dtype=dt)
    out[...] = (hs[::-1] if reverse else hs).transpose(0, 2, 1)
    return out.reshape((T,) + lead + (H,)), S, tc


def _lstm_impl(xp, x, h0, c0, w_ih, w_hh, b, *, reverse=False):
    x, h0, c0, w_ih, w_hh, b = _check(x, h0, c0, w_ih, w_hh, b)
    out, S, tc = _run(xp, x, h0, c0, w_ih, w_hh, b, reverse)
    D.keep((out, S, tc))  # (the fused backward then need not run the recurrence again)
    T, H = x.shape[0], h0.shape[-1]
    return out, xp.array(out[0 if reverse else T - 1]), xp.array(S[T, 4 * H:5 * H].T).reshape(h0.shape)


def _lstm_bwd_impl(xp, gout, ghn, gcn, x, h0, c0, w_ih, w_hh, b, out=None, S=None, tc=None, *, reverse=False):
    """(gxw, gh0, gc0, gw_hh, gb) by back-propagation through time on raw arrays, gxw the gradient
    of the input projection x @ w_ih^T (the vjp takes x's and w_ih's from it, as needed); gb also
    without a bias: the caller drops it. out, S, tc: the forward's buffers (see _run) when the
    forward kept them; otherwise the forward runs again. Feature-major as the forward: five ufunc
    calls and a GEMM per step, each in place in one buffer; the weight gradient is one GEMM over
    the sequence."""
    x, h0, c0, w_ih, w_hh, b = _check(x, h0, c0, w_ih, w_hh, b)
    dt = x.dtype
    gout, ghn, gcn = (xp.asarray(a, dtype=dt) for a in (gout, ghn, gcn))
    T, H, I = x.shape[0], h0.shape[-1], x.shape[-1]
    lead = tuple(x.shape[1:-1])
    B = _prod(lead)
    H2, H3, H4, H5 = 2 * H, 3 * H, 4 * H, 5 * H
    r = H5 + _folded_width(I) + (b is not None)  # h's first row in S
    if S is None or S.dtype != dt or S.shape != (T + 1, r + 3 * H, B):
        out, S, tc = _run(xp, x, h0, c0, w_ih, w_hh, b, reverse)
    A = S[:T]  # per step: sigmoid(o), sigmoid(i), sigmoid(f), tanh(g), c_prev, ..., h, i * g, f * c_prev
    o, i, f, g, h, ig = A[:, :H], A[:, H:H2], A[:, H2:H3], A[:, H3:H4], A[:, r:r + H], A[:, r + H:r + H2]
    # P: per step the factors [q, p_o, p_i, p_f, p_g, f], overwritten by the loop with
    # [dh * q, d o, d i, d f, d g, dc_prev]: the gate gradients in the forward's block order
    # (o, i, f, g) are blocks 1 to 4; dh * [q, p_o] and dc * [p_i, p_f, p_g, f] are one call each.
    # All factors are computed for every step at once, from the forward's products (fewer passes
    # than from the activations: h = o * tanh(c), so tanh(c) * sigmoid'(o) = (1 - o) * h and
    # o * tanh'(c) = o - h * tanh(c)); each pass over as many adjacent blocks as it can (a pass
    # over one block per step costs about as much as one over three).
    P = xp.empty((T, 6, H, B), dtype=dt)
    one = xp.array(1, dtype=dt)
    poif = P[:, 1:4].reshape(T, H3, B)
    xp.subtract(one, A[:, :H3], out=poif)
    poif *= A[:, r:]                   # [p_o; p_i; p_f] = (1 - [o; i; f]) * [h; i * g; f * c_prev]
    pg = P[:, 4]
    xp.multiply(ig, g, out=pg)
    xp.subtract(i, pg, out=pg)         # p_g = i * tanh'(g) = i - (i * g) * g
    q = P[:, 0]
    xp.multiply(h, tc, out=q)
    xp.subtract(o, q, out=q)           # q = o * tanh'(c) = o - h * tanh(c): dc += dh * q
    P[:, 5] = f
    go = xp.empty((T, H, B), dtype=dt)
    g3 = gout.reshape(T, B, H)
    go[...] = (g3[::-1] if reverse else g3).transpose(0, 2, 1)
    Pg = P.reshape(T, 6 * H, B)[:, H:H5]
    # w_hh transposed, its rows in the kernel's block order: a contiguous copy (OpenBLAS runs the
    # step's small GEMM about 5% faster on it than on a transposed view)
    wt = xp.empty((H, H4), dtype=dt)
    wt[:, :H] = w_hh[H3:].T
    wt[:, H:] = w_hh[:H3].T
    dh = ghn.reshape(B, H).T.copy()  # (copies: updated in place)
    dc = gcn.reshape(B, H).T.copy()
    mul, matmul = xp.multiply, xp.matmul
    steps = zip(go[::-1], P[::-1, :2], P[::-1, 0], P[::-1, 2:], P[::-1, 5], Pg[::-1])
    with _step_blas(xp, H * H4 * B):
        for g, pdh, sc, pdc, dcp, d in steps:
            dh += g
            mul(dh, pdh, out=pdh)   # [dh * q, d o]
            dc += sc
            mul(dc, pdc, out=pdc)   # [d i, d f, d g, dc_prev]
            dc = dcp
            matmul(wt, d, out=dh)
    gx = xp.empty((T, B, 4, H), dtype=dt)  # the gates' gradients, in time order and PyTorch's gate order
    src = P[::-1] if reverse else P
    gx[:, :, 3] = src[:, 1].transpose(0, 2, 1)
    gx[:, :, :3] = src[:, 2:5].transpose(0, 3, 1, 2)
    gx = gx.reshape(T * B, H4)
    o2, h02 = out.reshape(T * B, H), h0.reshape(B, H)
    if reverse:  # the state before step t is h after step t + 1, and h0 before the last
        gw = gx[(T - 1) * B:].T @ h02
        if T > 1:
            gw += gx[:-B].T @ o2[B:]
    else:
        gw = gx[:B].T @ h02
        if T > 1:
            gw += gx[B:].T @ o2[:-B]
    return (gx.reshape(x.shape[:-1] + (H4,)), xp.array(dh.T).reshape(h0.shape), xp.array(dc.T).reshape(h0.shape),
            gw, U.col_sums(xp, gx))


# The time loop's GEMM runs on OpenBLAS's own threads when it is big enough for them: a step of the
# word-level language model (800x201 by 201x20, 3.2M multiply-adds) took its two-thread training
# step from 85 to 77 ms (OpenBLAS's threads waiting 2^20 cycles for the next call: _blas). Smaller
# ones run on one thread, as ember's other stacks of small GEMMs (_parallel.one_blas_thread): a
# multi-threaded call synchronises its threads every time, which gained nothing on the sequence
# model's 256x73 by 73x16 (0.3M). As any GEMM's, the result then depends on the thread count set
# (ember.set_num_threads), never on the machine's load.
_STEP_THREADS_MIN = 1 << 20  # multiply-adds of a step's GEMM from which OpenBLAS's threads run it


def _step_blas(xp, macs):
    if xp is np and macs < _STEP_THREADS_MIN:
        return _parallel.one_blas_thread()
    return contextlib.nullcontext()


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


lstm_layer_op = defop("lstm_layer", _lstm_impl, nout=3, save=("inputs",), family=FAM)
lstm_layer_bwd_op = defop("lstm_layer_backward", _lstm_bwd_impl, nout=5, family=FAM, differentiable=False)


def lstm_layer(x, h0, c0, w_ih, w_hh, b=None, reverse=False):
    """One LSTM direction over a sequence x (T, B, I): (out (T, B, H), h_n (B, H), c_n (B, H)); b is
    the layer's bias (PyTorch's b_ih + b_hh)."""
    res = D.dispatch_keeping(lstm_layer_op, (x, h0, c0, w_ih, w_hh, b), {"reverse": bool(reverse)})
    o = res[0]
    kept = getattr(o._fn, "_kept", None)
    if kept is not None:
        if kept[0] is o._data:
            # out is one of the kept buffers, so its version is noted (changed in place: the backward
            # runs the forward again instead)
            if o._vc is None:
                o._vc = [0, None]
            o._fn._kept = kept + (o._vc, o._vc[0])
        else:
            del o._fn._kept
    return res


# ----------------------------------------------------------------------------- rules in ember ops
# The rules run the recurrence on the input projection xw = x @ w_ih^T (T, B, 4H) (_proj); the
# gradients of x and w_ih follow from xw's by _proj_vjp, for the fused backward and the composite alike.


def _proj(x, w_ih):
    return x.matmul(w_ih.transpose(-1, -2))


def _proj_vjp(gxw, x, w_ih, need_x=True, need_w=True):
    """(gx, gw_ih) of xw = x @ w_ih^T given gxw (None where not needed); a w_ih with more than two
    dims carries a leading vmapped dim (and ones broadcasting over time and the batch): gw_ih is
    then summed per item."""
    gx = gxw.matmul(w_ih) if need_x else None
    if not need_w:
        gw = None
    elif w_ih.dim() == 2:
        gw = gxw.reshape(-1, gxw.shape[-1]).transpose(0, 1).matmul(x.reshape(-1, x.shape[-1]))
    else:
        S = gxw.shape[0]
        gw = gxw.reshape((S, -1, gxw.shape[-1])).transpose(1, 2).matmul(x.reshape((S, -1, x.shape[-1])))
    return gx, gw


def _gates(xw_t, h, w_hh, b_hh):
    g = h.matmul(w_hh.transpose(-1, -2))
    if b_hh is not None:
        g = g + b_hh
    return xw_t + g


def _composite_states(xw, h0, c0, w_hh, b_hh, reverse, time_dim=0):
    """Per step (in processing order): (t, h_prev, c_prev, i, f, g, o, c) in ember ops."""
    H = h0.shape[-1]
    h, c = h0, c0
    res = []
    for t in _steps(xw.shape[time_dim], reverse):
        gates = _gates(xw.select(time_dim, t), h, w_hh, b_hh)
        i, f, g, o = gates.chunk(4, -1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        cn = f * c + i * g
        res.append((t, h, c, i, f, g, o, cn))
        c = cn
        h = o * c.tanh()
    return res, h, c, H


def _composite_forward(x, h0, c0, w_ih, w_hh, b, reverse, time_dim=0):
    from .shape import stack
    res, h, c, _ = _composite_states(_proj(x, w_ih), h0, c0, w_hh, b, reverse, time_dim)
    seq = [None] * len(res)
    for k, (t, *_rest) in enumerate(res):
        seq[t] = res[k + 1][1] if k + 1 < len(res) else h
    return stack(seq, time_dim), h, c


def _composite_backward(gout, ghn, gcn, x, h0, c0, w_ih, w_hh, b, reverse):
    """The fused backward's (gxw, gh0, gc0, gw_hh, gb) in ember ops."""
    from .shape import stack, cat
    res, _, _, H = _composite_states(_proj(x, w_ih), h0, c0, w_hh, b, reverse)
    dh, dc = ghn, gcn
    gxw = [None] * len(res)
    gw = gb = None
    for t, hp, cp, i, f, g, o, c in reversed(res):
        dh = dh + gout[t]
        tc = c.tanh()
        dc = dc + dh * o * (1 - tc * tc)
        d = cat([dc * g * i * (1 - i), dc * cp * f * (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o)], -1)
        gxw[t] = d
        dc = dc * f
        dh = d.matmul(w_hh)
        d2 = d.reshape(-1, d.shape[-1])
        w = d2.transpose(0, 1).matmul(hp.reshape(-1, H))
        gw = w if gw is None else gw + w
        if b is not None:
            s = d2.sum(0)
            gb = s if gb is None else gb + s
    return stack(gxw, 0), dh, dc, gw, gb


@lstm_layer_op.def_vjp
def _(ctx, gout, ghn, gcn):
    x, h0, c0, w_ih, w_hh, b = ctx.inputs
    rev = ctx.params.get("reverse", False)
    cx = x._data.dtype.kind == "c"
    if cx:  # the layer is holomorphic: PyTorch's vjp conj(J)^T g is conj(J^T conj(g)), the real formulas
        gout, ghn, gcn = _cj(gout), _cj(ghn), _cj(gcn)
    if not D.grad_mode.enabled and D.state.simple:
        ws = ctx.__dict__.get("_kept")
        kept = ws[:3] if ws is not None and ws[3][0] == ws[4] else ()
        grads = dispatch(lstm_layer_bwd_op, (gout, ghn, gcn, x, h0, c0, w_ih, w_hh, b) + kept, ctx.params)
    else:
        grads = _composite_backward(gout, ghn, gcn, x, h0, c0, w_ih, w_hh, b, rev)
    gxw, gh0, gc0, gw, gb = grads
    needs = ctx.needs
    gx, gw_ih = _proj_vjp(gxw, x, w_ih, needs[0], needs[3]) if needs[0] or needs[3] else (None, None)
    grads = (gx, gh0, gc0, gw_ih, gw, gb)
    if cx:
        grads = tuple(None if g is None else _cj(g) for g in grads)
    return tuple(g if need else None for g, need in zip(grads, ctx.needs))


@lstm_layer_op.def_jvp
def _(ctx, tx, th0, tc0, twi, tw, tb):
    x, h0, c0, w_ih, w_hh, b = ctx.inputs
    from .shape import stack
    res, _, _, H = _composite_states(_proj(x, w_ih), h0, c0, w_hh, b, ctx.params.get("reverse", False))
    txw = None
    for p in (None if tx is None else _proj(tx, w_ih), None if twi is None else _proj(x, twi)):
        if p is not None:
            txw = p if txw is None else txw + p
    th, tc = th0, tc0
    seq = [None] * len(res)
    for t, hp, cp, i, f, g, o, c in res:
        tg = None if txw is None else txw[t]
        parts = [p for p in (None if th is None else th.matmul(w_hh.transpose(-1, -2)),
                             None if tw is None else hp.matmul(tw.transpose(-1, -2)), tb, tg) if p is not None]
        if not parts and tc is None:
            seq[t] = None
            continue
        tch = c.tanh()
        if parts:
            tgates = parts[0]
            for p in parts[1:]:
                tgates = tgates + p
            ti, tf, tgg, to = tgates.chunk(4, -1)
            ti, tf, tgg, to = ti * i * (1 - i), tf * f * (1 - f), tgg * (1 - g * g), to * o * (1 - o)
            tcn = tf * cp + ti * g + i * tgg
            if tc is not None:
                tcn = tcn + f * tc
            th = to * tch + o * (1 - tch * tch) * tcn
        else:  # only the cell state carries a tangent (a c0 tangent, before any other reaches the gates)
            tcn = f * tc
            th = o * (1 - tch * tch) * tcn
        tc = tcn
        seq[t] = th
    if any(s is None for s in seq):
        from .._creation import zeros_like
        seq = [zeros_like(h0) if s is None else s for s in seq]
    return stack(seq, 0), th, tc


def _batched_weights(vals, bd, size, nlead):
    """w_ih, w_hh and the bias of a vmapped call, each with the vmapped dim (the bias shaped to
    broadcast over the state's batch dims)."""
    from ._batching import _materialize
    w_ih, w_hh, b = (v if v is None or d else _materialize(v, size) for v, d in zip(vals, bd))
    if b is not None:
        b = b.reshape((size,) + (1,) * nlead + (-1,))
    return w_ih.reshape((size,) + (1,) * nlead + tuple(w_ih.shape[-2:])), w_hh, b


@lstm_layer_op.def_batch
def _(op, vals, bd, params, size):
    """vmap: with shared weights the vmapped dim folds into the batch (one call of the primitive);
    otherwise the recurrence in ember ops with the batch dim leading."""
    from ._batching import _materialize
    x, h0, c0, w_ih, w_hh, b = vals
    x = x if bd[0] else _materialize(x, size)
    h0 = h0 if bd[1] else _materialize(h0, size)
    c0 = c0 if bd[2] else _materialize(c0, size)
    if not bd[3] and not bd[4] and (b is None or not bd[5]):
        S, T = x.shape[0], x.shape[1]
        rest = tuple(h0.shape[1:-1])
        x2 = x.movedim(0, 1).reshape((T, -1, x.shape[-1]))
        out, hn, cn = lstm_layer(x2, h0.reshape((-1, h0.shape[-1])), c0.reshape((-1, c0.shape[-1])), w_ih, w_hh, b,
                                 params.get("reverse", False))
        H = h0.shape[-1]
        out = out.reshape((T, S) + rest + (H,)).movedim(1, 0)
        return (out, hn.reshape((S,) + rest + (H,)), cn.reshape((S,) + rest + (H,))), (True, True, True)
    w_ih, w_hh, b = _batched_weights((w_ih, w_hh, b), bd[3:6], size, h0.dim() - 2)
    return (_composite_forward(x, h0, c0, w_ih, w_hh, b, params.get("reverse", False), time_dim=1),
            (True, True, True))


@lstm_layer_bwd_op.def_batch
def _(op, vals, bd, params, size):
    from ._batching import _materialize
    vals = [v if v is None or d else _materialize(v, size) for v, d in zip(vals[:9], bd[:9])]
    gout, ghn, gcn, x, h0, c0 = vals[:6]  # (the forward's buffers, if given, are not needed)
    w_ih, w_hh, b = _batched_weights(vals[6:9], (True,) * 3, size, h0.dim() - 2)
    res = _composite_states_batched_backward(gout, ghn, gcn, x, h0, c0, w_ih, w_hh, b, params.get("reverse", False))
    return res, (True,) * 5


def _composite_states_batched_backward(gout, ghn, gcn, x, h0, c0, w_ih, w_hh, b, reverse):
    """The fused backward under vmap: time on dim 1, the weight gradients summed per vmapped item."""
    from .shape import stack, cat
    res, _, _, H = _composite_states(_proj(x, w_ih), h0, c0, w_hh, b, reverse, time_dim=1)
    dh, dc = ghn, gcn
    gxw = [None] * len(res)
    gw = gb = None
    S = x.shape[0]
    for t, hp, cp, i, f, g, o, c in reversed(res):
        dh = dh + gout.select(1, t)
        tc = c.tanh()
        dc = dc + dh * o * (1 - tc * tc)
        d = cat([dc * g * i * (1 - i), dc * cp * f * (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o)], -1)
        gxw[t] = d
        dc = dc * f
        dh = d.matmul(w_hh)
        d2 = d.reshape((S, -1, d.shape[-1]))
        w = d2.transpose(1, 2).matmul(hp.reshape((S, -1, H)))
        gw = w if gw is None else gw + w
        s = d2.sum(1)
        gb = s if gb is None else gb + s
    return stack(gxw, 1), dh, dc, gw, gb
