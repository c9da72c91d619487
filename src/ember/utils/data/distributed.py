"""DistributedSampler: each rank of a data-parallel job reads its own share of a dataset."""
import math

from .sampler import Sampler


class DistributedSampler(Sampler):
    """Indices of ``dataset`` for rank ``rank`` of ``num_replicas``, as in ``torch.utils.data``.

    With ``shuffle=True`` the order is a permutation drawn from ``seed + epoch`` (call
    ``set_epoch(epoch)`` at the start of each epoch: every rank draws the same permutation and takes
    every ``num_replicas``-th index from position ``rank``). Without ``drop_last`` the index list is
    padded by repeating its start so every rank gets ``ceil(len / num_replicas)`` samples; with it,
    the tail that does not divide evenly is dropped.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            if not dist.is_initialized():
                raise RuntimeError("DistributedSampler: pass num_replicas and rank, or call "
                                   "ember.distributed.init_process_group first")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be positive, got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas, self.rank = num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            import ember
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = ember.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad > 0:
                indices += (indices * math.ceil(pad / max(len(indices), 1)))[:pad]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Seed the next shuffle with ``seed + epoch`` so every epoch has a new order (the same on all ranks)."""
        self.epoch = epoch
