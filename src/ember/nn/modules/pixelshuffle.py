"""PixelShuffle and PixelUnshuffle at PyTorch's import path (torch.nn.modules.pixelshuffle)."""
from .activation import PixelShuffle, PixelUnshuffle  # noqa: F401
