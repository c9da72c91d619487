"""ember.utils.tensorboard: SummaryWriter, as torch.utils.tensorboard, on the `tensorboard`
package's event-file writer and protocol buffers (install the `tensorboard` extra)."""
try:
    import tensorboard  # noqa: F401
except ImportError:
    raise ImportError("ember.utils.tensorboard needs the tensorboard package: "
                      "pip install 'ember[tensorboard]' (or pip install tensorboard)") from None

from .writer import SummaryWriter  # noqa: F401,E402

__all__ = ["SummaryWriter"]
