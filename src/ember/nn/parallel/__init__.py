"""Data parallelism across processes: DistributedDataParallel (over ember.distributed, MPI);
DataParallel, which on the CPU runs the module in this process."""
from .distributed import DistributedDataParallel
from .data_parallel import DataParallel, data_parallel

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]
