"""Models: torchvision's ResNets (same structure, attribute names and state_dict keys) and the two
small models of the tutorials."""
from .resnet import ResNet, BasicBlock, Bottleneck, resnet18, resnet34, resnet50  # noqa: F401
from .simple import SimpleMLP, SimpleCNN  # noqa: F401

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50", "SimpleMLP", "SimpleCNN"]
