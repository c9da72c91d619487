"""ember.utils.data: datasets, samplers and the DataLoader."""
from .dataset import (Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset,  # noqa: F401
                      ChainDataset, Subset, random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler,  # noqa: F401
                      WeightedRandomSampler, BatchSampler)
from .dataloader import DataLoader, get_worker_info  # noqa: F401
from ._collate import default_collate, default_convert  # noqa: F401


def __getattr__(name):
    if name == "DistributedSampler" or name == "distributed":
        from . import distributed
        return distributed if name == "distributed" else distributed.DistributedSampler
    raise AttributeError(f"module 'ember.utils.data' has no attribute {name!r}")
