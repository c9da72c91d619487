"""ember.nn.functional: PyTorch's functional interface.

Activations and softmax come from the core registry (ember.ops), the compute kernels
(convolution, pooling, normalisation, linear, embedding) from ember.ops.nn, and the losses
from ember.ops.loss plus compositions of ember ops here, so every function is differentiable,
forward-mode and vmap compatible through the registry's rules.
"""
import math

import numpy as np

from .. import _dispatch as D
from .. import ops as _ops
from .._tensor import Tensor
from .._creation import _gen
from ..ops import (relu, leaky_relu, elu, hardtanh, gelu, silu, softplus, sigmoid, tanh,  # noqa: F401
                   softmax, log_softmax, relu6)
from ..ops import loss as _loss
from . import _composite

try:  # the compute kernels (conv, pooling, norms, linear, embedding) of the registry
    from ..ops import nn as _kernels
except ImportError:  # pragma: no cover - only before the kernels land
    _kernels = None

_KERNELS = ("conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
            "batch_norm", "layer_norm", "group_norm", "linear", "embedding", "embedding_bag")
for _name in _KERNELS:
    _f = getattr(_kernels, _name, None) or getattr(_composite, _name, None)
    if _f is not None:
        globals()[_name] = _f
del _name, _f


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
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ----------------------------------------------------------------------------- activations


def relu_(input):
    return input.relu_()


def threshold(input, threshold, value, inplace=False):
    out = _ops.where(input > threshold, input, value)
    return input.copy_(out) if inplace else out


def leaky_relu_(input, negative_slope=0.01):
    return input.copy_(leaky_relu(input, negative_slope))


def selu(input, inplace=False):
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    out = scale * elu(input, alpha)
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    out = _ops.maximum(input, 0.0 * input) + _ops.minimum(0.0 * input, alpha * ((input / alpha).exp() - 1))
    return input.copy_(out) if inplace else out


def hardsigmoid(input, inplace=False):
    out = _ops.clamp(input / 6 + 0.5, 0.0, 1.0)
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    out = input * _ops.clamp(input + 3, 0.0, 6.0) / 6
    return input.copy_(out) if inplace else out


def mish(input, inplace=False):
    out = input * softplus(input).tanh()
    return input.copy_(out) if inplace else out


def logsigmoid(input):
    return -softplus(-input)


def softsign(input):
    return input / (1 + input.abs())


def tanhshrink(input):
    return input - input.tanh()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim)


def glu(input, dim=-1):
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    n = _ops.norm(input, p, dim, keepdim=True)
    return input / _ops.clamp_min(n, eps).expand_as(input)


def one_hot(tensor, num_classes=-1):
    if tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = tensor._data
    if num_classes == -1:
        num_classes = int(a.max()) + 1 if a.size else 0
    if a.size and (a.min() < 0 or a.max() >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if a.max() >= num_classes
                           else "Class values must be non-negative.")
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
    if not training or p == 0.0:
        return input
    shape = tuple(input.shape[:-nd]) + (1,) * nd
    keep = (_gen().random(shape) >= p).astype(input._data.dtype) / (1.0 - p if p < 1 else 1.0)
    m = D._new_tensor(keep)
    return input.mul_(m) if inplace else input * m


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    if not training or p == 0.0:
        return input
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


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
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


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_broadcast("mse_loss", input, target)
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
    d = (input - target).abs()
    if beta == 0.0:
        loss = d
    else:
        loss = _ops.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _check_reduction(reduction)
    _check_broadcast("huber_loss", input, target)
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
        raise RuntimeError("all elements of input should be between 0 and 1")
    # log is clamped at -100 as PyTorch does, so that log(0) gives a finite loss
    with np.errstate(divide="ignore"):
        logp = _ops.clamp_min(input.log(), -100.0)
        log1mp = _ops.clamp_min((1 - input).log(), -100.0)
    loss = -(target * logp + (1 - target) * log1mp)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_target_shape("binary_cross_entropy_with_logits", input, target)
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
    v = _ops.clamp_min(var, eps)
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
