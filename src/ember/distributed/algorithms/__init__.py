"""``torch.distributed.algorithms``: ``Join`` for training with uneven inputs."""
from .join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook"]
