"""DataLoader worker processes (issue 17): the same batches as one process, PyTorch's per-worker
seeding and worker info, worker errors re-raised with the worker and the indices, dead workers and
timeouts as errors, persistent workers, iterable datasets split through get_worker_info."""
import math
import os
import time

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info


class Squares(Dataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        return ember.tensor([float(i * i)]), i


def _batches(loader):
    return [(x.numpy().copy(), y.numpy().copy()) for x, y in loader]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_same_batches_as_one_process(workers):
    ref = _batches(DataLoader(Squares(), batch_size=4))
    got = _batches(DataLoader(Squares(), batch_size=4, num_workers=workers, prefetch_factor=1))
    assert len(got) == len(ref)
    for (a, b), (c, d) in zip(ref, got):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    ember.manual_seed(3)
    shuffled = _batches(DataLoader(Squares(), batch_size=5, shuffle=True))
    ember.manual_seed(3)
    shuffled_w = _batches(DataLoader(Squares(), batch_size=5, shuffle=True, num_workers=workers))
    assert [b.tolist() for _, b in shuffled] == [b.tolist() for _, b in shuffled_w]


def test_tensor_dataset_and_no_batching():
    ds = TensorDataset(ember.arange(10.), ember.arange(10))
    got = [x.item() for x, _ in DataLoader(ds, batch_size=None, num_workers=2)]
    assert got == list(range(10))


class Info(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return ember.tensor([info.id, info.num_workers, info.seed % 1000003, os.getpid()]), ember.rand(())


def test_worker_info_and_seeding(torch):
    assert get_worker_info() is None
    ember.manual_seed(0)
    rows = [x for x, _ in DataLoader(Info(), batch_size=1, num_workers=2)]
    ids = [int(r[0, 0]) for r in rows]
    assert ids == [0, 1] * 4                                 # round-robin, in order
    assert {int(r[0, 1]) for r in rows} == {2}
    pids = {int(r[0, 3]) for r in rows}
    assert os.getpid() not in pids and len(pids) == 2
    seeds = {int(r[0, 0]): int(r[0, 2]) for r in rows}
    assert seeds[1] == (seeds[0] + 1) % 1000003 or seeds[0] == 1000002  # base_seed + worker id
    # the base seed is one draw from the main generator, as PyTorch takes it: the main stream
    # moves by exactly that draw
    ember.manual_seed(0)
    _ = iter(DataLoader(Info(), batch_size=1, num_workers=1))
    after = ember.rand(1).item()
    ember.manual_seed(0)
    ember.empty((), dtype=ember.int64).random_()
    assert after == ember.rand(1).item()


def test_worker_init_fn_runs_in_each_worker(tmp_path):
    def init(worker_id):
        (tmp_path / f"w{worker_id}").write_text(str(os.getpid()))
    list(DataLoader(Squares(), batch_size=4, num_workers=2, worker_init_fn=init))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w0", "w1"]


class Faulty(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 6:
            raise ValueError("sample 6 is corrupt")
        return ember.tensor([float(i)])


def test_worker_exception_names_worker_and_indices():
    with pytest.raises(ValueError) as e:
        list(DataLoader(Faulty(), batch_size=2, num_workers=2))
    msg = str(e.value)
    assert "DataLoader worker process 1" in msg and "[6, 7]" in msg and "sample 6 is corrupt" in msg


class Dies(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            os._exit(7)
        return ember.tensor([float(i)])


def test_dead_worker_is_an_error_not_a_hang():
    t0 = time.time()
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(DataLoader(Dies(), batch_size=1, num_workers=2))
    assert time.time() - t0 < 30


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(5)
        return ember.tensor([float(i)])


def test_timeout():
    with pytest.raises(RuntimeError, match="timed out after 1 seconds"):
        list(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=1))


def test_persistent_workers_are_reused():
    dl = DataLoader(Info(), batch_size=2, num_workers=2, persistent_workers=True)
    first = {int(x[0, 3]) for x, _ in dl}
    second = {int(x[0, 3]) for x, _ in dl}
    assert first == second and len(first) == 2
    dl._persistent_iter.shutdown()


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        per = math.ceil(self.n / info.num_workers)
        return iter(range(info.id * per, min(self.n, (info.id + 1) * per)))


def test_iterable_dataset_split_across_workers():
    got = sorted(int(v) for b in DataLoader(Stream(17), batch_size=3, num_workers=2) for v in b)
    assert got == list(range(17))


def test_argument_checks():
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(Squares(), num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(Squares(), prefetch_factor=2)
    DataLoader(Squares(), pin_memory=True)  # accepted: a no-op on the CPU
