"""Activation modules."""
from .module import Module
from .. import functional as F
from ... import ops as _ops


class ReLU(Module):
    """ReLU activation, max(0, x)."""
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return input.relu_() if self.inplace else _ops.relu(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU6(Module):
    """min(max(0, x), 6)."""
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, 0.0, 6.0, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """Leaky ReLU, x for x >= 0 and negative_slope * x otherwise."""
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """ELU activation, x for x > 0 and alpha * (exp(x) - 1) otherwise."""
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """GELU activation, x * Phi(x) (approximate='tanh': the tanh formula)."""
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """SiLU (swish) activation, x * sigmoid(x)."""
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Mish(Module):
    """Mish activation, x * tanh(softplus(x))."""
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input, self.inplace)


class Hardtanh(Module):
    """Clamp to [min_val, max_val]."""
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class Hardsigmoid(Module):
    """Hard sigmoid, relu6(x + 3) / 6."""
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Hardswish(Module):
    """Hard swish, x * relu6(x + 3) / 6."""
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above threshold."""
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Tanh(Module):
    """Hyperbolic tangent."""
    def forward(self, input):
        return _ops.tanh(input)


class Sigmoid(Module):
    """Logistic sigmoid, 1 / (1 + exp(-x))."""
    def forward(self, input):
        return _ops.sigmoid(input)


class LogSigmoid(Module):
    """log(sigmoid(x)), computed stably."""
    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    """x / (1 + abs(x))."""
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x)."""
    def forward(self, input):
        return F.tanhshrink(input)


class SELU(Module):
    """SELU activation, scale * elu(x, alpha) with the self-normalising constants."""
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, self.inplace)


class CELU(Module):
    """CELU activation, max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GLU(Module):
    """Gated linear unit: a * sigmoid(b), a and b the halves of the input along dim."""
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Threshold(Module):
    """x where x > threshold, value elsewhere."""
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class _DimSoftmax(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        dim = self.dim
        if dim is None:  # PyTorch's legacy implicit choice of dim
            dim = 0 if input.dim() in (0, 1, 3) else 1
        return type(self)._fn(input, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_DimSoftmax):
    """Softmax along dim."""
    _fn = staticmethod(_ops.softmax)


class LogSoftmax(_DimSoftmax):
    """log(softmax(x)) along dim, computed stably."""
    _fn = staticmethod(_ops.log_softmax)


class Softmin(_DimSoftmax):
    """softmax(-x) along dim."""
    _fn = staticmethod(lambda x, d: _ops.softmax(-x, d))


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input."""
    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return _ops.softmax(input, -3)


class PReLU(Module):
    """Leaky ReLU whose negative slope is a learned parameter (one, or one per channel)."""
    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        from ..parameter import Parameter
        from ..._creation import full
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype))

    def reset_parameters(self):
        """Set the slope(s) back to init."""
        from .. import init as _init
        _init.constant_(self.weight, self.init)

    def forward(self, input):
        from .. import functional as F
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Hardshrink(Module):
    """Hard shrinkage: x where abs(x) > lambd, 0 elsewhere."""
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """Soft shrinkage: x - lambd above lambd, x + lambd below -lambd, 0 between."""
    def forward(self, input):
        return F.softshrink(input, self.lambd)


class PixelShuffle(Module):
    """Rearrange (N, C*r*r, H, W) into (N, C, H*r, W*r)."""
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Rearrange (N, C, H*r, W*r) into (N, C*r*r, H, W)."""
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class RReLU(Module):
    """Randomised leaky ReLU: a random slope in [lower, upper] in training, their mean in evaluation."""
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        from .. import functional as F
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")
