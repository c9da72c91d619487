"""3-d convolution (F.conv3d, F.conv_transpose3d) and F.conv_transpose1d.

The kernels are written for any number of spatial dims (used with three): im2col as one strided
slice copy per kernel offset (columns laid out (N, C*K, L), so the output needs no transpose) plus
BLAS matmuls; the input gradient is the transposed matmul and col2im, one strided add per offset.
The three primitives -- forward, input gradient (which is also conv_transpose3d) and weight
gradient -- are each other's vjps, as conv2d's are in ops/nn.py, so create_graph works at any order; their vmap rules are conv2d's
(they fold the vmap dim into the batch, or into the channels with groups multiplied).
"""
import numpy as np

from .. import _dtype as dt
from .._dispatch import defop, dispatch
from . import _util as U
from .elementwise import _cj  # conj of a complex operand (the vjps conjugate the other operand)
from .nn import (NN, _bias_check, _tuple, _tsum, _conv_rule, _conv_input_rule, _conv_weight_rule,
                 conv_transpose2d)


def _pad_nd(xp, x, pads):
    """x (N, C, *sp) with per spatial dim (lo, hi) zero padding (hi may be negative: a crop)."""
    if not any(p for pp in pads for p in pp):
        return x
    sl = [slice(None), slice(None)]
    shape = list(x.shape[:2])
    for n, (lo, hi) in zip(x.shape[2:], pads):
        keep = n + min(hi, 0)
        shape.append(lo + n + hi)
        sl.append(slice(lo, lo + keep))
    out = xp.zeros(shape, x.dtype)
    crop = tuple([slice(None), slice(None)] + [slice(0, n + min(hi, 0)) for n, (lo, hi) in zip(x.shape[2:], pads)])
    out[tuple(sl)] = x[crop]
    return out


def _cols(xp, x, k, stride, pad, dilation, out_sp, groups):
    """im2col: (N, G, Cg*K, L) columns of the padded input, one strided slice copy per kernel offset."""
    N, C = x.shape[:2]
    xpd = _pad_nd(xp, x, pad)
    K = int(np.prod(k))
    L = int(np.prod(out_sp))
    cols = xp.empty((N, C, K) + tuple(out_sp), x.dtype)
    for j, off in enumerate(np.ndindex(*k)):  # the kernel's offsets, each a whole-batch slice
        sl = tuple(slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(off, dilation, out_sp, stride))
        cols[:, :, j] = xpd[(slice(None), slice(None)) + sl]
    return cols.reshape(N, groups, (C // groups) * K, L)


def _out_sp(in_sp, k, stride, pad, dilation):
    return tuple((n + lo + hi - d * (kk - 1) - 1) // s + 1
                 for n, kk, s, (lo, hi), d in zip(in_sp, k, stride, pad, dilation))


def _num_check(op, *arrs):
    for a in arrs:  # complex runs as is: NumPy's matmul is BLAS's complex GEMM
        if a is not None and a.dtype.kind not in "fiuc" and a.dtype != U.BF16:
            raise RuntimeError(f"\"{op}\" not implemented for '{dt.FROM_NP[a.dtype].name}'")


def _conv_impl(xp, x, w, b=None, *, stride, pad, dilation, groups):
    _num_check("conv3d", x, w, b)
    if x.dtype != w.dtype or (b is not None and b.dtype != x.dtype):
        raise RuntimeError(f"conv3d: expected input, weight and bias to have the same dtype, got {x.dtype}, "
                           f"{w.dtype}" + ("" if b is None else f", {b.dtype}"))
    if U.is_lowp(x):  # float32 products and sums, rounded once (PyTorch's CPU kernels for these dtypes)
        return U.lowp_f32(_conv_impl, xp, x, w, b, stride=stride, pad=pad, dilation=dilation, groups=groups)
    N = x.shape[0]
    Cout = w.shape[0]
    k = tuple(w.shape[2:])
    out_sp = _out_sp(x.shape[2:], k, stride, pad, dilation)
    if N == 0 or x.shape[1] == 0:
        return xp.zeros((N, Cout) + out_sp, np.result_type(x.dtype, w.dtype))
    cols = _cols(xp, x, k, stride, pad, dilation, out_sp, groups)          # (N, G, CgK, L)
    wm = w.reshape(groups, Cout // groups, -1)                             # (G, Coutg, CgK)
    out = xp.matmul(wm, cols)                                              # (N, G, Coutg, L)
    out = out.reshape((N, Cout) + out_sp)
    if b is not None:
        out += b.reshape((Cout,) + (1,) * len(k))
    return out


def _conv_input_impl(xp, g, w, *, in_sp, stride, pad, dilation, groups):
    """The input gradient of a convolution of an input of spatial size in_sp (conv_transpose)."""
    _num_check("conv_transpose3d", g, w)
    if g.dtype != w.dtype:
        raise RuntimeError(f"conv_transpose3d: Input type ({dt.FROM_NP[g.dtype].name}) and weight type "
                           f"({dt.FROM_NP[w.dtype].name}) should be the same")
    if U.is_lowp(g):
        return U.lowp_f32(_conv_input_impl, xp, g, w, in_sp=in_sp, stride=stride, pad=pad, dilation=dilation,
                          groups=groups)
    N, Cout = g.shape[:2]
    out_sp = tuple(g.shape[2:])
    k = tuple(w.shape[2:])
    Cg = w.shape[1]
    C = Cg * groups
    if N == 0 or Cout == 0:
        return xp.zeros((N, C) + tuple(in_sp), g.dtype)
    L = int(np.prod(out_sp))
    wt = w.reshape(groups, Cout // groups, -1).transpose(0, 2, 1)           # (G, CgK, Coutg)
    gm = g.reshape(N, groups, Cout // groups, L)
    dcols = xp.matmul(wt, gm)                                              # (N, G, CgK, L)
    dcols = dcols.reshape((N, C) + (int(np.prod(k)),) + out_sp)
    padded = tuple(n + lo + max(hi, 0) for n, (lo, hi) in zip(in_sp, pad))
    # the padded input must hold every window (a negative hi pad crops the last positions)
    need = tuple((o - 1) * s + d * (kk - 1) + 1 for o, s, d, kk in zip(out_sp, stride, dilation, k))
    full = tuple(max(p, q) for p, q in zip(padded, need))
    dst = xp.zeros((N, C) + full, g.dtype)
    for j, off in enumerate(np.ndindex(*k)):  # col2im: one strided slice add per kernel offset
        sl = tuple(slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(off, dilation, out_sp, stride))
        dst[(slice(None), slice(None)) + sl] += dcols[:, :, j]
    crop = tuple(slice(lo, lo + n) for n, (lo, hi) in zip(in_sp, pad))
    return xp.ascontiguousarray(dst[(slice(None), slice(None)) + crop])


def _conv_weight_impl(xp, x, g, *, ksize, stride, pad, dilation, groups):
    if U.is_lowp(x):
        return U.lowp_f32(_conv_weight_impl, xp, x, g, ksize=ksize, stride=stride, pad=pad, dilation=dilation,
                          groups=groups)
    N, C = x.shape[:2]
    Cout = g.shape[1]
    out_sp = tuple(g.shape[2:])
    if N == 0:
        return xp.zeros((Cout, C // groups) + tuple(ksize), x.dtype)
    cols = _cols(xp, x, ksize, stride, pad, dilation, out_sp, groups)      # (N, G, CgK, L)
    L = cols.shape[3]
    gm = g.reshape(N, groups, Cout // groups, L)
    gw = None
    for n in range(N):  # one GEMM per sample (summed), no copy of the columns
        t = xp.matmul(gm[n], cols[n].transpose(0, 2, 1))                 # (G, Coutg, CgK)
        gw = t if gw is None else gw + t
    return gw.reshape((Cout, C // groups) + tuple(ksize))


conv3d_op = defop("conv3d", _conv_impl, save=("inputs",), family=NN, node_name="ConvolutionBackward0")
conv3d_input_op = defop("conv3d_backward_input", _conv_input_impl, save=("inputs",), family=NN,
                        node_name="ConvolutionBackwardInputBackward0")
conv3d_weight_op = defop("conv3d_backward_weight", _conv_weight_impl, save=("inputs",), family=NN,
                         node_name="ConvolutionBackwardWeightBackward0")


def _cp(p):
    return {"stride": p["stride"], "pad": p["pad"], "dilation": p["dilation"], "groups": p["groups"]}


@conv3d_op.def_vjp
def _(ctx, g):
    x, w = ctx.inputs[0], ctx.inputs[1]
    n = ctx.needs
    p = _cp(ctx.params)
    # complex: the conjugate of the other operand (_cj is the tensor itself when real)
    gx = dispatch(conv3d_input_op, (g, _cj(w)), dict(p, in_sp=tuple(x.shape[2:]))) if n[0] else None
    gw = dispatch(conv3d_weight_op, (_cj(x), g), dict(p, ksize=tuple(w.shape[2:]))) if n[1] else None
    if len(n) > 2:
        return gx, gw, (g.sum((0,) + tuple(range(2, g.dim()))) if n[2] else None)
    return gx, gw


@conv3d_input_op.def_vjp
def _(ctx, v):
    g, w = ctx.inputs
    n = ctx.needs
    p = _cp(ctx.params)
    dg = dispatch(conv3d_op, (v, _cj(w)), p) if n[0] else None
    dw = dispatch(conv3d_weight_op, (v, _cj(g)), dict(p, ksize=tuple(w.shape[2:]))) if n[1] else None
    return dg, dw


@conv3d_weight_op.def_vjp
def _(ctx, v):
    x, g = ctx.inputs
    n = ctx.needs
    p = _cp(ctx.params)
    dx = dispatch(conv3d_input_op, (_cj(g), v), dict(p, in_sp=tuple(x.shape[2:]))) if n[0] else None
    dg = dispatch(conv3d_op, (_cj(x), v), p) if n[1] else None
    return dx, dg


@conv3d_op.def_jvp
def _(ctx, tx, tw, tb=None):
    x, w = ctx.inputs[0], ctx.inputs[1]
    p = _cp(ctx.params)
    nsp = x.dim() - 2
    return _tsum(None if tx is None else dispatch(conv3d_op, (tx, w), p),
                 None if tw is None else dispatch(conv3d_op, (x, tw), p),
                 None if tb is None else tb.reshape((-1,) + (1,) * nsp))


@conv3d_input_op.def_jvp
def _(ctx, tg, tw):
    g, w = ctx.inputs
    p = ctx.params
    return _tsum(None if tg is None else dispatch(conv3d_input_op, (tg, w), p),
                 None if tw is None else dispatch(conv3d_input_op, (g, tw), p))


@conv3d_weight_op.def_jvp
def _(ctx, tx, tg):
    x, g = ctx.inputs
    p = ctx.params
    return _tsum(None if tx is None else dispatch(conv3d_weight_op, (tx, g), p),
                 None if tg is None else dispatch(conv3d_weight_op, (x, tg), p))


conv3d_op.batch = _conv_rule
conv3d_input_op.batch = _conv_input_rule
conv3d_weight_op.batch = _conv_weight_rule


# ----------------------------------------------------------------------------- public functions


def _check_common(op, input, weight, nsp):
    if not U.is_tensor(input) or not U.is_tensor(weight):
        raise TypeError(f"{op}(): argument 'input' and 'weight' must be Tensors")
    if weight.dim() != nsp + 2:
        raise RuntimeError(f"{op}: expected weight to be a {nsp + 2}-D tensor, but got weight of shape "
                           f"{U.fmt_shape(weight.shape)}")
    if input.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"Expected {nsp + 1}D (unbatched) or {nsp + 2}D (batched) input to {op}, but got "
                           f"input of size: {U.fmt_shape(input.shape)}")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    op = "conv3d"
    _check_common(op, input, weight, 3)
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    stride = _tuple(stride, 3, "stride", op)
    dilation = _tuple(dilation, 3, "dilation", op)
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero")
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported")
    k = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pad = ((0, 0),) * 3
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
            pad = tuple((d * (kk - 1) // 2, d * (kk - 1) - d * (kk - 1) // 2) for kk, d in zip(k, dilation))
        else:
            raise ValueError(f"{op}: Invalid padding string {padding!r}, should be one of 'valid' or 'same'")
    else:
        pp = _tuple(padding, 3, "padding", op)
        if any(v < 0 for v in pp):
            raise RuntimeError(f"{op}: negative padding is not supported")
        pad = tuple((v, v) for v in pp)
    C, Cout = x.shape[1], weight.shape[0]
    if C != weight.shape[1] * groups:
        raise RuntimeError(f"{op}: Given groups={groups}, weight of size {U.fmt_shape(weight.shape)}, expected "
                           f"input{U.fmt_shape(x.shape)} to have {weight.shape[1] * groups} channels, but got "
                           f"{C} channels instead")
    if Cout % groups or Cout < 1:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size {U.fmt_shape(weight.shape)} instead")
    if bias is not None and tuple(bias.shape) != (Cout,):
        raise RuntimeError(f"{op}: Given weight of size {U.fmt_shape(weight.shape)}, expected bias to be "
                           f"1-dimensional with {Cout} elements, but got bias of size {U.fmt_shape(bias.shape)} "
                           f"instead")
    sp = tuple(x.shape[2:])
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(sp, pad))
    eff = tuple(d * (kk - 1) + 1 for d, kk in zip(dilation, k))
    if any(p < e for p, e in zip(padded, eff)):
        raise RuntimeError(f"{op}: Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual "
                           f"input size")
    args = (x, weight) if bias is None else (x, weight, bias)
    out = dispatch(conv3d_op, args, {"stride": stride, "pad": pad, "dilation": dilation, "groups": groups})
    return out.squeeze(0) if unbatched else out


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    op = "conv_transpose3d"
    _check_common(op, input, weight, 3)
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    stride = _tuple(stride, 3, "stride", op)
    dilation = _tuple(dilation, 3, "dilation", op)
    pad = _tuple(padding, 3, "padding", op)
    opad = _tuple(output_padding, 3, "output_padding", op)
    groups = int(groups)
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported")
    if any(v < 0 for v in pad):
        raise RuntimeError(f"{op}: negative padding is not supported")
    for o, s, d in zip(opad, stride, dilation):
        if o >= s and o >= d:
            raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={list(opad)}, stride={list(stride)}, dilation={list(dilation)}")
    Cin = x.shape[1]
    if weight.shape[0] != Cin:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {U.fmt_shape(weight.shape)}, expected input"
                           f"{U.fmt_shape(x.shape)} to have {weight.shape[0]} channels, but got {Cin} channels "
                           f"instead")
    if Cin % groups:
        raise RuntimeError(f"{op}: input channels ({Cin}) must be divisible by groups ({groups})")
    Cout = weight.shape[1] * groups
    _bias_check(op, x, bias)
    if bias is not None and tuple(bias.shape) != (Cout,):
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {U.fmt_shape(weight.shape)}, expected bias "
                           f"to be 1-dimensional with {Cout} elements, but got bias of size "
                           f"{U.fmt_shape(bias.shape)} instead")
    k = tuple(weight.shape[2:])
    out_sp = tuple((n - 1) * s - 2 * p + d * (kk - 1) + o + 1
                   for n, s, p, d, kk, o in zip(x.shape[2:], stride, pad, dilation, k, opad))
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"{op}: computed output size ({' x '.join(map(str, out_sp))}) is too small")
    # the input gradient of the convolution of an out_sp-sized input whose output is x: output
    # padding takes off the hi side (negative: a crop), so that convolution's output size is x's
    p = {"stride": stride, "pad": tuple((pp, pp - o) for pp, o in zip(pad, opad)), "dilation": dilation,
         "groups": groups, "in_sp": out_sp}
    out = dispatch(conv3d_input_op, (x, weight), p)
    if bias is not None:
        out = out + bias.reshape(Cout, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    op = "conv_transpose1d"
    _check_common(op, input, weight, 1)
    s = _tuple(stride, 1, "stride", op)[0]
    p = _tuple(padding, 1, "padding", op)[0]
    o = _tuple(output_padding, 1, "output_padding", op)[0]
    d = _tuple(dilation, 1, "dilation", op)[0]
    if not input.dtype.is_floating_point or not weight.dtype.is_floating_point:  # (the 2-d kernels are floating point only)
        out = conv_transpose3d(input.unsqueeze(-2).unsqueeze(-2), weight.unsqueeze(2).unsqueeze(2), bias,
                               (1, 1, s), (0, 0, p), (0, 0, o), groups, (1, 1, d))
        return out.squeeze(-2).squeeze(-2)
    out = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, (1, s), (0, p), (0, o), groups, (1, d))
    return out.squeeze(-2)
