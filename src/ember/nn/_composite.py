"""nn.functional pieces composed from ember ops: pad, and the normalisation/embedding functions
used until (or where) ember.ops.nn provides a kernel of the same name and signature."""
import numpy as np

from .. import _dispatch as D
from .. import ops as _ops
from ..autograd.grad_mode import no_grad
from ..ops.linalg import linear  # noqa: F401  (the core registry's linear primitive)


def _size(s):
    return "torch.Size([" + ", ".join(str(v) for v in s) + "])"


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    if input.dim() < 2:
        raise ValueError(f"batch_norm: expected 2D or more input (got {input.dim()}D input)")
    C = input.shape[1]
    shape = (1, C) + (1,) * (input.dim() - 2)
    dims = (0,) + tuple(range(2, input.dim()))
    n = input.numel() // C if C else 0
    if training:
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{_size(input.shape)}")
    if training or running_mean is None:
        mean = input.mean(dims)
        var = input.var(dims, unbiased=False)
        if training and running_mean is not None and not running_mean._meta:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
                running_var.mul_(1 - momentum).add_(var.detach() * (momentum * n / (n - 1)))
    else:
        mean, var = running_mean, running_var
    y = (input - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size"
                           f"{list(input.shape)}")
    dims = tuple(range(input.dim() - k, input.dim()))
    mean = input.mean(dims, keepdim=True)
    var = input.var(dims, unbiased=False, keepdim=True)
    y = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    N, C = input.shape[0], input.shape[1]
    if C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {list(input.shape)} and num_groups={num_groups}")
    x = input.reshape(N, num_groups, -1)
    mean = x.mean(2, keepdim=True)
    var = x.var(2, unbiased=False, keepdim=True)
    y = ((x - mean) * (var + eps).rsqrt()).reshape(input.shape)
    shape = (1, C) + (1,) * (input.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if input.dtype.name not in ("int64", "int32"):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {input.dtype} instead")
    if not D.state.levels:
        a = input._data
        if a.size and (a.min() < -weight.shape[0] or a.max() >= weight.shape[0]):
            raise IndexError("index out of range in self")
    if max_norm is not None:
        with no_grad():
            rows = np.unique(input._data)
            w = weight._data
            norms = np.linalg.norm(w[rows], ord=norm_type, axis=1) if norm_type != 2 else \
                np.sqrt((w[rows] ** 2).sum(1))
            scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
            w[rows] *= scale[:, None].astype(w.dtype)
            weight._bump("embedding_renorm_")
    if padding_idx is not None and weight.requires_grad:
        # the padding row's value is used as is, but it receives no gradient
        if padding_idx < 0:
            padding_idx += weight.shape[0]
        keep = np.ones((weight.shape[0], 1), weight._data.dtype)
        keep[padding_idx] = 0
        k = D._new_tensor(keep)
        weight = weight * k + (weight * (1 - k)).detach()
    out = _ops.index_select(weight, 0, input.reshape(-1))
    return out.reshape(tuple(input.shape) + (weight.shape[1],))


def pad(input, pad, mode="constant", value=None):
    if len(pad) % 2 or len(pad) // 2 > input.dim():
        raise ValueError("Padding length must be divisible by 2 and at most twice the number of dims")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: mode {mode!r} is not one of constant, reflect, replicate, circular")
    if mode != "constant":
        k = len(pad) // 2
        if k not in (1, 2, 3) or input.dim() not in (k + 1, k + 2):
            raise NotImplementedError(
                f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor. Non-constant "
                "padding supports: 2D or 3D input with padding size 2, 3D or 4D input with size 4, 4D or "
                "5D input with size 6")
    out = input
    for k in range(len(pad) // 2):
        dim = input.dim() - 1 - k
        lo, hi = int(pad[2 * k]), int(pad[2 * k + 1])
        if lo == 0 and hi == 0:
            continue
        n = out.shape[dim]
        idx = np.arange(-lo, n + hi)
        if mode == "constant":
            inside = (idx >= 0) & (idx < n)
            src = np.clip(idx, 0, max(n - 1, 0))
        elif mode == "reflect":
            if lo >= n or hi >= n:
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({lo}, {hi}) at dimension {dim} of input "
                                   f"{list(input.shape)}")
            period = 2 * (n - 1) if n > 1 else 1
            m = np.mod(idx, period)
            src = np.where(m < n, m, period - m)
        elif mode == "replicate":
            src = np.clip(idx, 0, n - 1)
        else:
            if lo > n or hi > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            src = np.mod(idx, n)
        taken = _ops.index_select(out, dim, D._new_tensor(src.astype(np.int64)))
        if mode == "constant":
            shape = [1] * out.dim()
            shape[dim] = len(idx)
            mask = D._new_tensor(inside.reshape(shape))
            fill = 0.0 if value is None else value
            taken = _ops.where(mask, taken, fill)
        out = taken
    return out
