"""ember.nn.functional: PyTorch's functional interface.

Activations and softmax come from the core registry (ember.ops), the compute kernels
(convolution, pooling, normalisation, linear, embedding) from ember.ops.nn, and the losses
from ember.ops.loss plus compositions of ember ops here, so every function is differentiable,
forward-mode and vmap compatible through the registry's rules.
"""
import builtins
import math
import warnings

import numpy as np

from .. import _dispatch as D
from .. import ops as _ops
from .._creation import _gen
from ..ops import gelu, softplus, sigmoid, tanh, softmax, log_softmax  # noqa: F401
from ..ops import loss as _loss
from ..ops import _util as U
from ..ops import elementwise as _E
from . import _composite

from ..ops.nn import (conv1d, conv2d, conv_transpose2d, max_pool2d, avg_pool2d,  # noqa: F401,E402
                      adaptive_avg_pool2d, batch_norm, layer_norm, group_norm, embedding, embedding_bag)
from ..ops.linalg import linear  # noqa: F401,E402  (the registry's linear primitive)


def _reduction(size_average, reduce, reduction):
    """The legacy size_average/reduce flags mapped to a reduction string, as PyTorch does."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction):
    if reduction not in ("mean", "sum", "none"):  # never a silent 'none' for a misspelt reduction
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ----------------------------------------------------------------------------- activations


def _maybe_inplace(input, out, inplace):
    return input.copy_(out) if inplace else out


def _src(input, inplace):
    """What an in-place activation reads: a clone when autograd records, so that the write into input
    does not destroy a value the backward saved (PyTorch runs leaky_relu(x, inplace=True) & co.)."""
    if inplace and input._rg and D.grad_mode.enabled:
        return input.clone()
    return input


def relu(input, inplace=False):
    return input.relu_() if inplace else _ops.relu(input)


def relu_(input):
    return input.relu_()


def relu6(input, inplace=False):
    return _maybe_inplace(input, _ops.relu6(_src(input, inplace)), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _maybe_inplace(input, _ops.leaky_relu(_src(input, inplace), negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False):
    return _maybe_inplace(input, _ops.elu(_src(input, inplace), alpha), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("hardtanh: min_val cannot be greater than max_val")
    return _maybe_inplace(input, _ops.hardtanh(_src(input, inplace), min_val, max_val), inplace)


def silu(input, inplace=False):
    return _maybe_inplace(input, _ops.silu(_src(input, inplace)), inplace)


def threshold(input, threshold, value, inplace=False):
    x = _src(input, inplace)
    out = _ops.where(x <= threshold, value, x)  # NaN stays NaN (PyTorch)
    return input.copy_(out) if inplace else out


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


def selu(input, inplace=False):
    out = D.dispatch(_E.elu_op, (_src(input, inplace),), {"alpha": 1.6732632423543772848170429916717,
                                           "scale": 1.0507009873554804934193349852946})
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    out = _ops.celu(_src(input, inplace), alpha)
    return input.copy_(out) if inplace else out


def hardsigmoid(input, inplace=False):
    out = D.dispatch(_E.hardsigmoid_op, (_src(input, inplace),))
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    out = D.dispatch(_E.hardswish_op, (_src(input, inplace),))
    return input.copy_(out) if inplace else out


def mish(input, inplace=False):
    out = D.dispatch(_E.mish_op, (_src(input, inplace),))
    return input.copy_(out) if inplace else out


def logsigmoid(input):
    return D.dispatch(_E.log_sigmoid_op, (input,))


def softsign(input):
    return input / (1 + input.abs())


def tanhshrink(input):
    return input - input.tanh()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


def glu(input, dim=-1):
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    n = _ops.norm(input, p, dim, keepdim=True)
    return U.write_out(input / _ops.clamp_min(n, eps).expand_as(input), out)


def one_hot(tensor, num_classes=-1):
    if tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = tensor._data
    if num_classes == -1:
        num_classes = int(a.max()) + 1 if a.size else 0
    if a.size and (a.min() < 0 or a.max() >= num_classes):
        raise RuntimeError(f"one_hot: Class values must be smaller than num_classes ({num_classes}), got "
                           f"{int(a.max())}." if a.max() >= num_classes
                           else f"one_hot: Class values must be non-negative, got {int(a.min())}.")
    out = np.zeros(a.shape + (num_classes,), np.int64)
    np.put_along_axis(out, a[..., None], 1, axis=-1)
    return D._new_tensor(out)


# ----------------------------------------------------------------------------- dropout


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        mask = np.zeros(input.shape, input._data.dtype)
    else:
        if D.state.levels:  # under vmap the draw may differ per sample (randomness='different')
            from .._creation import rand
            m = (rand(*input.shape, dtype=input.dtype) >= p).to(input.dtype) * (1.0 / (1.0 - p))
            return input.mul_(m) if inplace else input * m
        mask = _gen().random(input.shape, dtype=input._data.dtype) >= p
        mask = mask.astype(input._data.dtype)
        mask *= 1.0 / (1.0 - p)
    m = D._new_tensor(mask)
    if inplace:
        return input.mul_(m)
    return input * m


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout(input, p, training, inplace, 2)


def _channel_dropout(input, p, training, inplace, nd):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    n, name = input.dim(), f"dropout{nd}d"
    if nd > 1 and n not in (nd + 1, nd + 2):
        warnings.warn(f"{name}: Received a {n}-D input to {name}, which is deprecated and will result in an "
                      f"error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with "
                      f"{nd} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{nd + 1}D or {nd + 2}D inputs).", stacklevel=3)
    elif nd == 2 and n == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
                      "dim. This behavior will change in a future release to interpret the input as one "
                      "without a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.", stacklevel=3)
    if not training or p == 0.0:
        return input
    # PyTorch's rule: one draw per (sample, channel), the leading two dims; dropout1d/3d read an input
    # without its batch dim as unbatched (one draw per channel); a 2-D input to dropout2d is dropped
    # element-wise
    batched = nd == 2 or n == nd + 2
    k = builtins.min(2 if batched else 1, n)
    shape = tuple(input.shape[:k]) + (1,) * (n - k)
    keep = (_gen().random(shape) >= p).astype(input._data.dtype) / (1.0 - p if p < 1 else 1.0)
    m = D._new_tensor(keep)
    return input.mul_(m) if inplace else input * m


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:  # everything dropped: zeros (PyTorch)
        return input.mul_(0.0) if inplace else input * 0.0
    alpha = -1.7580993408473766
    keep = _gen().random(input.shape) >= p
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    k = D._new_tensor(keep.astype(input._data.dtype))
    out = (input * k + alpha * (1 - k)) * a + b
    return input.copy_(out) if inplace else out


# ----------------------------------------------------------------------------- shape helpers


def pad(input, pad, mode="constant", value=None):
    return _composite.pad(input, pad, mode, value)


def bilinear(input1, input2, weight, bias=None):
    return _ops.bilinear(input1, input2, weight, bias)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _ops.norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


def pdist(input, p=2.0):
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    d = _ops.index_select(input, 0, D._new_tensor(i.astype(np.int64))) - \
        _ops.index_select(input, 0, D._new_tensor(j.astype(np.int64)))
    return _ops.norm(d, p, -1)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    if tuple(x1.shape) != tuple(x2.shape):  # the norms are over the broadcast shape, as PyTorch's
        x1, x2 = _ops.broadcast_tensors(x1, x2)
    n1 = _ops.clamp_min(_ops.norm(x1, 2, dim), eps)
    n2 = _ops.clamp_min(_ops.norm(x2, 2, dim), eps)
    return (x1 * x2).sum(dim) / (n1 * n2)


# ----------------------------------------------------------------------------- losses


def _check_target_shape(name, input, target):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{name}: Using a target size ({_size(target.shape)}) that is different to the "
                         f"input size ({_size(input.shape)}) is deprecated. Please ensure they have the "
                         "same size.")


def _size(s):
    return "torch.Size([" + ", ".join(str(v) for v in s) + "])"


def _check_broadcast(name, input, target):
    if tuple(input.shape) != tuple(target.shape):
        try:
            np.broadcast_shapes(tuple(input.shape), tuple(target.shape))
        except ValueError:
            raise RuntimeError(f"{name}: The size of tensor a ({list(input.shape)}) must match the size "
                               f"of tensor b ({list(target.shape)})") from None
        import warnings
        warnings.warn(f"Using a target size ({_size(target.shape)}) that is different to the input size "
                      f"({_size(input.shape)}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)


def _float_operands(name, input, target, dtype=None):
    """input and target in one floating dtype (PyTorch's result dtype unless given), for the fused
    pointwise losses; integer-only operands are an error naming the loss."""
    if dtype is None:
        from ..ops._util import result_dtype
        dtype = result_dtype(input._data, target._data)
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name}: not implemented for {input.dtype} input and {target.dtype} target "
                           f"(a floating point input or target is expected)")
    return (input if input.dtype is dtype else input.to(dtype)), (target if target.dtype is dtype else target.to(dtype))


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_broadcast("mse_loss", input, target)
    if weight is None:
        return D.dispatch(_loss.mse_loss_op, _float_operands("mse_loss", input, target), {"reduction": reduction})
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_broadcast("l1_loss", input, target)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_broadcast("smooth_l1_loss", input, target)
    if beta != 0.0:
        return D.dispatch(_loss.smooth_l1_loss_op, _float_operands("smooth_l1_loss", input, target),
                          {"reduction": reduction, "beta": float(beta)})
    d = (input - target).abs()
    if beta == 0.0:
        loss = d
    else:
        loss = _ops.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta (got {delta}).")
    _check_broadcast("huber_loss", input, target)
    if weight is None:  # (PyTorch's huber_loss computes in the input's dtype)
        return D.dispatch(_loss.huber_loss_op, _float_operands("huber_loss", input, target, input.dtype),
                          {"reduction": reduction, "delta": float(delta)})
    d = (input - target).abs()
    loss = _ops.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_target_shape("binary_cross_entropy", input, target)
    a = input._data
    if a.size and not D.state.levels and ((a < 0).any() or (a > 1).any()):
        raise RuntimeError(f"binary_cross_entropy: all elements of input should be between 0 and 1 (got values "
                           f"in [{float(a.min())}, {float(a.max())}])")
    if not input.is_floating_point():
        raise RuntimeError(f"binary_cross_entropy: not implemented for {input.dtype} input (probabilities of a "
                           f"floating point dtype are expected)")
    if target.dtype != input.dtype:
        raise RuntimeError(f"binary_cross_entropy: Found dtype {target.dtype} but expected {input.dtype} (the "
                           f"target must have the input's dtype)")
    if weight is None:
        return D.dispatch(_loss.binary_cross_entropy_op, (input, target), {"reduction": reduction})
    # weighted: the same primitive per element (logs clamped at -100, PyTorch's finite gradient at a
    # saturated probability), times the weight, then reduced
    loss = D.dispatch(_loss.binary_cross_entropy_op, (input, target), {"reduction": "none"}) * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_target_shape("binary_cross_entropy_with_logits", input, target)
    if not input.is_floating_point():
        raise RuntimeError(f"binary_cross_entropy_with_logits: not implemented for {input.dtype} input (logits "
                           f"of a floating point dtype are expected)")
    if weight is None and pos_weight is None and target.dtype == input.dtype:
        return D.dispatch(_loss.binary_cross_entropy_with_logits_op, (input, target), {"reduction": reduction})
    # log(1 + exp(-x)) computed stably as softplus(-x)
    sp = softplus(-input)
    if pos_weight is not None:
        lw = 1 + (pos_weight - 1) * target
        loss = (1 - target) * input + lw * sp
    else:
        loss = (1 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _loss.nll_loss(input, target, weight, ignore_index, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _loss.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = _reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _ops.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    _check_reduction(reduction)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(softplus(-target * input), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    cos = cosine_similarity(input1, input2, dim=-1, eps=1e-12)
    loss = _ops.where(target > 0, 1 - cos, _ops.clamp_min(cos - margin, 0.0))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(_ops.clamp_min(-target * (input1 - input2) + margin, 0.0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        t = target
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        loss = loss + _ops.where(t > 1, stirling, 0.0 * t)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if not isinstance(var, D.Tensor):  # a float: one variance for every element
        if var < 0:
            raise ValueError("gaussian_nll_loss: var has negative entry/entries")
        from .._creation import full_like
        var = full_like(input, float(var))
    elif bool((var < 0).any()):
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    vs, xs = tuple(var.shape), tuple(input.shape)
    if vs != xs:
        if vs == xs[:-1]:           # one dim short: one variance per row, over the last dim
            var = var.unsqueeze(-1)
        elif not (len(vs) == len(xs) and builtins.sum(v for x, v in zip(xs, vs) if x != v) == 1):
            raise ValueError(f"gaussian_nll_loss: var is of incorrect size {list(vs)} for input of size "
                             f"{list(xs)} (expected the input's size, with one dim 1 or the last dim left out)")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    # clamped for stability, with the gradient of var itself (PyTorch clamps without recording it)
    v = var + (_ops.clamp_min(var, eps) - var).detach()
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ----------------------------------------------------------------------------- 1-d pooling (on the 2-d kernels)


def _one(v):
    return v[0] if isinstance(v, (tuple, list)) else v


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"max_pool1d: expected 2D or 3D input, got {input.dim()}D")
    stride = kernel_size if stride is None or stride == [] else stride
    r = max_pool2d(input.unsqueeze(-2), (1, _one(kernel_size)), (1, _one(stride)), (0, _one(padding)),
                   (1, _one(dilation)), ceil_mode=ceil_mode, return_indices=return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"avg_pool1d: expected 2D or 3D input, got {input.dim()}D")
    stride = kernel_size if stride is None or stride == [] else stride
    return avg_pool2d(input.unsqueeze(-2), (1, _one(kernel_size)), (1, _one(stride)), (0, _one(padding)),
                      ceil_mode, count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _one(output_size))).squeeze(-2)


# ----------------------------------------------------------------------------- resampling, attention


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """'nearest' (PyTorch's index rule; one primitive, upsample_nearest) and 'linear'/'bilinear'/'trilinear'
    resampling of the trailing spatial dims, separably, from index_select and lerp weights."""
    linear_modes = {"linear": 1, "bilinear": 2, "trilinear": 3}
    if mode != "nearest" and mode not in linear_modes:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported by ember (nearest, linear, "
                                  "bilinear, trilinear)")
    nsp = input.dim() - 2
    if nsp < 1:
        raise ValueError(f"interpolate: expected an input with spatial dims (3D, 4D or 5D), got {input.dim()}D")
    if mode in linear_modes and linear_modes[mode] != nsp:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {linear_modes[mode] + 2}D input")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: exactly one of size or scale_factor should be defined")
    in_sizes = list(input.shape[2:])
    if size is not None:
        out_sizes = list(size) if isinstance(size, (tuple, list)) else [size] * nsp
        scales = [i / o for i, o in zip(in_sizes, out_sizes)]
    else:
        sf = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * nsp
        out_sizes = [int(math.floor(i * s)) for i, s in zip(in_sizes, sf)]
        scales = [1.0 / s if not recompute_scale_factor else i / o for s, i, o in zip(sf, in_sizes, out_sizes)]
    if antialias and mode != "nearest" and any(o < i for i, o in zip(in_sizes, out_sizes)):
        # antialiasing changes the result only when downsampling (a wider kernel); not implemented
        raise NotImplementedError("interpolate: antialias=True when downsampling is not supported by ember")
    if mode == "nearest":
        from ..ops.nn import upsample_nearest
        return upsample_nearest(input, [np.minimum(np.floor(np.arange(n_out) * np.float32(sc)).astype(np.int64),
                                                   n_in - 1) for n_in, n_out, sc in zip(in_sizes, out_sizes, scales)])
    out = input
    for k, (n_in, n_out, sc) in enumerate(zip(in_sizes, out_sizes, scales)):
        dim = 2 + k
        if align_corners:
            pos = np.arange(n_out) * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        else:
            pos = np.maximum((np.arange(n_out) + 0.5) * sc - 0.5, 0.0)
        i0 = np.minimum(np.floor(pos).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        w = (pos - i0).astype(input._data.dtype)
        shape = [1] * out.dim()
        shape[dim] = n_out
        wt = D._new_tensor(w.reshape(shape))
        a = _ops.index_select(out, dim, D._new_tensor(i0))
        b = _ops.index_select(out, dim, D._new_tensor(i1))
        out = a + (b - a) * wt
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """PyTorch's adaptive windows [floor(i*H/oh), ceil((i+1)*H/oh)); a plain max pool when they tile."""
    H, W = input.shape[-2], input.shape[-1]
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    oh = H if oh is None else oh
    ow = W if ow is None else ow
    if H % oh == 0 and W % ow == 0:
        k = (H // oh, W // ow)
        return max_pool2d(input, k, k, return_indices=return_indices)
    if return_indices:
        raise NotImplementedError("adaptive_max_pool2d: return_indices with windows that do not tile the input")
    rows = []
    for i in range(oh):
        h0, h1 = (i * H) // oh, -(-((i + 1) * H) // oh)
        cols = []
        for j in range(ow):
            w0, w1 = (j * W) // ow, -(-((j + 1) * W) // ow)
            cols.append(input[..., h0:h1, w0:w1].amax((-2, -1)))
        rows.append(_ops.stack(cols, -1))
    return _ops.stack(rows, -2)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """softmax(q k^T * scale + mask) v, composed from ember ops."""
    L, S = query.shape[-2], key.shape[-2]
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]  # grouped-query attention: each k/v head serves hq // hk heads
        if hq % hk or value.shape[-3] != hk:
            raise RuntimeError(f"scaled_dot_product_attention: with enable_gqa=True the number of query heads "
                               f"({hq}) must be a multiple of the key/value heads ({hk}, {value.shape[-3]})")
        key = key.repeat_interleave(hq // hk, dim=-3)
        value = value.repeat_interleave(hq // hk, dim=-3)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = _ops.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("scaled_dot_product_attention: attn_mask and is_causal cannot both be set")
        keep = D._new_tensor(np.tril(np.ones((L, S), bool)))
        attn = softmax(_ops.masked_fill(scores, ~keep, float("-inf")), -1)
    elif attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = _ops.masked_fill(scores, ~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
        # a query whose keys are all masked attends to nothing: zeros (PyTorch's), not softmax's nan
        dead = (scores == float("-inf")).all(-1, keepdim=True)
        attn = _ops.masked_fill(softmax(_ops.masked_fill(scores, dead, 0.0), -1), dead, 0.0)
    else:
        attn = softmax(scores, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p)
    return _ops.matmul(attn, value)


# ----------------------------------------------------------------------------- more normalisation, shuffles, losses


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight; eps defaults to the
    machine epsilon of the input's dtype, as in PyTorch."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(f"rms_norm: Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size {U.fmt_shape(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"rms_norm: expected weight of shape {list(shape)}, got {U.fmt_shape(weight.shape)}")
    if eps is None:
        eps = np.finfo(input.dtype.np).eps
    dims = tuple(range(input.dim() - k, input.dim()))
    y = input * _ops.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return y * weight if weight is not None else y


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Per-sample, per-channel normalisation over the spatial dims (batch_norm on a (1, N*C, ...) view)."""
    if input.dim() < 3:
        raise ValueError(f"instance_norm: expected 3D or more input (got {input.dim()}D input)")
    N, C = input.shape[0], input.shape[1]
    rm = running_mean.repeat(N) if running_mean is not None else None
    rv = running_var.repeat(N) if running_var is not None else None
    x = input.reshape((1, N * C) + tuple(input.shape[2:]))
    y = batch_norm(x, rm, rv, None, None, use_input_stats, momentum, eps).reshape(tuple(input.shape))
    if running_mean is not None and use_input_stats:
        from ..autograd.grad_mode import no_grad
        with no_grad():  # the per-sample updates averaged back into the per-channel statistics
            running_mean.copy_(rm.reshape(N, C).mean(0))
            running_var.copy_(rv.reshape(N, C).mean(0))
    shape = (1, C) + (1,) * (input.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    *lead, C, H, W = input.shape
    if C % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={C} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (C // (r * r), r, r, H, W))
    perm = tuple(range(n)) + tuple(n + i for i in (0, 3, 1, 4, 2))
    return x.permute(*perm).reshape(tuple(lead) + (C // (r * r), H * r, W * r))


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    *lead, C, H, W = input.shape
    if H % r or W % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, got "
                           f"{H}x{W} and {r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (C, H // r, r, W // r, r))
    perm = tuple(range(n)) + tuple(n + i for i in (0, 2, 4, 1, 3))
    return x.permute(*perm).reshape(tuple(lead) + (C * r * r, H // r, W // r))


def hardshrink(input, lambd=0.5):
    return _ops.where(input.abs() > lambd, input, 0.0 * input)


def softshrink(input, lambd=0.5):
    if not lambd >= 0:
        raise RuntimeError(f"softshrink: lambda must be in range [0, 1.79769e+308] for softshrink, but "
                           f"found to be {lambd}.")
    return _ops.where(input > lambd, input - lambd, _ops.where(input < -lambd, input + lambd, 0.0 * input))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: margin must be greater than 0, got {margin}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_ops.clamp_min(margin + d_pos - d_neg, 0.0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    # PyTorch's rule: the input counts where the target is not -1, the margin term where it is not 1
    pos = _ops.where(target != -1, input, 0.0)   # (0.0, not 0 * input: that is NaN at +-inf)
    neg = _ops.where(target != 1, _ops.clamp_min(margin - input, 0.0), 0.0)
    return _reduce(pos + neg, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(-1)
    return _reduce(loss, reduction)
