"""ember.utils.data: datasets, samplers and the DataLoader."""
from .dataset import (Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset,  # noqa: F401
                      ChainDataset, Subset, random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler,  # noqa: F401
                      WeightedRandomSampler, BatchSampler)
from .dataloader import DataLoader, get_worker_info  # noqa: F401
from ._collate import default_collate, default_convert  # noqa: F401

from .distributed import DistributedSampler  # noqa: F401
