"""Data parallelism across processes: DistributedDataParallel (over ember.distributed, MPI)."""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
