"""ChannelShuffle (torch.nn.modules.channelshuffle)."""
from .module import Module
from .. import functional as F


class ChannelShuffle(Module):
    """Shuffle the channels of (N, C, ...) input across groups."""
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
