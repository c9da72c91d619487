"""Identity, Linear, Bilinear."""
import math

from .module import Module
from ..parameter import Parameter
from .. import functional as F
from .. import init
from ..._creation import empty


def _weight_and_bias(module, weight_shape, bias_size, bias, dtype, device):
    """Uninitialised ``weight`` and ``bias`` parameters (``bias`` registered as None when off), as
    Linear, Bilinear and the ConvNd layers create them before reset_parameters()."""
    module.weight = Parameter(empty(weight_shape, dtype=dtype, device=device))
    if bias:
        module.bias = Parameter(empty(bias_size, dtype=dtype, device=device))
    else:
        module.register_parameter("bias", None)


class Identity(Module):
    """Return the input unchanged (arguments accepted and ignored)."""
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x A^T + b."""
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), out_features, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_ with a=sqrt(5): U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch does
        """Kaiming-uniform weight (a = sqrt(5)) and a uniform bias in [-1/sqrt(fan_in), 1/sqrt(fan_in)]."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        p = self._parameters
        if "weight" in p and "bias" in p:
            return F.linear(input, p["weight"], p["bias"])
        return F.linear(input, self.weight, self.bias)  # parameters replaced by plain tensors

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"



class NonDynamicallyQuantizableLinear(Linear):
    """Linear under the name PyTorch gives MultiheadAttention's out_proj (a marker for quantization)."""


class LazyLinear(Linear):
    """Linear layer whose in_features is read from the first input."""
    def __init__(self, out_features, bias=True, device=None, dtype=None):
        raise NotImplementedError("LazyLinear is not supported by ember: give in_features to nn.Linear")


class Bilinear(Module):
    """y = x1^T A x2 + b."""
    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), out_features, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight and bias uniform in [-1/sqrt(in1_features), 1/sqrt(in1_features)]."""
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
