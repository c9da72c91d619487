"""Padding modules over F.pad."""
from .module import Module
from .. import functional as F


class _PadNd(Module):
    _mode = "constant"
    _n = 2

    def __init__(self, padding, value=0.0):
        super().__init__()
        n = self._n
        self.padding = (padding,) * (2 * n) if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != 2 * n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or a {2 * n}-tuple, got {padding}")
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant":
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


class ConstantPad1d(_PadNd):
    """Pad the last dim with a constant."""
    _n = 1


class ConstantPad2d(_PadNd):
    """Pad the last 2 dims with a constant."""
    _n = 2


class ConstantPad3d(_PadNd):
    """Pad the last 3 dims with a constant."""
    _n = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last 2 dims with zeros."""
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (the edge not repeated)."""
    _mode, _n = "reflect", 1

    def __init__(self, padding):
        super().__init__(padding)


class ReflectionPad2d(_PadNd):
    """Pad the last 2 dims with their reflection (the edge not repeated)."""
    _mode, _n = "reflect", 2

    def __init__(self, padding):
        super().__init__(padding)


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values."""
    _mode, _n = "replicate", 1

    def __init__(self, padding):
        super().__init__(padding)


class ReplicationPad2d(_PadNd):
    """Pad the last 2 dims by repeating their edge values."""
    _mode, _n = "replicate", 2

    def __init__(self, padding):
        super().__init__(padding)


class CircularPad1d(_PadNd):
    """Pad the last dim circularly (wrapping around)."""
    _mode, _n = "circular", 1

    def __init__(self, padding):
        super().__init__(padding)


class CircularPad2d(_PadNd):
    """Pad the last 2 dims circularly (wrapping around)."""
    _mode, _n = "circular", 2

    def __init__(self, padding):
        super().__init__(padding)
