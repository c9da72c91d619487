"""utils.data: datasets, samplers, DataLoader batching/shuffling/collation, random_split."""
from collections import namedtuple

import numpy as np
import pytest

import ember
from ember.utils.data import (DataLoader, Dataset, TensorDataset, Subset, ConcatDataset, random_split,
                              RandomSampler, SequentialSampler, BatchSampler, IterableDataset,
                              default_collate)


def test_tensor_dataset_loader_batches_and_drop_last():
    x = ember.arange(10.0).reshape(10, 1)
    y = ember.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert batches[0][1].tolist() == [0, 1, 2, 3] and batches[0][0].shape == (4, 1)
    assert len(DataLoader(ds, batch_size=4)) == 3
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [len(b[1]) for b in DataLoader(ds, batch_size=4, drop_last=True)] == [4, 4]
    with pytest.raises(ValueError):
        TensorDataset(ember.ones(3), ember.ones(4))


def test_shuffle_uses_ember_generator():
    ds = TensorDataset(ember.arange(20))
    ember.manual_seed(3)
    a = [b[0].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)]
    ember.manual_seed(3)
    b = [b[0].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)]
    assert a == b
    flat = sorted(v for batch in a for v in batch)
    assert flat == list(range(20)) and [v for batch in a for v in batch] != list(range(20))
    g = ember.Generator().manual_seed(1)
    c = [b[0].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True, generator=g)]
    g.manual_seed(1)
    d = [b[0].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True, generator=g)]
    assert c == d


class Pairs(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.full(2, i, np.float32), "y": i, "w": float(i) / 2, "name": f"s{i}",
                "nested": (ember.tensor([i]), [i, i + 1])}


def test_collate_dicts_numbers_strings_tuples(torch):
    batch = next(iter(DataLoader(Pairs(), batch_size=3)))
    assert batch["x"].shape == (3, 2) and batch["x"].dtype == ember.float32
    assert batch["y"].dtype == ember.int64 and batch["y"].tolist() == [0, 1, 2]
    assert batch["w"].dtype == ember.float64
    assert batch["name"] == ["s0", "s1", "s2"]
    assert default_collate([(1, "a"), (2, "b")])[1] == ("a", "b")
    assert isinstance(batch["nested"], list) and batch["nested"][0].shape == (3, 1)
    assert [t.tolist() for t in batch["nested"][1]] == [[0, 1, 2], [1, 2, 3]]
    P = namedtuple("P", "a b")
    out = default_collate([P(1, 2.0), P(3, 4.0)])
    assert isinstance(out, P) and out.a.tolist() == [1, 3]
    assert default_collate([True, False]).dtype == ember.bool
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])


def test_no_auto_batching_and_custom_collate():
    ds = TensorDataset(ember.arange(4))
    items = list(DataLoader(ds, batch_size=None))
    assert len(items) == 4 and items[2][0].item() == 2
    out = list(DataLoader(ds, batch_size=2, collate_fn=lambda b: len(b)))
    assert out == [2, 2]


def test_samplers_and_batch_sampler():
    assert list(SequentialSampler(range(3))) == [0, 1, 2]
    ember.manual_seed(0)
    perm = list(RandomSampler(range(6)))
    assert sorted(perm) == list(range(6))
    assert len(list(RandomSampler(range(6), replacement=True, num_samples=10))) == 10
    bs = BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    dl = DataLoader(TensorDataset(ember.arange(7)), batch_sampler=bs)
    assert [b[0].tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]]
    dl = DataLoader(list(range(5)), sampler=[4, 3, 2], batch_size=2)
    assert [b.tolist() for b in dl] == [[4, 3], [2]]
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(range(3), sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(range(3), batch_sampler=bs, batch_size=2)


def test_random_split_and_subsets():
    ember.manual_seed(0)
    a, b = random_split(range(10), [3, 7])
    assert len(a) == 3 and len(b) == 7 and sorted(list(a) + list(b)) == list(range(10))
    c, d, e = random_split(range(10), [0.5, 0.3, 0.2])
    assert (len(c), len(d), len(e)) == (5, 3, 2)
    with pytest.raises(ValueError):
        random_split(range(10), [3, 3])
    g1 = ember.Generator().manual_seed(42)
    g2 = ember.Generator().manual_seed(42)
    assert list(random_split(range(10), [5, 5], generator=g1)[0]) == \
        list(random_split(range(10), [5, 5], generator=g2)[0])
    s = Subset(list("abcdef"), [5, 0])
    assert s[0] == "f" and len(s) == 2
    cat = ConcatDataset([list("ab"), list("cde")])
    assert len(cat) == 5 and cat[3] == "d" and cat[-1] == "e"


def test_iterable_dataset():
    class Count(IterableDataset):
        def __iter__(self):
            return iter(range(5))
    assert [b.tolist() for b in DataLoader(Count(), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert [b.tolist() for b in DataLoader(Count(), batch_size=2, drop_last=True)] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError):
        DataLoader(Count(), shuffle=True)


def test_training_loop_end_to_end():
    ember.manual_seed(0)
    x = ember.randn(64, 3)
    y = (x.sum(1) > 0).long()
    model = ember.nn.Sequential(ember.nn.Linear(3, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    opt = ember.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = ember.nn.CrossEntropyLoss()
    first = None
    for epoch in range(15):
        for xb, yb in DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True):
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            first = loss.item() if first is None else first
    assert loss.item() < first * 0.5
