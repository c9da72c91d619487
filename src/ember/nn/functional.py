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
from .. import _dtype as _dtype_mod
from .. import ops as _ops
from ..ops import gelu, softplus, sigmoid, tanh, softmax, log_softmax  # noqa: F401
from ..ops import loss as _loss
from ..ops import _util as U
from ..ops import elementwise as _E
from . import _composite
from . import attention as _attention

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
    """ReLU activation, max(0, x)."""
    return input.relu_() if inplace else _ops.relu(input)


def relu_(input):
    """In-place ReLU."""
    return input.relu_()


def relu6(input, inplace=False):
    """min(max(0, x), 6).

    Differences from PyTorch: the gradient at a NaN input is 0 where PyTorch's is the incoming gradient
    (values agree)."""
    return _maybe_inplace(input, _ops.relu6(_src(input, inplace)), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """Leaky ReLU, x for x >= 0 and negative_slope * x otherwise."""
    return _maybe_inplace(input, _ops.leaky_relu(_src(input, inplace), negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False):
    """ELU activation, x for x > 0 and alpha * (exp(x) - 1) otherwise."""
    return _maybe_inplace(input, _ops.elu(_src(input, inplace), alpha), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to [min_val, max_val].

    Differences from PyTorch: the gradient at a NaN input is 0 where PyTorch's is the incoming gradient
    (values agree)."""
    if min_val > max_val:
        raise ValueError("hardtanh: min_val cannot be greater than max_val")
    return _maybe_inplace(input, _ops.hardtanh(_src(input, inplace), min_val, max_val), inplace)


def silu(input, inplace=False):
    """SiLU (swish), x * sigmoid(x)."""
    return _maybe_inplace(input, _ops.silu(_src(input, inplace)), inplace)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, value elsewhere."""
    x = _src(input, inplace)
    out = _ops.where(x <= threshold, value, x)  # NaN stays NaN (PyTorch)
    return input.copy_(out) if inplace else out


def leaky_relu_(input, negative_slope=0.01):
    """In-place leaky ReLU."""
    return leaky_relu(input, negative_slope, True)


def elu_(input, alpha=1.0):
    """In-place ELU."""
    return elu(input, alpha, True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place hardtanh."""
    return hardtanh(input, min_val, max_val, True)


def selu(input, inplace=False):
    """SELU activation."""
    out = D.dispatch(_E.elu_op, (_src(input, inplace),), {"alpha": 1.6732632423543772848170429916717,
                                           "scale": 1.0507009873554804934193349852946})
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    """CELU activation, max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    out = _ops.celu(_src(input, inplace), alpha)
    return input.copy_(out) if inplace else out


def hardsigmoid(input, inplace=False):
    """Hard sigmoid, relu6(x + 3) / 6."""
    out = D.dispatch(_E.hardsigmoid_op, (_src(input, inplace),))
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    """Hard swish, x * relu6(x + 3) / 6."""
    out = D.dispatch(_E.hardswish_op, (_src(input, inplace),))
    return input.copy_(out) if inplace else out


def mish(input, inplace=False):
    """Mish activation, x * tanh(softplus(x))."""
    out = D.dispatch(_E.mish_op, (_src(input, inplace),))
    return input.copy_(out) if inplace else out


def logsigmoid(input):
    """log(sigmoid(x)), computed stably."""
    return D.dispatch(_E.log_sigmoid_op, (input,))


def softsign(input):
    """x / (1 + abs(x))."""
    return input / (1 + input.abs())


def tanhshrink(input):
    """x - tanh(x)."""
    return input - input.tanh()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim."""
    return softmax(-input, dim, dtype=dtype)


def glu(input, dim=-1):
    """Gated linear unit: a * sigmoid(b), a and b the halves of the input along dim."""
    if input.is_complex():
        U.no_complex("glu_cpu", input._data)
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """Divide by the p-norm along dim (at least eps)."""
    n = _ops.norm(input, p, dim, keepdim=True)
    return U.write_out(input / _ops.clamp_min(n, eps).expand_as(input), out)


def one_hot(tensor, num_classes=-1):
    """One-hot encoding of int64 class indices (num_classes, or the largest index + 1): a comparison with
    arange(num_classes), so it batches (vmap) and traces like any composite."""
    if tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = U.raw_values(tensor)    # (under vmap: every batch row, for the checks only)
    if num_classes == -1:
        if tensor._wr is not None and getattr(tensor._wr, "kind", None) == "vmap":
            raise RuntimeError("one_hot: under vmap, please provide an explicit positive num_classes argument "
                               "(the largest class would be read from each batch row's values)")
        num_classes = int(a.max()) + 1 if a.size else 0
    if a.size and (a.min() < 0 or a.max() >= num_classes):
        raise RuntimeError(f"one_hot: Class values must be smaller than num_classes ({num_classes}), got "
                           f"{int(a.max())}." if a.max() >= num_classes
                           else f"one_hot: Class values must be non-negative, got {int(a.min())}.")
    from .._creation import arange
    return (tensor.unsqueeze(-1) == arange(num_classes)).to(tensor.dtype)   # (int64)


# ----------------------------------------------------------------------------- dropout


def _keep_mask(shape, p):
    """PyTorch's dropout noise: bernoulli_(1 - p) on the CPU stream (one float64 uniform per
    element, below 1 - p keeps it)."""
    from .._creation import _mt, _fill
    mt = _mt()
    q = 1.0 - p
    return _fill(np.empty(shape, np.bool_), lambda n: mt.uniform_f64(n) < q)


def _scaled_noise(input, shape, p):
    """bernoulli_(1 - p) noise of ``shape`` in input's dtype, divided by (1 - p) in that dtype."""
    d = input._data.dtype
    if d.kind == "c":  # (PyTorch draws the mask in input's dtype and has no complex bernoulli)
        U.no_complex("bernoulli_scalar_cpu_", input)
    if D.state.levels:  # under vmap the draw may differ per sample (randomness='different')
        from .._creation import bernoulli, zeros
        return bernoulli(zeros(shape, dtype=input.dtype), 1.0 - p) / (1.0 - p)
    keep = _keep_mask(shape, p).astype(d)
    return D._new_tensor(keep / d.type(1.0 - p))


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p (in training) and scale the rest by 1 / (1 - p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        m = D._new_tensor(np.zeros(input.shape, input._data.dtype))
    else:
        m = _scaled_noise(input, tuple(input.shape), p)
    if inplace:
        return input.mul_(m)
    return input * m


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) input with probability p."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           f"dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           f"channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability p."""
    import warnings
    d = input.dim()
    if d not in (3, 4):
        warnings.warn(f"dropout2d: Received a {d}-D input to dropout2d, which is deprecated and will result in an "
                      f"error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      f"inputs).", stacklevel=2)
    if d == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    # PyTorch's mask: one draw per (sample, channel) of the first two dims, whatever the rank
    return _channel_dropout(input, p, training, inplace, max(d - 2, 0))


def _channel_dropout(input, p, training, inplace, nd):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    shape = tuple(input.shape[:input.dim() - nd]) + (1,) * nd
    if p == 1.0:
        m = D._new_tensor(np.zeros(shape, input._data.dtype))
    else:
        m = _scaled_noise(input, shape, p)
    return input.mul_(m) if inplace else input * m


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout: keeps the mean and variance of SELU activations."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:  # everything dropped: zeros (PyTorch)
        return input.mul_(0.0) if inplace else input * 0.0
    if input.is_complex():
        U.no_complex("bernoulli_scalar_cpu_", input)
    alpha = -1.7580993408473766
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    keep = _keep_mask(tuple(input.shape), p)  # PyTorch's bernoulli_(1 - p) noise
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    k = D._new_tensor(keep.astype(input._data.dtype))
    out = (input * k + alpha * (1 - k)) * a + b
    return input.copy_(out) if inplace else out


# ----------------------------------------------------------------------------- shape helpers


def pad(input, pad, mode="constant", value=None):
    """Pad the trailing dims (modes 'constant', 'reflect', 'replicate', 'circular')."""
    return _composite.pad(input, pad, mode, value)


def bilinear(input1, input2, weight, bias=None):
    """y = x1^T A x2 + b."""
    return _ops.bilinear(input1, input2, weight, bias)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """p-norm distance between two batches of vectors (eps added to the difference)."""
    return _ops.norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


def pdist(input, p=2.0):
    """p-norm distances between all pairs of rows (the upper triangle, flattened)."""
    if input.dim() != 2 or input.shape[0] > 1:  # (PyTorch: one row or none gives an empty result first)
        U.no_lowp("pdist", input)
    if input.is_complex():
        raise RuntimeError("pdist only supports floating-point dtypes")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    d = _ops.index_select(input, 0, D._new_tensor(i.astype(np.int64))) - \
        _ops.index_select(input, 0, D._new_tensor(j.astype(np.int64)))
    return _ops.norm(d, p, -1)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine similarity along dim."""
    if x1.is_complex() or x2.is_complex():
        z = x1 if x1.is_complex() else x2
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{U.torch_scalar_name(z._data)}")
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
    for t in (input, target):
        if t.is_complex():  # PyTorch's error names its CPU kernel: mse_cpu, smooth_l1_cpu, huber_cpu
            U.no_complex(name.replace("_loss", "_cpu"), t._data)
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name}: not implemented for {input.dtype} input and {target.dtype} target "
                           f"(a floating point input or target is expected)")
    return (input if input.dtype is dtype else input.to(dtype)), (target if target.dtype is dtype else target.to(dtype))


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean (or sum) squared error."""
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
    """Mean (or sum) absolute error."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_broadcast("l1_loss", input, target)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1 loss: 0.5 x^2 / beta below beta, abs(x) - 0.5 beta above."""
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
    """Huber loss: squared error below delta, linear above."""
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
    """Binary cross-entropy between probabilities and targets."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_target_shape("binary_cross_entropy", input, target)
    if input.is_complex():
        U.no_complex("binary_cross_entropy", input)
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
    """Binary cross-entropy on logits (computed stably; pos_weight)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_target_shape("binary_cross_entropy_with_logits", input, target)
    if input.is_complex():
        U.no_complex("log_sigmoid_cpu", input)
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
    """Negative log-likelihood of class indices under log-probabilities."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _loss.nll_loss(input, target, weight, ignore_index, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross-entropy between logits and class indices or class probabilities."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _loss.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence from log-probability inputs to targets (log_target)."""
    reduction = _reduction(size_average, reduce, reduction)
    if input.is_complex() or target.is_complex():
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _ops.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    _check_reduction(reduction)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y * x)), the logistic loss on +-1 targets."""
    reduction = _reduction(size_average, reduce, reduction)
    if input.is_complex() or target.is_complex():  # PyTorch computes log(1 + exp(-y x)), without autograd
        loss = ((-target * input).exp() + 1).log()
        if loss.requires_grad:
            raise RuntimeError("soft_margin_loss does not support automatic differentiation for outputs with "
                               "complex dtype.")
        return _reduce(loss, reduction)
    return _reduce(softplus(-target * input), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) for y = 1, max(0, cos(x1, x2) - margin) for y = -1."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.is_complex() or input2.is_complex():  # (PyTorch's error: its composite clamps)
        raise NotImplementedError("clamp is not supported for complex types")
    cos = cosine_similarity(input1, input2, dim=-1, eps=1e-12)
    loss = _ops.where(target > 0, 1 - cos, _ops.clamp_min(cos - margin, 0.0))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -y * (x1 - x2) + margin)."""
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(_ops.clamp_min(-target * (input1 - input2) + margin, 0.0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log-likelihood of a Poisson target given its (log) rate."""
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
    """Negative log-likelihood of a Gaussian with predicted mean and variance."""
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


def _check_pool1d_input(name, input):
    """(C, L) or (N, C, L), where only N may be 0 (PyTorch)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"{name}: expected 2D or 3D input, got {input.dim()}D")
    if any(s == 0 for s in input.shape[input.dim() - 2:]):
        raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input (only the batch dim of a 3-D input may be 0), but got shape "
                           f"{list(input.shape)}")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max pooling over 1 spatial dim."""
    _check_pool1d_input("max_pool1d", input)
    if input.is_complex():  # (PyTorch's kernels: with indices, the 2-d one)
        U.no_complex("max_pool2d" if return_indices else "max_pool1d_impl", input)
    stride = kernel_size if stride is None or stride == [] else stride
    r = max_pool2d(input.unsqueeze(-2), (1, _one(kernel_size)), (1, _one(stride)), (0, _one(padding)),
                   (1, _one(dilation)), ceil_mode=ceil_mode, return_indices=return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Average pooling over 1 spatial dim."""
    _check_pool1d_input("avg_pool1d", input)
    stride = kernel_size if stride is None or stride == [] else stride
    return avg_pool2d(input.unsqueeze(-2), (1, _one(kernel_size)), (1, _one(stride)), (0, _one(padding)),
                      ceil_mode, count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to a given output length.

    Differences from PyTorch: 0-dim input raises IndexError where PyTorch raises RuntimeError."""
    if isinstance(output_size, (tuple, list)) and len(output_size) != 1:
        raise RuntimeError(f"adaptive_avg_pool1d() argument 'output_size' should contain one int (got "
                           f"{len(output_size)})")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _one(output_size))).squeeze(-2)


# ----------------------------------------------------------------------------- resampling, attention


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Every mode of PyTorch's interpolate (nearest, nearest-exact, linear, bilinear, bicubic,
    trilinear, area; antialias; align_corners): ember.ops.sampling."""
    from ..ops.sampling import interpolate as _interpolate
    return _interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Resize (interpolate under its old name)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """PyTorch's adaptive windows [floor(i*H/oh), ceil((i+1)*H/oh)); a plain max pool when they tile."""
    if input.is_complex():
        U.no_complex("adaptive_max_pool2d", input)
    from ..ops.nn import adaptive_output_dims
    adaptive_output_dims(input, output_size)
    H, W = input.shape[-2], input.shape[-1]
    if not isinstance(output_size, int) and len(output_size) != 2:
        raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    oh = H if oh is None else oh
    ow = W if ow is None else ow
    if oh < 0 or ow < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(oh, ow)}: "
                           f"{list(input.shape[:-2]) + [oh, ow]}")
    if oh == 0 or ow == 0:   # an empty result, as PyTorch's (still on the graph)
        out = input.amax((-2, -1), keepdim=True).expand(*input.shape[:-2], oh, ow)
        from .._creation import zeros
        return (out, zeros(tuple(out.shape), dtype=_dtype_mod.int64)) if return_indices else out
    if H % oh == 0 and W % ow == 0:
        k = (H // oh, W // ow)
        return max_pool2d(input, k, k, return_indices=return_indices)
    from ..ops.pool3d import _adaptive_max  # uneven windows: the index-table kernel (ops/pool3d.py)
    return _adaptive_max("adaptive_max_pool2d", 2, input, (oh, ow), return_indices)


def _dt_name(t):
    return str(t.dtype).split(".")[-1]


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """softmax(q k^T * scale + mask) v: one primitive without a mask tensor or dropout (ops/attention.py),
    composed from ember ops otherwise."""
    if len(_attention._enabled) < 5:  # a restricted sdpa_kernel(...) block is active
        _attention._check_viable()
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"scaled_dot_product_attention: Expected query, key, and value to have the same dtype, "
                           f"but got query.dtype: {_dt_name(query)} key.dtype: {_dt_name(key)} and value.dtype: "
                           f"{_dt_name(value)} instead.")
    if not (query.is_floating_point() or query.is_complex()):
        raise RuntimeError(f"scaled_dot_product_attention: expected query, key and value of a floating point "
                           f"dtype, got {_dt_name(query)}")
    L, S = query.shape[-2], key.shape[-2]
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]  # grouped-query attention: each k/v head serves hq // hk heads
        if hq % hk or value.shape[-3] != hk:
            raise RuntimeError(f"scaled_dot_product_attention: with enable_gqa=True the number of query heads "
                               f"({hq}) must be a multiple of the key/value heads ({hk}, {value.shape[-3]})")
        key = key.repeat_interleave(hq // hk, dim=-3)
        value = value.repeat_interleave(hq // hk, dim=-3)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if attn_mask is None and dropout_p == 0.0 and _ops._ATTN.usable(query, key, value):
        return _ops._ATTN.scaled_dot_product_attention(query, key, value, scale, is_causal)
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
        eps = _dtype_mod.finfo(input.dtype).eps
    dims = tuple(range(input.dim() - k, input.dim()))
    low = input.dtype in (_dtype_mod.float16, _dtype_mod.bfloat16)
    x = input.float() if low else input  # float32 inside, rounded once, as PyTorch
    y = x * _ops.rsqrt((x * x).mean(dims, keepdim=True) + eps)
    if low:
        y = y.to(input.dtype)
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
    # the affine step inside the batch norm (as PyTorch's kernel): one rounding for float16/bfloat16
    w = weight.repeat(N) if weight is not None else None
    b = bias.repeat(N) if bias is not None else None
    y = batch_norm(x, rm, rv, w, b, use_input_stats, momentum, eps).reshape(tuple(input.shape))
    if running_mean is not None and use_input_stats:
        from ..autograd.grad_mode import no_grad
        with no_grad():  # the per-sample updates averaged back into the per-channel statistics
            running_mean.copy_(rm.reshape(N, C).mean(0))
            running_var.copy_(rv.reshape(N, C).mean(0))
    return y


def pixel_shuffle(input, upscale_factor):
    """Rearrange (N, C*r*r, H, W) into (N, C, H*r, W*r)."""
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
    """Rearrange (N, C, H*r, W*r) into (N, C*r*r, H, W)."""
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
    """Hard shrinkage: x where abs(x) > lambd, 0 elsewhere."""
    if input.is_complex():
        U.no_complex("hardshrink_cpu", input._data)
    return _ops.where(input.abs() > lambd, input, 0.0 * input)


def softshrink(input, lambd=0.5):
    """Soft shrinkage: x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if not lambd >= 0:
        raise RuntimeError(f"softshrink: lambda must be in range [0, 1.79769e+308] for softshrink, but "
                           f"found to be {lambd}.")
    return _ops.where(input > lambd, input - lambd, _ops.where(input < -lambd, input + lambd, 0.0 * input))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance."""
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: margin must be greater than 0, got {margin}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_ops.clamp_min(margin + d_pos - d_neg, 0.0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x for y = 1, max(0, margin - x) for y = -1."""
    reduction = _reduction(size_average, reduce, reduction)
    # PyTorch's rule: the input counts where the target is not -1, the margin term where it is not 1
    pos = _ops.where(target != -1, input, 0.0)   # (0.0, not 0 * input: that is NaN at +-inf)
    neg = _ops.where(target != 1, _ops.clamp_min(margin - input, 0.0), 0.0)
    return _reduce(pos + neg, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Multi-label one-versus-all loss on logits."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(-1)
    return _reduce(loss, reduction)


# ----------------------------------------------------------------------------- 3-d convolution and pooling,
# adaptive/fractional max pooling, max unpooling (kernels in ember.ops.conv3d and ember.ops.pool3d)

from ..ops.conv3d import conv3d, conv_transpose3d, conv_transpose1d  # noqa: F401,E402
from ..ops.pool3d import (max_pool3d, max_pool3d_with_indices, avg_pool3d, adaptive_max_pool1d,  # noqa: F401,E402
                          adaptive_max_pool3d, adaptive_avg_pool3d, fractional_max_pool2d,
                          fractional_max_pool3d, max_unpool1d, max_unpool2d, max_unpool3d)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """Max pooling to a given output length, with the argmax indices."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """Max pooling to a given output size over 3 spatial dims, with the argmax indices."""
    return adaptive_max_pool3d(input, output_size, True)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over 2 spatial dims, with the indices."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over 3 spatial dims, with the indices."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)


# ----------------------------------------------------------------------------- nn breadth: composites of registry ops
# (prelu, rrelu, channel_shuffle, local_response_norm, margin losses, channel dropouts, unfold/fold, upsampling)


def prelu(input, weight):
    """x if x > 0 else weight * x, weight of one element or one per channel (dim 1; none below 2-D)."""
    if not U.is_tensor(input) or not U.is_tensor(weight):
        raise TypeError("prelu(): argument 'input' and 'weight' must be Tensors")
    from ..ops.pool3d import float_only
    float_only("prelu", input, weight)
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype.name} and {weight.dtype.name}")
    n = weight.numel()
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("prelu: Not allow zero-dim input tensor.")
        C = input.shape[1] if input.dim() >= 2 else 1
        if n != C:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                               f"numbers = {n} and channel size = {C}.")
        w = weight.reshape((1, -1) + (1,) * (input.dim() - 2)) if input.dim() >= 2 else weight
    else:
        w = weight.reshape(()) if weight.dim() else weight
    return _ops.where(input > 0, input, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training, and is
    (lower + upper) / 2 in evaluation."""
    from ..ops.pool3d import float_only
    float_only("rrelu", input)
    if training and input.dtype is _dtype_mod.float16:  # (PyTorch's CPU build: bfloat16 only)
        U.no_lowp("rrelu_with_noise_out_cpu", input)
    if lower > upper:
        raise RuntimeError(f"rrelu: Lower bound should be less than or equal to the upper bound, got lower={lower} "
                           f"and upper={upper}")
    if not training:  # (leaky_relu's slope, in the input's dtype: a float64 input keeps a float64 slope)
        out = _ops.where(input > 0, input, input * ((lower + upper) / 2))
        return input.copy_(out) if inplace else out
    # PyTorch's stream: one float64 uniform per element <= 0, in logical order, on [lower, upper) with
    # the bounds first rounded to the computing dtype (float32 below float64), the slope rounded to that
    # dtype too and the product computed in it (float16/bfloat16 rounded once after it)
    from .._creation import empty, ones
    low = input.dtype in (_dtype_mod.float16, _dtype_mod.bfloat16)
    work = input.float() if low else input
    if work.dtype is not _dtype_mod.float64:
        lower, upper = float(np.float32(lower)), float(np.float32(upper))
    neg = (input <= 0).detach()
    vals = empty((int(neg.sum()),), dtype=_dtype_mod.float64).uniform_(lower, upper)
    slope = ones(tuple(input.shape), dtype=work.dtype).masked_scatter(neg, vals.to(work.dtype))
    out = work * slope
    if low:
        out = out.to(input.dtype)
    return input.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place randomised leaky ReLU."""
    return rrelu(input, lower, upper, training, True)


def channel_shuffle(input, groups):
    """Shuffle the channels of (N, C, ...) input across groups."""
    groups = int(groups)
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with sizes "
                           f"{U.fmt_shape(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    C = input.shape[1]
    if C % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {C} channels and {groups} groups.")
    N = input.shape[0]
    rest = tuple(input.shape[2:])
    return input.reshape((N, groups, C // groups) + rest).transpose(1, 2).reshape((N, C) + rest)


def native_channel_shuffle(input, groups):
    """channel_shuffle (PyTorch's native variant)."""
    return channel_shuffle(input, groups)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of input^2 over `size` neighbouring channels (zero padded)) ** beta.

    Differences from PyTorch: float16 and bfloat16 input of 4 or more dims is computed where PyTorch
    raises NotImplementedError (3-D input is computed by both)."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    if input.is_complex():  # PyTorch averages the squares with avg_pool2d/3d, which have no complex kernel
        U.no_complex("avg_pool2d" if input.dim() == 3 else "avg_pool3d_out_frame", input._data)
    C = input.shape[1]
    sq = input * input
    lo, hi = size // 2, (size - 1) // 2
    pads = [0, 0] * (input.dim() - 2) + [lo, hi]
    sp = pad(sq, pads)
    acc = None
    for j in range(size):  # the window's offsets (size of them), each a whole-tensor slice
        t = sp.narrow(1, j, C)
        acc = t if acc is None else acc + t
    if not input.dtype.is_floating_point:  # integers: PyTorch averages with its truncating integer pooling
        div = ((acc.double() / size).trunc() * alpha + k) ** beta
        return input / div.float()
    div = (acc * (alpha / size) + k) ** beta
    return input / div


def _margin_target(target, C, op):
    if target.dtype.np.kind not in "iu":
        raise RuntimeError(f"{op}: expected target of an integer dtype (int64), got {target.dtype}")
    t = target._data
    if isinstance(t, np.ndarray) and not D.state.levels and t.size and (t.min() < -1 or t.max() >= C):
        raise RuntimeError(f"{op}: target out of range: values must lie in [0, {C}) (got {int(t.min())}..{int(t.max())})")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i]) ** p (times weight[y]) / C, per sample."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    op = "multi_margin_loss"
    U.no_lowp("multi_margin_loss_cpu_kernel", input)
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0) or input.numel() == 0 and input.dim() < 2:
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{U.fmt_shape(input.shape)}")
    from ..ops.pool3d import float_only
    float_only(op, input, name="multi_margin_loss_cpu_kernel")
    # a 0-dim input is one sample of one class (PyTorch accepts it: its loss is 0)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    N, C = x.shape
    t = target.reshape(-1)
    if t.shape[0] != N:
        raise RuntimeError(f"{op}: inconsistent target size: {U.fmt_shape(target.shape)} for input of size: "
                           f"{U.fmt_shape(input.shape)}")
    if weight is not None and weight.dim() != 1:  # (PyTorch's Python-level check: a ValueError)
        raise ValueError(f"{op}: weight must be one-dimensional, got a weight of size {U.fmt_shape(weight.shape)}")
    if weight is not None and weight.shape[0] != C:
        raise RuntimeError(f"{op}: inconsistent weight size, expected {C} but got {U.fmt_shape(weight.shape)}")
    _margin_target(t, C, op)
    xy = x.gather(1, t.unsqueeze(1))
    z = _ops.clamp_min(margin - xy + x, 0.0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.gather(0, t).unsqueeze(1)
    from .._creation import arange
    not_y = (arange(C).unsqueeze(0) != t.unsqueeze(1))
    loss = (z * not_y.to(z.dtype)).sum(1) / C
    if input.dim() <= 1:  # one sample: the target's shape, () or (1,) (as PyTorch)
        loss = loss.reshape(tuple(target.shape))
    elif target.dim() == 0 and reduction == "none":
        pass
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j (up to the first -1) and non-target classes i of
    max(0, 1 - (x[j] - x[i])) / C, per sample."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    op = "multilabel_margin_loss"
    U.no_lowp("multilabel_margin_loss_forward_out_frame", input)
    # a 0-dim input is one sample of one class, its target one label of 0 or 1 dims (PyTorch accepts it)
    scalar = input.dim() == 0 and target.dim() <= 1 and target.numel() == 1
    if not scalar and (input.dim() not in (1, 2) or tuple(target.shape) != tuple(input.shape)):
        raise RuntimeError(f"{op}: inconsistent target size: {U.fmt_shape(target.shape)} for input of size: "
                           f"{U.fmt_shape(input.shape)}")
    from ..ops.pool3d import float_only
    float_only(op, input)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target if target.dim() == 2 else target.reshape(1, -1)
    N, C = x.shape
    _margin_target(t, C, op)
    valid = (t >= 0).to(_int64()).cumprod(1) > 0                      # the labels before the first -1
    from .._creation import zeros, zeros_like, full_like
    safe = _ops.where(valid, t, zeros_like(t))
    slot = _ops.where(valid, t, full_like(t, C))
    is_t = zeros((N, C + 1), dtype=x.dtype).scatter(1, slot, 1.0)[:, :C]   # 1 for a target class
    xj = x.gather(1, safe)                                              # (N, J)
    m = _ops.clamp_min(1.0 - (xj.unsqueeze(2) - x.unsqueeze(1)), 0.0)  # (N, J, C)
    w = valid.to(x.dtype).unsqueeze(2) * (1.0 - is_t).unsqueeze(1)
    loss = (m * w).sum((1, 2)) / C
    if input.dim() <= 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def _int64():
    from .. import _dtype
    return _dtype.int64


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """Triplet margin loss with any distance function."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         f"instead")
    nd = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(nd)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {nd[0]}D, positive {nd[1]}D, and negative {nd[2]}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = _ops.minimum(d_neg, dist(positive, negative))
    return _reduce(_ops.clamp_min(margin + d_pos - d_neg, 0.0), reduction)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) input with probability p."""
    if input.dim() not in (4, 5):
        import warnings
        warnings.warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and will "
                      f"result in an error in a future release. To retain the behavior and silence this warning, "
                      f"please use dropout instead. Note that dropout3d exists to provide channel-wise dropout on "
                      f"inputs with 3 spatial dimensions, a channel dimension, and an optional batch dimension "
                      f"(i.e. 4D or 5D inputs).", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, 3 if input.dim() in (4, 5) else max(input.dim() - 1, 0))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (dim 1 of a batched input): a dropped channel takes SELU's
    negative saturation value, then the affine map that keeps mean and variance."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if input.dim() < 2:
        raise RuntimeError("feature_alpha_dropout: Feature dropout requires at least 2 dimensions in the input")
    if input.is_complex():
        U.no_complex("bernoulli_scalar_cpu_", input)
    alpha = -1.7580993408473766
    if p == 1.0:
        out = input * 0.0
        return input.copy_(out) if inplace else out
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    keep = D._new_tensor(_keep_mask(shape, p).astype(input._data.dtype))  # PyTorch's bernoulli_(1 - p) noise
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    out = (input * keep + alpha * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out


def _pair_arg(v, name, op):
    from ..ops.nn import _tuple
    return _tuple(v, 2, name, op)


def _eye_kernel(K, kh, kw, dtype):
    from .._creation import tensor
    return tensor(np.eye(K, dtype=dtype.np).reshape(K, 1, kh, kw))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C * kh * kw, L), the sliding blocks as columns (a convolution
    with an identity kernel, so its gradient is fold's and both are differentiable to any order)."""
    op = "unfold"
    if input.dim() not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    kh, kw = _pair_arg(kernel_size, "kernel_size", op)
    d = _pair_arg(dilation, "dilation", op)
    p = _pair_arg(padding, "padding", op)
    s = _pair_arg(stride, "stride", op)
    if min(kh, kw) <= 0 or min(d) <= 0 or min(s) <= 0 or min(p) < 0:
        raise RuntimeError(f"{op}: kernel size, dilation and stride should be greater than zero and padding "
                           f"non-negative, but got kernel_size={[kh, kw]} dilation={list(d)} padding={list(p)} "
                           f"stride={list(s)}")
    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    N, C, H, W = x.shape
    Ho = (H + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    Wo = (W + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    if Ho < 1 or Wo < 1:
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size=({kh}, {kw}), dilation=("
                           f"{d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of sliding "
                           f"blocks as ({Ho}, {Wo}), but its components must be at least one.")
    K = kh * kw
    if N * C == 0:  # no block: an empty result that stays in the graph (requires grad with the input)
        out = x.reshape(N, C * K, Ho * Wo)
    else:
        cols = conv2d(x.reshape(N * C, 1, H, W), _eye_kernel(K, kh, kw, x.dtype), None, s, p, d)
        out = cols.reshape(N, C * K, Ho * Wo)
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, unfold's adjoint: (N, C * kh * kw, L) -> (N, C, H, W), overlapping values summed."""
    op = "fold"
    if input.dim() not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                  f"(got {input.dim()}D)")
    H, W = _pair_arg(output_size, "output_size", op)
    kh, kw = _pair_arg(kernel_size, "kernel_size", op)
    d = _pair_arg(dilation, "dilation", op)
    p = _pair_arg(padding, "padding", op)
    s = _pair_arg(stride, "stride", op)
    if min(kh, kw) <= 0 or min(d) <= 0 or min(s) <= 0 or min(p) < 0:
        raise RuntimeError(f"{op}: kernel size, dilation and stride should be greater than zero and padding "
                           f"non-negative, but got kernel_size={[kh, kw]} dilation={list(d)} padding={list(p)} "
                           f"stride={list(s)}")
    unbatched = input.dim() == 2
    x = input.unsqueeze(0) if unbatched else input
    N, CK, L = x.shape
    K = kh * kw
    if CK % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={CK} and kernel_size=({kh}, {kw})")
    Ho = (H + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    Wo = (W + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    if Ho < 1 or Wo < 1 or Ho * Wo != L:
        raise RuntimeError(f"Given output_size=({H}, {W}), kernel_size=({kh}, {kw}), dilation=({d[0]}, {d[1]}), "
                           f"padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), expected size of input's dimension 2 "
                           f"to match the calculated number of sliding blocks {Ho} * {Wo} = {Ho * Wo}, but got "
                           f"input.size(2)={L}.")
    C = CK // K
    if N * C == 0:
        from .._creation import zeros
        out = zeros((N, C, H, W), dtype=x.dtype)
    else:
        # the rows/columns past the last block's reach (fewer than a stride) come as output padding
        eh = H - ((Ho - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + 1)
        ew = W - ((Wo - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + 1)
        y = conv_transpose2d(x.reshape(N * C, K, Ho, Wo), _eye_kernel(K, kh, kw, x.dtype), None, s, p, (eh, ew), 1, d)
        out = y.reshape(N, C, H, W)
    return out.squeeze(0) if unbatched else out


def upsample_nearest(input, size=None, scale_factor=None):
    """Nearest-neighbour resize (deprecated in PyTorch for interpolate)."""
    import warnings
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Bilinear resize with align_corners=True (deprecated in PyTorch for interpolate)."""
    import warnings
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


from ..ops.sampling import grid_sample, affine_grid  # noqa: F401,E402
from ..ops.ctc import ctc_loss  # noqa: F401,E402


# ----------------------------------------------------------------------------- multi_head_attention_forward


def _canonical_mask(mask, dtype):
    if mask is None:
        return None
    if mask.dtype.name == "bool":
        from .._creation import zeros
        return _ops.masked_fill(zeros(tuple(mask.shape), dtype=dtype), mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of masks are supported, got {mask.dtype}")
    return mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """PyTorch's functional multi-head attention (inputs (L, N, E) sequence-first, or unbatched
    (L, E)), composed from ember ops."""
    from .._creation import zeros
    fl = [t for t in (query, key, value, in_proj_weight, in_proj_bias, bias_k, bias_v, out_proj_weight, out_proj_bias,
                      q_proj_weight, k_proj_weight, v_proj_weight) if t is not None]
    kinds = sorted({t.dtype.name for t in fl})
    if len(kinds) == 1 and fl[0].is_complex():  # (PyTorch's error: its attention softmax has no complex kernel)
        U.no_complex("softmax_lastdim_kernel_impl", fl[0])
    if len(kinds) > 1 or not fl[0].dtype.is_floating_point:
        raise RuntimeError(f"multi_head_attention_forward: expected floating point query, key, value and weights "
                           f"of one dtype, got {', '.join(kinds)}")
    batched = query.dim() == 3
    if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"query, key and value should be all 2-D (unbatched) or 3-D (batched) tensors, got "
                             f"{query.dim()}-D, {key.dim()}-D and {value.dim()}-D")
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    S = key.shape[0]
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    H = num_heads
    hd = E // H
    if hd * H != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {H}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal mask is applied by scaled_dot_product_attention
    else:
        is_causal = False
    key_padding_mask = _canonical_mask(key_padding_mask, query.dtype)
    attn_mask = _canonical_mask(attn_mask, query.dtype)
    # input projections
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        wq, wk, wv = in_proj_weight.chunk(3, 0)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or "
                                 "v_proj_weight is None")
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    bq, bk, bv = in_proj_bias.chunk(3, 0) if in_proj_bias is not None else (None, None, None)
    q = linear(query, wq, bq)
    k = linear(key, wk, bk)
    v = linear(value, wv, bv)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(L, S)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (N * H, L, S):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(N * H, L, S)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = _ops.cat([k, bias_k.repeat(1, N, 1)])
        v = _ops.cat([v, bias_v.repeat(1, N, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    q = q.reshape(L, N * H, hd).transpose(0, 1)
    k = k.reshape(k.shape[0], N * H, hd).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(v.shape[0], N * H, hd).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        k = _ops.cat([k, zeros((N * H, 1, hd), dtype=k.dtype)], 1)
        v = _ops.cat([v, zeros((N * H, 1, hd), dtype=v.dtype)], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    S2 = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S2):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S2)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(N, 1, 1, S2).expand((N, H, 1, S2)).reshape(N * H, 1, S2)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        qs = q * math.sqrt(1.0 / hd)
        scores = _ops.matmul(qs, k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        w = softmax(scores, -1)
        if dropout_p > 0.0:
            w = dropout(w, dropout_p)
        out = _ops.matmul(w, v)
        out = out.transpose(0, 1).reshape(L * N, E)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(L, N, out_proj_weight.shape[0])
        w = w.reshape(N, H, L, S2)
        if average_attn_weights:
            w = w.mean(1)
        if not batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        attn_mask = attn_mask.reshape(N, H, -1, S2) if attn_mask.shape[0] != 1 else attn_mask.unsqueeze(0)
    out = scaled_dot_product_attention(q.reshape(N, H, L, hd), k.reshape(N, H, S2, hd), v.reshape(N, H, S2, hd),
                                       attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(L * N, E)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(L, N, out_proj_weight.shape[0])
    if not batched:
        out = out.squeeze(1)
    return out, None


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...): PyTorch's reference
    definition (``options`` only selects PyTorch's memory-saving chunked evaluation, whose result is
    the same; ember evaluates the reference)."""
    from ..ops.pool3d import float_only
    float_only("linear_cross_entropy", input, linear_weight, linear_bias)
    if options is not None:
        from .modules.linear_cross_entropy_options import LinearCrossEntropyOptions
        if not isinstance(options, LinearCrossEntropyOptions):
            raise TypeError(f"linear_cross_entropy(): options must be a LinearCrossEntropyOptions or None, got "
                            f"{type(options).__name__}")
    if ignore_index is not None and U.is_tensor(target) and target.is_floating_point():
        raise RuntimeError(f"linear_cross_entropy: ignore_index cannot be specified when target contains "
                           f"probabilities (target of dtype {target.dtype} and shape {U.fmt_shape(target.shape)}, "
                           f"ignore_index={ignore_index})")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"linear_cross_entropy: expected linear_weight of 2 or more dims (out_features..., "
                           f"in_features), got {U.fmt_shape(linear_weight.shape)}")
    out_shape = tuple(linear_weight.shape[:-1])
    if linear_weight.dim() > 2 and input.dim() < 2:
        raise RuntimeError(f"linear_cross_entropy: K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, {linear_weight.shape[-1]}), got "
                           f"unbatched input with shape {tuple(input.shape)}")
    if linear_weight.dim() == 2:
        logits = linear(input, linear_weight, linear_bias)
    else:
        w2 = linear_weight.reshape(-1, linear_weight.shape[-1])
        b2 = linear_bias.reshape(-1) if linear_bias is not None else None
        logits = linear(input, w2, b2)
        logits = logits.reshape(tuple(input.shape[:-1]) + out_shape)
    if logits.numel() == 0 and reduction != "none":  # no sample: PyTorch's sum 0 and mean nan
        return logits.sum() * (float("nan") if reduction == "mean" else 1.0)
    return cross_entropy(logits, target, weight=weight, ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)
