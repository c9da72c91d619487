"""PyTorch's native_* normalization entry points that programs (and exported graphs) call directly:
native_layer_norm, native_batch_norm, _native_batch_norm_legit, _batch_norm_with_update,
native_group_norm (each returning the statistics it used next to its output), and the backward
helpers _softmax_backward_data and native_dropout_backward. Composites of the nn kernels and
reductions, so their rules come from those."""
from . import _util as U
from . import shape as _S


def _stats(x, dims, eps):
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, unbiased=False, keepdim=True)
    return mean, (var + eps).rsqrt()


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    from .nn import layer_norm
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.dim() - k:]) != normalized_shape or k == 0:
        raise RuntimeError(f"native_layer_norm: expected input with shape [*, {', '.join(map(str, normalized_shape))}]"
                           f", but got input of size {list(input.shape)}")
    out = layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.dim() - k, input.dim()))
    mean, rstd = _stats(input, dims, eps)
    return out, mean, rstd


def _bn(input, weight, bias, running_mean, running_var, training, momentum, eps, name):
    from .nn import batch_norm
    from .._creation import empty
    if input.dim() < 2:
        raise RuntimeError(f"{name}: expected an input with at least 2 dims (N, C, ...), got {list(input.shape)}")
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        z = empty((0,), dtype=input.dtype)
        return out, z, z.clone()
    dims = (0,) + tuple(range(2, input.dim()))
    mean, rstd = _stats(input.detach(), dims, eps)  # (PyTorch's saved statistics carry no gradient)
    return out, _S.reshape(mean, (-1,)), _S.reshape(rstd, (-1,))


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    return _bn(input, weight, bias, running_mean, running_var, training, momentum, eps, "native_batch_norm")


def _native_batch_norm_legit(input, weight, bias, running_mean, running_var, training=None, momentum=None,
                             eps=None):
    if isinstance(running_mean, bool):  # the overload without running statistics
        training, momentum, eps = running_mean, running_var, training
        running_mean = running_var = None
    return _bn(input, weight, bias, running_mean, running_var, training, momentum, eps, "_native_batch_norm_legit")


def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    from .._creation import empty
    from .. import uint8
    out, mean, rstd = _bn(input, weight, bias, running_mean, running_var, True, momentum, eps,
                          "_batch_norm_with_update")
    return out, mean, rstd, empty((0,), dtype=uint8)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    from .nn import group_norm
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"native_group_norm: expected an input of N * C * HxW = {N * C * HxW} elements, got "
                           f"{list(input.shape)}")
    if C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={group}")
    out = group_norm(input, group, weight, bias, eps)
    g = _S.reshape(input, (N, group, (C // group) * HxW))
    mean, rstd = _stats(g, (2,), eps)
    return out, _S.reshape(mean, (N, group)), _S.reshape(rstd, (N, group))


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """The gradient of softmax at its output: output * (grad - sum(grad * output, dim))."""
    d = U.wrap_dim(dim, max(output.dim(), 1), "_softmax_backward_data")
    if output.is_complex() or grad_output.is_complex():
        U.no_complex("softmax_backward_lastdim_kernel_impl" if d == max(output.dim(), 1) - 1 else
                     "softmax_backward_kernel_impl", output if output.is_complex() else grad_output)
    if output.dim() == 0:
        return grad_output * 0
    if U.is_lowp(output._data) and grad_output.dtype is output.dtype:  # float32 inside, rounded once
        y, go = output.float(), grad_output.float()
        g = (y * (go - (go * y).sum(d, keepdim=True))).to(output.dtype)
    else:
        g = output * (grad_output - (grad_output * output).sum(d, keepdim=True))
    return g if input_dtype is None or g.dtype == input_dtype else g.to(input_dtype)


def native_dropout_backward(grad_output, mask, scale):
    return grad_output * mask.to(grad_output.dtype) * scale


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDING = ("zeros", "border", "reflection")


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, nd):
    from .sampling import grid_sample
    if input.dim() != nd + 2:
        raise RuntimeError(f"grid_sampler_{nd}d(): expected {nd + 2}D input, but got input with sizes "
                           f"{list(input.shape)}")
    if not (0 <= interpolation_mode < len(_GRID_MODES)) or (nd == 3 and interpolation_mode == 2):
        raise RuntimeError(f"grid_sampler_{nd}d(): unsupported interpolation mode {interpolation_mode}")
    if not 0 <= padding_mode < len(_GRID_PADDING):
        raise RuntimeError(f"grid_sampler_{nd}d(): unsupported padding mode {padding_mode}")
    return grid_sample(input, grid, _GRID_MODES[interpolation_mode], _GRID_PADDING[padding_mode], align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_2d: grid_sample with the modes as PyTorch's enum values (0 bilinear, 1 nearest,
    2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 2)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 3)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, input.dim() - 2)
