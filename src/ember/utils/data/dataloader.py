"""DataLoader: batches from a dataset through a sampler and a collate function, in this process or
in worker processes (``num_workers > 0``, see _worker.py)."""


from .dataset import IterableDataset, TensorDataset
from .sampler import SequentialSampler, RandomSampler, BatchSampler
from ._collate import default_collate, default_convert


class DataLoader:
    """Iterate over a dataset in batches: sampling, shuffling, collation, worker processes.

    Differences from PyTorch: pin_memory=True is accepted and ignored without the warning PyTorch's
    CPU-only build gives (there is no accelerator to pin memory for)."""
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        if num_workers == 0 and (prefetch_factor is not None or persistent_workers):
            raise ValueError("prefetch_factor and persistent_workers options need num_workers > 0 "
                             "(multiprocessing); with num_workers=0 they must be left unset")
        if prefetch_factor is not None and prefetch_factor < 1:
            raise ValueError(f"prefetch_factor option should be a positive integer, got {prefetch_factor}")
        self.num_workers = num_workers
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._persistent_iter = None
        self.pin_memory = pin_memory  # accepted: ember's tensors live in ordinary CPU memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but "
                                 f"got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but "
                                 f"got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler "
                                 f"option, but got batch_sampler={batch_sampler}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def __iter__(self):
        # each iterator takes a base seed from the stream (PyTorch's workers' seeds derive from it;
        # drawing it here keeps the stream in step with PyTorch's)
        from ..._creation import _random_seed
        self._base_seed = _random_seed(self.generator)
        if self.num_workers > 0:
            return self._iter_workers()
        if self._iterable:
            return self._iter_iterable()
        return self._iter_map()

    def _iter_workers(self):
        from ._worker import MultiProcessIter
        base_seed = self._base_seed
        it = self._persistent_iter
        if it is not None and it.workers:
            it._reset()
            return it
        it = MultiProcessIter(self, base_seed)
        if self.persistent_workers:
            self._persistent_iter = it
        return it

    def _fetcher(self):
        """What a worker runs per task: indices -> a collated batch (map-style), or an iterator of
        the dataset -> the next batch, None at its end (iterable)."""
        ds, collate, auto = self.dataset, self.collate_fn, self._auto_collation
        if self._iterable:
            return _IterableFetch(collate, self.batch_size, self.drop_last)
        return _MapFetch(ds, collate, auto)

    def _iter_map(self):
        ds = self.dataset
        collate = self.collate_fn
        fast = type(ds) is TensorDataset and collate is default_collate
        if fast:
            from ..._creation import as_tensor
            tensors = ds.tensors
        getitems = getattr(ds, "__getitems__", None)
        for idx in self._index_sampler:
            if not self._auto_collation:
                yield collate(ds[idx])
            elif fast:
                # one gather per tensor gives what stacking the samples would
                ix = as_tensor(idx)
                yield [t[ix] for t in tensors]
            elif getitems is not None:
                yield collate(getitems(idx))
            else:
                yield collate([ds[i] for i in idx])

    def _iter_iterable(self):
        it = iter(self.dataset)
        if self.batch_size is None:
            for x in it:
                yield self.collate_fn(x)
            return
        batch = []
        for x in it:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)


class _MapFetch:
    def __init__(self, ds, collate, auto):
        self.ds, self.collate, self.auto = ds, collate, auto

    def __call__(self, indices):
        ds = self.ds
        if not self.auto:
            return self.collate(ds[indices])
        getitems = getattr(ds, "__getitems__", None)
        return self.collate(getitems(indices) if getitems is not None else [ds[i] for i in indices])


class _IterableFetch:
    def __init__(self, collate, batch_size, drop_last):
        self.collate, self.batch_size, self.drop_last = collate, batch_size, drop_last

    def __call__(self, it):
        if self.batch_size is None:
            for x in it:
                return self.collate(x)
            return None
        batch = []
        for x in it:
            batch.append(x)
            if len(batch) == self.batch_size:
                return self.collate(batch)
        if batch and not self.drop_last:
            return self.collate(batch)
        return None


from ._worker import get_worker_info, WorkerInfo  # noqa: E402,F401


