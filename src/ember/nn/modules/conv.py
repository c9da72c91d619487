"""Conv1d, Conv2d, ConvTranspose1d/2d: parameters, PyTorch's initialisation and padding modes; the
computation is nn.functional's (ember.ops.nn kernels)."""
import math

from .module import Module
from .linear import _weight_and_bias
from .. import functional as F
from .. import init


def _ntuple(n, name="value"):
    def parse(x):
        if isinstance(x, (tuple, list)):
            if len(x) != n:
                raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {x}")
            return tuple(x)
        return (x,) * n
    return parse


_single, _pair = _ntuple(1), _ntuple(2)


class _ConvNd(Module):
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        tup = _ntuple(self._n)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_modes:
            raise ValueError(f"padding_mode must be one of {valid_modes}, but got padding_mode='{padding_mode}'")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in tup(stride)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride)
        self.padding = padding if isinstance(padding, str) else tup(padding)
        self.dilation = tup(dilation)
        self.transposed = transposed
        self.output_padding = tup(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad order (last dim first), each side twice, for the non-zero padding modes
        if isinstance(self.padding, str):
            self._mode_padding = [0, 0] * self._n
            if padding == "same":
                for d, k, i in zip(self.dilation, self.kernel_size, range(self._n - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._mode_padding[2 * i] = left
                    self._mode_padding[2 * i + 1] = total - left
        else:
            self._mode_padding = [p for p in reversed(self.padding) for _ in range(2)]
        if transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        _weight_and_bias(self, shape, out_channels, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        """Kaiming-uniform weight (a = sqrt(5)) and a uniform bias in [-1/sqrt(fan_in), 1/sqrt(fan_in)]."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    """Conv1d/Conv2d: subclasses set the dimension ``_n`` and the functional ``_conv``."""
    _conv = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                         bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        conv = type(self)._conv
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._mode_padding, mode=self.padding_mode),
                        weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        p = self._parameters
        if "weight" in p and "bias" in p:
            return self._conv_forward(input, p["weight"], p["bias"])
        return self._conv_forward(input, self.weight, self.bias)  # parameters replaced by plain tensors


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) input (stride, padding, dilation, groups, padding_mode)."""
    _n = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) input (stride, padding, dilation, groups, padding_mode)."""
    _n = 2
    _conv = staticmethod(F.conv2d)


class _ConvTransposeNd(_ConvNd):
    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._n
        output_size = list(output_size)[-n:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: output_size must have {n} or {n + 2} elements")
        res = []
        for d in range(n):
            size_in = input.shape[input.dim() - n + d]
            min_size = ((size_in - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            max_size = min_size + self.stride[d] - 1
            if not min_size <= output_size[d] <= max_size:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{min_size} to {max_size} (for an input of {list(input.shape[2:])})")
            res.append(output_size[d] - min_size)
        return tuple(res)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution (the gradient of Conv2d with respect to its input)."""
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                  self.dilation)


# ----------------------------------------------------------------------------- 3-d convolution, 1-d/3-d transposed


class Conv3d(_Conv):
    """3-D convolution over (N, C, D, H, W) input."""
    _n = 3
    _conv = staticmethod(F.conv3d)


class _ConvTranspose(_ConvTransposeNd):
    """ConvTranspose1d/3d: subclasses set ``_n`` and the functional ``_convt``."""
    _convt = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return type(self)._convt(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                 self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution (the gradient of Conv1d with respect to its input)."""
    _n = 1
    _convt = staticmethod(F.conv_transpose1d)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution (the gradient of Conv3d with respect to its input)."""
    _n = 3
    _convt = staticmethod(F.conv_transpose3d)
