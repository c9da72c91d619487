"""nn.init: in-place initialisers, run without recording gradients, with PyTorch's fan rules."""
import math
import warnings

import numpy as np

from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
           "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "sparse_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity ('relu', 'tanh', 'leaky_relu' with its slope, 'selu', ...)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill the tensor with uniform samples in [a, b) (in place, without recording gradients)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill the tensor with normal samples N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _skip_meta(init):
    """An initializer that draws its values itself: a 'meta' tensor (no data) is returned as is,
    with nothing drawn or allocated (as in PyTorch)."""
    import functools

    @functools.wraps(init)
    def f(tensor, *args, **kwargs):
        return tensor if getattr(tensor, "_meta", False) else init(tensor, *args, **kwargs)
    return f


@_skip_meta
def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Rejection sampling, as PyTorch 2.13 does it (so from the same draws): normal_(mean, std) over
    the whole tensor, again and again, each element keeping the first draw at its position that
    falls within [a, b]."""
    from .. import _creation as C
    if tensor.numel() == 0:
        return tensor
    if not a < b:
        raise ValueError(f"trunc_normal_: expected a < b, got a={a}, b={b}")
    mt = C._mt(generator)
    d = tensor._data.dtype
    n = tensor.numel()
    out = np.zeros(n, d)
    todo = np.ones(n, bool)
    for _ in range(100000):
        v = C._normal_values(mt, n, d, mean, std)
        m = todo & (v >= a) & (v <= b)
        out[m] = v[m]
        todo &= ~m
        if not todo.any():
            return _fill(tensor, out.reshape(tuple(tensor.shape)))
    raise RuntimeError(f"trunc_normal_: no draw of N({mean}, {std}**2) fell within [{a}, {b}] for some "
                       "elements after 100000 rounds; choose bounds nearer the mean")


def _fill(tensor, values):
    from .. import _dispatch as D
    with no_grad():
        return tensor.copy_(D._new_tensor(np.asarray(values, tensor._data.dtype)))


def constant_(tensor, val):
    """Fill the tensor with val."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill the tensor with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill the tensor with zeros."""
    return constant_(tensor, 0.0)


@_skip_meta
def eye_(tensor):
    """Fill a 2-D tensor with the identity matrix."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


@_skip_meta
def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta (keeps the input channels, per group)."""
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    out_per = sizes[0] // groups
    m = min(out_per, sizes[1])
    w = np.zeros(tuple(sizes))
    for g in range(groups):
        for k in range(m):
            idx = (g * out_per + k, k) + tuple(s // 2 for s in sizes[2:])
            w[idx] = 1
    return _fill(tensor, w)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    """He et al.'s standard deviation gain / sqrt(fan); None (with PyTorch's warning) for a
    zero-element tensor, which is left as it is."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op")
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan), fan from mode."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, std^2) with std = gain / sqrt(fan), fan from mode."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


@_skip_meta
def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix from the QR factorisation of a normal sample, times gain."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor  # no-op
    from .. import _creation as C
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    # standard normals of the tensor's dtype drawn into a (rows, cols) matrix (PyTorch's stream),
    # then QR of it (or of its transpose when wide), the signs of R's diagonal folded into Q
    d = tensor._data.dtype
    flat = C._normal_array(C._mt(generator), (rows, cols), d)
    if rows < cols:
        flat = flat.T
    from .. import linalg
    from .._creation import from_numpy
    q, r = linalg.qr(from_numpy(np.ascontiguousarray(flat)))  # (ember.linalg.qr: LAPACK's Householder QR)
    q = (q * r.diagonal().sign()).numpy()
    if rows < cols:
        q = q.T
    return _fill(tensor, (q * d.type(gain)).reshape(tuple(tensor.shape)))


@_skip_meta
def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-D tensor with N(0, std^2) samples and zero a fraction sparsity of each column."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .. import _creation as C
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        mt = C._mt(generator)
        w = tensor._data
        for c in range(cols):  # one permutation of the rows per column, its first num_zeros zeroed
            w[C._randperm_array(mt, rows)[:num_zeros], c] = 0
    return tensor


# the deprecated spellings without the trailing underscore
def _deprecated(fn):
    def f(*a, **k):
        warnings.warn(f"nn.init.{fn.__name__[:-1]} is now deprecated in favor of nn.init.{fn.__name__}.",
                      FutureWarning, stacklevel=2)
        return fn(*a, **k)
    f.__name__ = fn.__name__[:-1]
    return f


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
