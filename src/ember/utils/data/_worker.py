"""DataLoader worker processes: each worker fetches and collates the batches it is given (map-style
datasets) or iterates its own copy of the dataset (iterable ones), and sends them back in order.

A worker is seeded as PyTorch seeds its workers: ember's generator and Python's ``random`` with
``base_seed + worker_id`` (``base_seed`` drawn from the main process's generator when the iterator
starts), then ``worker_init_fn(worker_id)`` runs. An exception in a worker is re-raised in the main
process naming the worker and the sample indices; a worker that dies or a ``timeout`` that expires
is an error instead of a hang."""
import queue
import random
import sys
import traceback
from dataclasses import dataclass

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info():
    """In a worker process: its WorkerInfo (id, num_workers, seed, its copy of the dataset); in the
    main process: None."""
    return _worker_info


class _Failure:
    """An exception from a worker, carried to the main process as text (not every exception
    pickles)."""

    def __init__(self, exc, worker_id, where):
        self.type_name = type(exc).__name__
        self.exc_type = type(exc) if _picklable_type(type(exc)) else RuntimeError
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.worker_id = worker_id
        self.where = where

    def reraise(self):
        msg = (f"Caught {self.type_name} in DataLoader worker process {self.worker_id} {self.where}.\n"
               f"Original Traceback (most recent call last):\n{self.text}")
        try:
            err = self.exc_type(msg)
        except Exception:
            err = RuntimeError(msg)
        raise err


def _picklable_type(t):
    return getattr(sys.modules.get(t.__module__), t.__qualname__, None) is t


_STOP = "stop"


class _End:
    """An iterable dataset's worker has no more data."""


def _loop(dataset, index_queue, result_queue, fetch, worker_id, num_workers, seed, init_fn, iterable):
    global _worker_info
    import ember
    ember.manual_seed(seed)
    random.seed(seed)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception as e:  # reported with the first task
        init_error = _Failure(e, worker_id, "in worker_init_fn")
    else:
        init_error = None
    it = None
    while True:
        task = index_queue.get()
        if task == _STOP:
            return
        send_idx, indices = task
        if init_error is not None:
            result_queue.put((send_idx, init_error))
            continue
        try:
            if iterable:
                if it is None:
                    it = iter(dataset)
                data = fetch(it)
                if data is None:
                    result_queue.put((send_idx, _End()))
                    continue
            else:
                data = fetch(indices)
        except Exception as e:
            where = "while fetching its data" if iterable else f"while fetching the samples {indices!r}"
            data = _Failure(e, worker_id, where)
        result_queue.put((send_idx, data))


class MultiProcessIter:
    """The iterator of a DataLoader with ``num_workers > 0``."""

    def __init__(self, loader, base_seed):
        import multiprocessing as mp
        self.loader = loader
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        elif isinstance(ctx, str):
            ctx = mp.get_context(ctx)
        self.n = loader.num_workers
        self.prefetch = loader.prefetch_factor or 2
        self.timeout = loader.timeout
        self.iterable = loader._iterable
        self.result_queue = ctx.Queue()
        self.index_queues = []
        self.workers = []
        fetch = loader._fetcher()
        for w in range(self.n):
            q = ctx.Queue()
            p = ctx.Process(target=_loop, daemon=True,
                            args=(loader.dataset, q, self.result_queue, fetch, w, self.n, base_seed + w,
                                  loader.worker_init_fn, self.iterable))
            p.start()
            self.index_queues.append(q)
            self.workers.append(p)
        self._reset()

    def _reset(self):
        self.sampler_iter = iter(self.loader._index_sampler) if not self.iterable else None
        self.send_idx = 0
        self.rcvd_idx = 0
        self.pending = {}          # send index -> worker, for tasks not answered yet
        self.buffer = {}           # send index -> answers not handed out yet
        self.active = list(range(self.n))   # iterable datasets: workers not yet exhausted
        self.next_worker = 0
        for _ in range(self.prefetch * self.n):
            if not self._put():
                break

    def _put(self):
        if self.iterable:
            if not self.active:
                return False
            w = self.active[self.next_worker % len(self.active)]
            self.next_worker += 1
            task = (self.send_idx, None)
        else:
            try:
                indices = next(self.sampler_iter)
            except StopIteration:
                return False
            w = self.send_idx % self.n
            task = (self.send_idx, indices)
        self.index_queues[w].put(task)
        self.pending[self.send_idx] = w
        self.send_idx += 1
        return True

    def __iter__(self):
        return self

    def _get(self):
        """One (send index, data) from the workers, watching for dead workers and the timeout."""
        waited = 0.0
        step = 0.5 if not self.timeout else min(0.5, self.timeout)
        while True:
            try:
                return self.result_queue.get(timeout=step)
            except queue.Empty:
                waited += step
                if self.timeout and waited >= self.timeout:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds") from None
                dead = [p for p in self.workers if not p.is_alive()]
                if dead:
                    pids = ", ".join(str(p.pid) for p in dead)
                    codes = ", ".join(str(p.exitcode) for p in dead)
                    self.shutdown()
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly "
                                       f"(exit code {codes})") from None

    def _arrived(self, idx, data):
        w = self.pending.pop(idx)
        if isinstance(data, _End):  # that worker's copy of the dataset is exhausted
            if w in self.active:
                self.active.remove(w)
            self._put()
        self.buffer[idx] = data

    def __next__(self):
        while True:
            if self.loader.in_order:
                if self.rcvd_idx in self.buffer:
                    data = self.buffer.pop(self.rcvd_idx)
                    self.rcvd_idx += 1
                elif self.rcvd_idx < self.send_idx:
                    self._arrived(*self._get())
                    continue
                else:
                    self._end_epoch()
                    raise StopIteration
            elif self.buffer:
                data = self.buffer.pop(next(iter(self.buffer)))
            elif self.pending:
                self._arrived(*self._get())
                continue
            else:
                self._end_epoch()
                raise StopIteration
            if isinstance(data, _End):
                continue
            self._put()
            if isinstance(data, _Failure):
                self.shutdown()
                data.reraise()
            return data

    def _end_epoch(self):
        if not self.loader.persistent_workers:
            self.shutdown()

    def shutdown(self):
        for q in self.index_queues:
            try:
                q.put(_STOP)
            except (OSError, ValueError):
                pass
        for p in self.workers:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
        self.workers = []
        self.index_queues = []

    def __del__(self):
        if getattr(self, "workers", None):
            try:
                self.shutdown()
            except Exception:
                pass
