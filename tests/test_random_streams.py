"""Same seed, same numbers: ember's CPU random streams against PyTorch's, bit for bit."""
import math

import numpy as np
import pytest

import ember

SEEDS = [0, 1, 12345, 2 ** 40 + 3]
SIZES = [1, 2, 15, 16, 17, 31, 33, 1000, 1001]
FLOATS = ["float32", "float64"]


def same(e, t):
    """ember tensor e holds exactly torch tensor t's values (and dtype)."""
    a = e.detach().numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    b = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert str(a.dtype) == str(b.dtype), (a.dtype, b.dtype)
    if not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
        bad = np.nonzero(a.ravel() != b.ravel())[0]
        raise AssertionError(f"{bad.size} of {a.size} values differ, first at {bad[:5]}: "
                             f"ember {a.ravel()[bad[:3]]} torch {b.ravel()[bad[:3]]}")


def both(torch, seed, fn):
    """fn(lib) run after manual_seed(seed) in ember and in torch, then one more draw each (so that
    the number of draws consumed also has to agree)."""
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    e, t = fn(ember), fn(torch)
    same(ember.rand(3, dtype=ember.float64), torch.rand(3, dtype=torch.float64))
    return e, t


def check(torch, fn, seeds=SEEDS):
    for s in seeds:
        e, t = both(torch, s, fn)
        if isinstance(e, (list, tuple)):
            for a, b in zip(e, t):
                same(a, b)
        else:
            same(e, t)


# ----------------------------------------------------------------------------- generator & state

def test_default_seed_and_first_numbers(torch):
    ember.manual_seed(0)
    assert ember.randn(3).tolist() == pytest.approx([1.5410, -0.2934, -2.1788], abs=1e-4)
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed()


@pytest.mark.parametrize("seed", [0, 7, 2 ** 32, 2 ** 32 + 5, -1, 2 ** 63 + 11])
def test_manual_seed_and_state_layout(torch, seed):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    assert ember.initial_seed() == torch.initial_seed()
    same(ember.get_rng_state(), torch.get_rng_state())
    for f in (lambda L: L.rand(5), lambda L: L.randn(3), lambda L: L.randn(40, dtype=L.float64)):
        same(f(ember), f(torch))
        same(ember.get_rng_state(), torch.get_rng_state())


def test_state_from_torch_continues_the_stream(torch):
    torch.manual_seed(3)
    torch.randn(7)                # leaves a cached normal in the state
    torch.rand(1000)              # crosses a twist of the Mersenne Twister
    st = torch.get_rng_state()
    ember.set_rng_state(ember.tensor(st.numpy()))
    same(ember.get_rng_state(), st)
    same(ember.randn(5), torch.randn(5))
    same(ember.rand(700, dtype=ember.float64), torch.rand(700, dtype=torch.float64))
    # and back: a state saved by ember loads in torch
    ember.randn(3)
    torch.set_rng_state(torch.from_numpy(ember.get_rng_state().numpy()))
    same(ember.randn(20), torch.randn(20))


def test_generator_objects(torch):
    for s in SEEDS:
        ge, gt = ember.Generator().manual_seed(s), torch.Generator().manual_seed(s)
        same(ember.randn(17, generator=ge), torch.randn(17, generator=gt))
        same(ember.randperm(50, generator=ge), torch.randperm(50, generator=gt))
        same(ge.get_state(), gt.get_state())
        st = gt.get_state()
        ge2 = ember.Generator()
        ge2.set_state(ember.tensor(st.numpy()))
        same(ember.rand(9, generator=ge2), torch.rand(9, generator=gt))
    # the default generator is untouched by draws from another one
    ember.manual_seed(0)
    torch.manual_seed(0)
    ember.rand(5, generator=ember.Generator())
    same(ember.rand(4), torch.rand(4))


def test_bad_state_is_refused():
    with pytest.raises(RuntimeError, match="5056"):
        ember.set_rng_state(ember.zeros(10, dtype=ember.uint8))
    with pytest.raises(TypeError, match="uint8"):
        ember.set_rng_state(ember.zeros(5056))
    st = ember.get_rng_state()
    st[8:12] = ember.tensor([0, 0, 0, 0], dtype=ember.uint8)   # left = 0: not a valid position
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        ember.set_rng_state(st)


def test_fork_rng(torch):
    ember.manual_seed(5)
    torch.manual_seed(5)
    with ember.random.fork_rng():
        ember.rand(10)
    with torch.random.fork_rng():
        torch.rand(10)
    same(ember.rand(3), torch.rand(3))
    with ember.random.fork_rng(enabled=False):
        ember.rand(2)
    with torch.random.fork_rng(enabled=False):
        torch.rand(2)
    same(ember.rand(3), torch.rand(3))


# ----------------------------------------------------------------------------- factories

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_rand_randn(torch, dtype, n):
    check(torch, lambda L: L.rand(n, dtype=getattr(L, dtype)))
    check(torch, lambda L: L.randn(n, dtype=getattr(L, dtype)))
    check(torch, lambda L: [L.randn(n, dtype=getattr(L, dtype)), L.randn(1), L.randn(3)])


@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 8), (17, 3), (0,)])
def test_rand_randn_shapes(torch, shape):
    check(torch, lambda L: L.randn(*shape))
    check(torch, lambda L: L.rand(shape, dtype=L.float64))


@pytest.mark.parametrize("low,high", [(0, 10), (-3, 3), (0, 2 ** 28 - 1), (0, 2 ** 28), (0, 2 ** 31),
                                      (5, 2 ** 32 + 5), (0, 2 ** 62)])
def test_randint(torch, low, high):
    check(torch, lambda L: L.randint(low, high, (37,)))
    if high - low < 2 ** 24:
        check(torch, lambda L: L.randint(low, high, (5, 3), dtype=L.float32))


@pytest.mark.parametrize("n", [0, 1, 2, 5, 16, 63, 64, 65, 100, 1433, 20000, 100003])
def test_randperm(torch, n):
    # below _PERM_LOOP (64) the swaps run in a Python loop, from there on vectorised
    check(torch, lambda L: L.randperm(n))


def _swap_loop(z, n):
    perm = list(range(n))
    for i, j in enumerate(z):
        perm[i], perm[j] = perm[j], perm[i]
    return perm


@pytest.mark.parametrize("n", [2, 3, 4, 7, 16, 17, 64, 300, 1000, 10 ** 5 + 1])
def test_swaps_to_perm_matches_the_loop(n):
    """The vectorised Fisher-Yates (no sequential loop) against the loop itself, on swap targets
    drawn at random and on the extreme patterns: no moves, every swap to the end, chains of
    neighbours, every target hit many times."""
    from ember._creation import _swaps_to_perm
    rng = np.random.default_rng(n)
    i = np.arange(n - 1)
    cases = [i, np.full(n - 1, n - 1), np.minimum(i + 1, n - 1), np.maximum(i, n - 3),
             np.where(i % 2, i, n - 1), np.minimum(i + 2, n - 1), (i + n - 1) // 2]
    cases += [i + rng.integers(0, n - i) for _ in range(20 if n < 10 ** 4 else 3)]
    cases += [np.where(rng.random(n - 1) < 0.5, i, i + rng.integers(0, n - i)) for _ in range(5)]
    for z in cases:
        for dt in (np.int32, np.int64):
            got = _swaps_to_perm(z.astype(dt), i.astype(dt), n)
            assert got.dtype == np.int64
            assert got.tolist() == _swap_loop(z.tolist(), n), z


def test_like_factories(torch):
    for dtype in FLOATS:
        check(torch, lambda L: L.rand_like(L.zeros(3, 7, dtype=getattr(L, dtype))))
        check(torch, lambda L: L.randn_like(L.zeros(3, 7, dtype=getattr(L, dtype))))
    check(torch, lambda L: L.randint_like(L.zeros(4, 5), 3, 9))
    check(torch, lambda L: L.randint_like(L.zeros(4, 5, dtype=L.int64), 100))


def test_normal_overloads(torch):
    for dtype in FLOATS:
        for n in (3, 16, 33):
            check(torch, lambda L: L.normal(2.0, 3.0, (n,), dtype=getattr(L, dtype)))
            check(torch, lambda L: L.normal(L.arange(n, dtype=getattr(L, dtype)), 0.5))
            check(torch, lambda L: L.normal(-1.0, L.arange(n, dtype=getattr(L, dtype)) + 1))
            check(torch, lambda L: L.normal(L.arange(n, dtype=getattr(L, dtype)),
                                            L.arange(n, dtype=getattr(L, dtype)) * 0.1 + 1))


def test_bernoulli_multinomial(torch):
    for dtype in FLOATS:
        for n in (1, 16, 17, 1000):
            p = np.linspace(0, 1, n).astype(dtype)
            check(torch, lambda L: L.bernoulli(L.tensor(p)))
            check(torch, lambda L: L.bernoulli(L.tensor(p), 0.3))
        w = np.random.default_rng(0).random((3, 40)).astype(dtype)
        check(torch, lambda L: L.multinomial(L.tensor(w), 10))
        check(torch, lambda L: L.multinomial(L.tensor(w[0]), 1))
        check(torch, lambda L: L.multinomial(L.tensor(w), 25, replacement=True))
        check(torch, lambda L: L.multinomial(L.tensor(w[1]), 1, True))


# ----------------------------------------------------------------------------- in-place samplers

INPLACE = {
    "uniform_": lambda t: t.uniform_(-2.5, 4.0),
    "uniform_default": lambda t: t.uniform_(),
    "normal_": lambda t: t.normal_(1.5, 0.25),
    "normal_default": lambda t: t.normal_(),
    "bernoulli_": lambda t: t.bernoulli_(0.3),
    "exponential_": lambda t: t.exponential_(2.5),
    "geometric_": lambda t: t.geometric_(0.2),
    "log_normal_": lambda t: t.log_normal_(0.5, 0.75),
    "cauchy_": lambda t: t.cauchy_(1.0, 2.0),
    "random_": lambda t: t.random_(),
    "random_to": lambda t: t.random_(100),
    "random_from_to": lambda t: t.random_(-7, 9),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
@pytest.mark.parametrize("dtype", FLOATS)
def test_inplace_samplers(torch, name, dtype):
    f = INPLACE[name]
    for n in SIZES:
        check(torch, lambda L: f(L.empty(n, dtype=getattr(L, dtype))), seeds=SEEDS[:2])


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_samplers_noncontiguous(torch, name):
    f = INPLACE[name]
    for dtype in FLOATS:
        check(torch, lambda L: f(L.zeros(6, 20, dtype=getattr(L, dtype)).t()), seeds=SEEDS[:2])
        check(torch, lambda L: f(L.zeros(40, 3, dtype=getattr(L, dtype))[::2, 1]), seeds=SEEDS[:2])


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_random_integer_dtypes(torch, dtype):
    check(torch, lambda L: L.empty(50, dtype=getattr(L, dtype)).random_())
    check(torch, lambda L: L.empty(50, dtype=getattr(L, dtype)).random_(0, 100))


def test_poisson(torch):
    for dtype in FLOATS:
        rates = np.array([0.0, 0.5, 3.0, 9.99, 10.0, 25.5, 1000.0] * 9, dtype)
        check(torch, lambda L: L.poisson(L.tensor(rates)))
        check(torch, lambda L: L.poisson(L.tensor(rates.reshape(7, 9)).t()))


# ----------------------------------------------------------------------------- nn.init and layers

INIT = {
    "uniform_": lambda I, t: I.uniform_(t, -0.3, 0.7),
    "normal_": lambda I, t: I.normal_(t, 0.2, 1.5),
    "trunc_normal_": lambda I, t: I.trunc_normal_(t, 0.1, 0.8, -1.0, 1.5),
    "xavier_uniform_": lambda I, t: I.xavier_uniform_(t, gain=1.3),
    "xavier_normal_": lambda I, t: I.xavier_normal_(t),
    "kaiming_uniform_": lambda I, t: I.kaiming_uniform_(t, a=math.sqrt(5)),
    "kaiming_uniform_fan_out": lambda I, t: I.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
    "kaiming_normal_": lambda I, t: I.kaiming_normal_(t),
    "kaiming_normal_fan_out": lambda I, t: I.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"),
    "orthogonal_": lambda I, t: I.orthogonal_(t, gain=0.5),
    "sparse_": lambda I, t: I.sparse_(t, 0.3),
}


@pytest.mark.parametrize("name", sorted(INIT))
@pytest.mark.parametrize("shape", [(3, 5), (16, 4), (20, 30), (8, 3, 3, 3)])
def test_nn_init(torch, name, shape):
    if name == "sparse_" and len(shape) != 2:
        return
    f = INIT[name]
    for dtype in FLOATS:
        e, t = both(torch, 7, lambda L: f(L.nn.init, L.empty(*shape, dtype=getattr(L, dtype))))
        if name == "orthogonal_":  # QR through LAPACK on both sides: the same up to rounding
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
        else:
            same(e, t)


LAYERS = {
    "Linear": lambda nn: nn.Linear(20, 7),
    "Bilinear": lambda nn: nn.Bilinear(4, 5, 3),
    "Conv1d": lambda nn: nn.Conv1d(3, 8, 5),
    "Conv2d": lambda nn: nn.Conv2d(3, 16, 3, padding=1),
    "Conv2d_groups": lambda nn: nn.Conv2d(4, 8, 3, groups=2, bias=False),
    "ConvTranspose2d": lambda nn: nn.ConvTranspose2d(6, 4, 3, stride=2),
    "Embedding": lambda nn: nn.Embedding(30, 8),
    "EmbeddingBag": lambda nn: nn.EmbeddingBag(30, 8),
    "RNN": lambda nn: nn.RNN(5, 7, num_layers=2),
    "LSTM": lambda nn: nn.LSTM(5, 7, bidirectional=True),
    "GRU": lambda nn: nn.GRU(5, 7, batch_first=True),
    "MultiheadAttention": lambda nn: nn.MultiheadAttention(16, 4),
    "TransformerEncoderLayer": lambda nn: nn.TransformerEncoderLayer(16, 4, dim_feedforward=32),
    "TransformerDecoderLayer": lambda nn: nn.TransformerDecoderLayer(16, 4, dim_feedforward=32),
    "Transformer": lambda nn: nn.Transformer(16, 2, 1, 1, 32),
    "BatchNorm2d": lambda nn: nn.BatchNorm2d(5),
    "LayerNorm": lambda nn: nn.LayerNorm(6),
    "GroupNorm": lambda nn: nn.GroupNorm(2, 6),
    "Sequential": lambda nn: nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                           nn.Flatten(), nn.Linear(16 * 4 * 4, 10)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_default_init(torch, name):
    for s in SEEDS[:2]:
        ember.manual_seed(s)
        torch.manual_seed(s)
        me, mt = LAYERS[name](ember.nn), LAYERS[name](torch.nn)
        pe, pt = dict(me.named_parameters()), dict(mt.named_parameters())
        assert sorted(pe) == sorted(pt)
        for k in pt:
            same(pe[k], pt[k])
        same(ember.rand(3), torch.rand(3))


# ----------------------------------------------------------------------------- dropout

@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_masks(torch, dtype):
    x = np.random.default_rng(1).standard_normal((6, 5, 4, 3)).astype(dtype)
    for p in (0.1, 0.3, 0.5, 0.77):
        check(torch, lambda L: L.nn.functional.dropout(L.tensor(x), p))
        check(torch, lambda L: L.nn.functional.dropout2d(L.tensor(x), p))
        check(torch, lambda L: L.nn.functional.dropout1d(L.tensor(x[0]), p))
        check(torch, lambda L: L.nn.Dropout(p)(L.tensor(x)))
        check(torch, lambda L: L.nn.Dropout2d(p)(L.tensor(x)))
        check(torch, lambda L: L.nn.functional.dropout(L.tensor(x), p, inplace=True))
        # alpha dropout: the same mask (and stream); the affine constants agree to rounding
        e, t = both(torch, 0, lambda L: L.nn.functional.alpha_dropout(L.tensor(x), p, True))
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_dropout_in_a_model_trains_the_same(torch):
    def run(L):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Linear(8, 16), L.nn.ReLU(), L.nn.Dropout(0.25), L.nn.Linear(16, 1))
        x = L.randn(32, 8)
        out = m(x)
        out.sum().backward()
        return [out] + [p.grad for p in m.parameters()]
    e, t = run(ember), run(torch)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    same(ember.rand(4), torch.rand(4))


# ----------------------------------------------------------------------------- data

def _order(L, loader_kw, epochs=2, n=100):
    ds = L.utils.data.TensorDataset(L.arange(n))
    dl = L.utils.data.DataLoader(ds, **loader_kw(L))
    return [b[0].tolist() for _ in range(epochs) for b in dl]


@pytest.mark.parametrize("kw", [
    lambda L: dict(batch_size=10, shuffle=True),
    lambda L: dict(batch_size=32, shuffle=True, drop_last=True),
    lambda L: dict(batch_size=7, shuffle=True, generator=L.Generator().manual_seed(5)),
    lambda L: dict(batch_size=8, sampler=L.utils.data.RandomSampler(range(100), replacement=True,
                                                                     num_samples=70)),
    lambda L: dict(batch_size=8, sampler=L.utils.data.RandomSampler(range(100), num_samples=250)),
    lambda L: dict(batch_size=8, sampler=L.utils.data.SubsetRandomSampler(list(range(0, 100, 3)))),
    lambda L: dict(batch_size=8, sampler=L.utils.data.WeightedRandomSampler([0.1, 2.0, 1.0, 0.5] * 25, 40)),
    lambda L: dict(batch_size=8, sampler=L.utils.data.WeightedRandomSampler([0.1, 2.0, 1.0, 0.5] * 25, 30,
                                                                            replacement=False)),
])
def test_dataloader_order(torch, kw):
    for s in SEEDS[:3]:
        ember.manual_seed(s)
        torch.manual_seed(s)
        assert _order(ember, kw) == _order(torch, kw)
        same(ember.rand(3), torch.rand(3))


def test_random_split(torch):
    for s in SEEDS[:3]:
        for lengths in ([30, 70], [0.2, 0.5, 0.3], [1, 1, 98]):
            ember.manual_seed(s)
            torch.manual_seed(s)
            e = ember.utils.data.random_split(range(100), lengths)
            t = torch.utils.data.random_split(range(100), lengths)
            assert [list(x.indices) for x in e] == [list(x.indices) for x in t]
            e = ember.utils.data.random_split(range(50), [20, 30], generator=ember.Generator().manual_seed(s))
            t = torch.utils.data.random_split(range(50), [20, 30], generator=torch.Generator().manual_seed(s))
            assert [list(x.indices) for x in e] == [list(x.indices) for x in t]
            same(ember.rand(3), torch.rand(3))


# ----------------------------------------------------------------------------- whole programs

def _torch_train(torch, seed, epochs, model_name, limit=None):
    """`ember train` written in PyTorch: the same data, model, optimizer, schedule and order."""
    import torch.nn as tnn
    import torch.nn.functional as TF
    from ember.datasets import digits
    tr, te = digits(train=True).tensors, digits(train=False).tensors
    xtr, ytr = (torch.from_numpy(t.numpy().copy()) for t in tr)
    xte, yte = (torch.from_numpy(t.numpy().copy()) for t in te)
    if limit:
        xtr, ytr = xtr[:limit], ytr[:limit]

    class SimpleCNN(tnn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = tnn.Conv2d(1, 32, 3, 1)
            self.conv2 = tnn.Conv2d(32, 64, 3, 1)
            self.dropout1 = tnn.Dropout(0.25)
            self.dropout2 = tnn.Dropout(0.5)
            self.fc1 = tnn.Linear(64 * 2 * 2, 128)
            self.fc2 = tnn.Linear(128, 10)

        def forward(self, x):
            x = TF.relu(self.conv1(x))
            x = TF.max_pool2d(TF.relu(self.conv2(x)), 2)
            x = self.dropout1(x)
            x = TF.relu(self.fc1(torch.flatten(x, 1)))
            return self.fc2(self.dropout2(x))

    class SimpleMLP(tnn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = tnn.Linear(64, 128), tnn.Linear(128, 128), tnn.Linear(128, 10)

        def forward(self, x):
            x = torch.flatten(x, 1)
            return self.fc3(TF.relu(self.fc2(TF.relu(self.fc1(x)))))

    torch.manual_seed(seed)
    model = SimpleCNN() if model_name == "cnn" else SimpleMLP()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    sampler = torch.utils.data.DistributedSampler(range(len(ytr)), num_replicas=1, rank=0, shuffle=True,
                                                  seed=seed)
    losses = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        order = list(sampler)
        model.train()
        total, count = 0.0, 0
        for i in range(0, len(order), 32):
            idx = torch.tensor(order[i:i + 32])
            loss = TF.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            count += len(idx)
        sched.step()
        losses.append(total / count)
    return losses


@pytest.mark.parametrize("model", ["cnn", "mlp"])
def test_ember_train_prints_pytorch_losses(torch, model, tmp_path, capsys):
    """`ember train --seed S` and the same program on PyTorch: the same losses to float32 rounding
    (initialisation, dropout masks and batch order all come from the same streams)."""
    import re
    from ember import cli
    seed, epochs, limit = 3, 2, 512
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ref = _torch_train(torch, seed, epochs, model, limit)
    finally:
        torch.set_num_threads(threads)
    code = cli.main(["train", "--model", model, "--seed", str(seed), "--epochs", str(epochs), "--no-progress",
                     "--limit", str(limit), "--checkpoint", str(tmp_path / "ck.ckpt")])
    assert code == 0
    got = [float(x) for x in re.findall(r"loss (\d+\.\d+)", capsys.readouterr().out)]
    assert got == pytest.approx([round(x, 4) for x in ref], abs=2e-4)


def _tour(L, epochs):
    """README's tour (its first epochs), for ember or PyTorch."""
    from ember.datasets import digits as _digits
    nn, F = L.nn, L.nn.functional

    def digits(train):
        x, y = _digits(train=train).tensors
        if L is ember:
            return _digits(train=train)
        return L.utils.data.TensorDataset(L.from_numpy(x.numpy().copy()), L.from_numpy(y.numpy().copy()))

    L.manual_seed(0)
    train = L.utils.data.DataLoader(digits(train=True), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
    opt = L.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for epoch in range(epochs):
        for x, y in train:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(loss.item())
    return losses


def test_readme_tour_prints_pytorch_losses(torch):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ref = _tour(torch, 3)
    finally:
        torch.set_num_threads(threads)
    assert _tour(ember, 3) == pytest.approx(ref, rel=1e-5)


# ----------------------------------------------------------------------------- vmap randomness

VMAP_FNS = {
    "rand": lambda L, x: x + L.rand(3),
    "randn_big": lambda L, x: x.sum() + L.randn(20),
    "randn_small": lambda L, x: x + L.randn(3, dtype=L.float64).float(),
    "rand_like": lambda L, x: L.rand_like(x) * x,
    "randn_like": lambda L, x: L.randn_like(x) + x,
    "randint": lambda L, x: x + L.randint(0, 10, (3,)),
    "normal": lambda L, x: x + L.normal(0.0, 2.0, (3,)),
    "bernoulli_p": lambda L, x: L.bernoulli(L.sigmoid(x)),
    "bernoulli_scalar": lambda L, x: L.bernoulli(x, 0.3),
    "bernoulli_unbatched": lambda L, x: x + L.bernoulli(L.full((3,), 0.4)),
    "dropout": lambda L, x: L.nn.functional.dropout(x, 0.4),
    "normal_": lambda L, x: x.clone().normal_(),
    "uniform_": lambda L, x: x.clone().uniform_(-1, 1),
}


@pytest.mark.parametrize("mode", ["different", "same"])
@pytest.mark.parametrize("name", sorted(VMAP_FNS))
def test_vmap_randomness(torch, name, mode):
    f = VMAP_FNS[name]
    x = np.random.default_rng(0).standard_normal((5, 3)).astype("float32")
    if mode == "same" and name in ("bernoulli_p", "bernoulli_scalar"):  # PyTorch refuses: so does ember
        for L in (ember, torch):
            with pytest.raises(RuntimeError, match="same randomness with a batched tensor input"):
                L.func.vmap(lambda v: f(L, v), randomness=mode)(L.tensor(x))
        return
    check(torch, lambda L: L.func.vmap(lambda v: f(L, v), randomness=mode)(L.tensor(x)), seeds=SEEDS[:2])


def test_vmap_randomness_error(torch):
    for L in (ember, torch):
        with pytest.raises(RuntimeError, match="randomness"):
            L.func.vmap(lambda v: v + L.rand(3))(L.zeros(4, 3))


def test_resnet18_initialisation(torch):
    """ember.models.resnet18() and the torchvision-style ResNet-18 written in PyTorch (the benchmarks'
    twin): every parameter bit for bit, from the same seed."""
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
    try:
        import _models
    finally:
        sys.path.pop(0)
    e, t = _models.resnet18(ember), _models.resnet18(torch)
    pe, pt = dict(e.named_parameters()), dict(t.named_parameters())
    assert sorted(pe) == sorted(pt)
    for k in pt:
        same(pe[k], pt[k])


def _set_next_draws(L, outs):
    """The next len(outs) (at most 623) 32-bit draws of L's default generator are ``outs`` (through
    a crafted state in PyTorch's layout: the untempered words from the second on, next = 1 and
    left = 624 as after a draw, so that the stream goes on alike past them, through the twist)."""
    y = np.asarray(outs, np.uint64) & np.uint64(0xFFFFFFFF)
    y ^= y >> np.uint64(18)
    y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
    t = y.copy()
    for _ in range(5):
        t = y ^ ((t << np.uint64(7)) & np.uint64(0x9D2C5680))
    y = t & np.uint64(0xFFFFFFFF)
    t = y.copy()
    for _ in range(3):
        t = y ^ (t >> np.uint64(11))
    key = np.zeros(624, np.uint64)
    key[1:1 + len(outs)] = t & np.uint64(0xFFFFFFFF)
    st = bytearray(L.get_rng_state().numpy().tobytes())
    st[8:12] = (624).to_bytes(4, "little")
    st[16:24] = (1).to_bytes(8, "little")
    st[24:24 + 624 * 8] = key.astype("<u8").tobytes()
    L.set_rng_state(L.from_numpy(np.frombuffer(bytes(st), np.uint8).copy()))


def test_uniform_upper_bound_maps_to_lower(torch):
    """A uniform that rounds up to ``to`` is returned as ``from`` (crafted draws at the top)."""
    top = [0xFFFFFF, 0xFFFFFE, 5, 0xFFFFFFFF, 0xFFFFFFFF, 7, 9]
    for f in (lambda L: L.empty(3).uniform_(1, 2), lambda L: L.empty(3).uniform_(-3, 1),
              lambda L: L.rand(3, dtype=L.float16), lambda L: L.empty(2, dtype=L.float64).uniform_(1, 2)):
        _set_next_draws(ember, top)
        _set_next_draws(torch, top)
        same(f(ember), f(torch))


def test_uniform_upper_bound_maps_to_lower_in_a_large_tensor(torch):
    """The same on the chunked path that writes float32 uniforms straight into a large tensor:
    crafted draws at the top, at the start and again past the first chunk."""
    top = [0xFFFFFF, 0xFFFFFE, 5, 0xFFFFFFFF, 0xFFFFFFFF, 7, 9] * 3000
    for n in (20001, 65536 + 3):
        for f in (lambda L: L.empty(n).uniform_(1, 2), lambda L: L.empty(n).uniform_(-3, 1)):
            _set_next_draws(ember, top[:600])
            _set_next_draws(torch, top[:600])
            e, t = f(ember), f(torch)
            same(e, t)
            assert (e.numpy() == 1.0).sum() or (e.numpy() == -3.0).sum()


FILLS = {
    "uniform_": lambda L, t: t.uniform_(-2.5, 4.0),
    "uniform_default": lambda L, t: t.uniform_(),
    "uniform_narrow": lambda L, t: t.uniform_(1e-3, 1.5e-3),
    "normal_": lambda L, t: t.normal_(1.5, 0.25),
    "normal_default": lambda L, t: t.normal_(),
    "normal_std": lambda L, t: t.normal_(0.0, 0.03),
    "kaiming_uniform_": lambda L, t: L.nn.init.kaiming_uniform_(t.view(-1, 1), a=math.sqrt(5)),
    "kaiming_normal_": lambda L, t: L.nn.init.kaiming_normal_(t.view(-1, 1), mode="fan_out"),
}


@pytest.mark.parametrize("n", [1, 15, 16, 17, 1000, 32767, 32768, 32769, 65537, 10 ** 5 + 1])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(FILLS))
def test_inplace_samplers_sizes_and_views(torch, name, dtype, n):
    """uniform_/normal_ on a contiguous tensor write their values straight into its memory (a
    chunk at a time): every size around the chunks, a contiguous view inside a larger tensor (its
    neighbours untouched), a parameter under no_grad, and a non-contiguous view of the same size
    (the other path), all PyTorch's numbers."""
    f = FILLS[name]
    seeds = SEEDS[:3] if n < 10 ** 4 else SEEDS[:1]
    check(torch, lambda L: f(L, L.empty(n, dtype=getattr(L, dtype))), seeds=seeds)

    def view(L):
        base = L.full((n + 7,), 7.0, dtype=getattr(L, dtype))
        f(L, base[3:3 + n])
        return base
    check(torch, view, seeds=seeds[:1])

    def param(L):
        p = L.nn.Parameter(L.empty(n, dtype=getattr(L, dtype)))
        with L.no_grad():
            f(L, p)
        return p.detach()
    check(torch, param, seeds=seeds[:1])
    check(torch, lambda L: f(L, L.zeros(n, 2, dtype=getattr(L, dtype))[:, 1]), seeds=seeds[:1])


def test_float16(torch):
    check(torch, lambda L: L.rand(1000, dtype=L.float16))
    check(torch, lambda L: L.empty(50, dtype=L.float16).uniform_(-2, 3))
    check(torch, lambda L: L.randn(7, dtype=L.float16))
    # 16 or more: the same draws and the same transform; one value in a few hundred may round to
    # the neighbouring float16 (PyTorch's intermediate precision for half is not pinned down here)
    for n in (16, 17, 100):
        for f in (lambda L: L.randn(n, dtype=L.float16), lambda L: L.empty(n, dtype=L.float16).normal_(0.5, 2.0)):
            for s in SEEDS:
                e, t = both(torch, s, f)
                np.testing.assert_allclose(e.numpy().astype("f4"), t.numpy().astype("f4"), rtol=1e-3)


def test_channels_last_and_expanded_layouts(torch):
    """Samplers on a channels_last tensor fill it in memory order (PyTorch's iteration order); the
    normal sampler takes its scalar path there (the tensor is not contiguous)."""
    def cl(L, *shape, dtype="float32"):
        return L.zeros(*shape, dtype=getattr(L, dtype)).contiguous(memory_format=L.channels_last)
    for dtype in FLOATS:
        check(torch, lambda L: cl(L, 2, 3, 4, 5, dtype=dtype).normal_(), seeds=SEEDS[:2])
        check(torch, lambda L: cl(L, 2, 3, 4, 5, dtype=dtype).uniform_(-1, 1), seeds=SEEDS[:2])
        check(torch, lambda L: L.randn_like(cl(L, 2, 3, 4, 5, dtype=dtype)), seeds=SEEDS[:2])
        check(torch, lambda L: L.rand_like(cl(L, 2, 3, 4, 5, dtype=dtype)), seeds=SEEDS[:2])
        check(torch, lambda L: L.bernoulli(cl(L, 2, 3, 4, 5, dtype=dtype) + 0.5), seeds=SEEDS[:2])
        check(torch, lambda L: L.bernoulli(cl(L, 2, 3, 4, 5, dtype=dtype), 0.3), seeds=SEEDS[:2])
        check(torch, lambda L: L.nn.init.kaiming_normal_(cl(L, 8, 3, 3, 3, dtype=dtype)), seeds=SEEDS[:2])


def test_large_draws(torch):
    """Millions of values: the float32 Box-Muller emulation (Cephes log and sincos with fused
    multiply-adds) over about a million different inputs, float64 over a quarter million."""
    for s in (0, 99):
        check(torch, lambda L: L.randn(2 * 10 ** 6 + 5), seeds=[s])
        check(torch, lambda L: L.empty(10 ** 6).normal_(-3.0, 0.01), seeds=[s])
        check(torch, lambda L: L.randn(5 * 10 ** 5 + 3, dtype=L.float64), seeds=[s])
        check(torch, lambda L: L.rand(10 ** 6 + 1), seeds=[s])


def _generic_train(L, dtype, epochs=2, seed=1, limit=96):
    """A SimpleCNN trained with dropout, Adam, a cosine schedule and a shuffled sampler, in L."""
    from ember.datasets import digits
    nn, F = L.nn, L.nn.functional
    tr = digits(train=True).tensors
    xtr = L.tensor(tr[0].numpy()[:limit].astype(dtype))
    ytr = L.tensor(tr[1].numpy()[:limit])

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, 1), nn.Conv2d(32, 64, 3, 1)
            self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
            self.fc1, self.fc2 = nn.Linear(256, 128), nn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
            x = F.relu(self.fc1(L.flatten(self.dropout1(x), 1)))
            return self.fc2(self.dropout2(x))

    L.manual_seed(seed)
    model = SimpleCNN().to(getattr(L, dtype))
    opt = L.optim.Adam(model.parameters(), lr=3e-3)
    sched = L.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    sampler = L.utils.data.RandomSampler(range(len(ytr)))
    losses = []
    for _ in range(epochs):
        total = 0.0
        order = list(sampler)
        for i in range(0, len(order), 32):
            idx = L.tensor(order[i:i + 32])
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        losses.append(total / len(order))
    return losses


def test_training_in_float64_is_identical(torch):
    """In float64 (no float32 rounding to amplify) a seeded training run with dropout and shuffling
    gives PyTorch's losses to 1e-12: initialisation, masks and order are the same draws."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ref = _generic_train(torch, "float64")
    finally:
        torch.set_num_threads(threads)
    assert _generic_train(ember, "float64") == pytest.approx(ref, rel=1e-12)


# ----------------------------------------------------------------------------- found by op_db's seeded samples

@pytest.mark.parametrize("dtype", FLOATS + ["bfloat16"])
def test_rrelu_draws_per_nonpositive_element(torch, dtype):
    """F.rrelu in training draws one float64 uniform per element <= 0 (zeros too), in logical order,
    on bounds rounded to the computing dtype: values and gradients are PyTorch's (ember drew one per
    element, and its values differed from the second negative element on)."""
    g = np.random.default_rng(3)
    for shape, kw in (((1000,), dict(lower=0.1, upper=0.3)), ((7, 9), {}), ((0, 3), {}), ((), {})):
        x = g.standard_normal(shape).astype(np.float32)
        if x.size > 3:
            x.reshape(-1)[3] = 0.0

        def f(L):
            t = L.tensor(x).to(getattr(L, dtype))
            t = (t.mT if t.dim() == 2 else t).detach().requires_grad_()
            out = L.nn.functional.rrelu(t, training=True, **kw)
            out.backward(L.ones_like(out))
            return out.float(), t.grad.float()
        check(torch, f, seeds=SEEDS[:2])


def test_samplers_with_tensor_parameters_have_zero_gradients(torch):
    """normal(mean, std) and bernoulli(p) are differentiable in PyTorch with zero gradients (its
    NormalBackward1-3, BernoulliBackward0): the output requires grad and backward reaches the
    parameters; the draws stay PyTorch's."""
    for args in (("t", "t"), ("t", 1.5), (0.3, "t")):
        def f(L):
            m = L.linspace(-1, 1, 5, dtype=L.float64).requires_grad_()
            s = L.linspace(0.5, 2, 5, dtype=L.float64).requires_grad_()
            a = [m if args[0] == "t" else args[0], s if args[1] == "t" else args[1]]
            out = L.normal(*a)
            assert out.requires_grad and type(out.grad_fn).__name__.startswith("NormalBackward")
            out.sum().backward()
            return out, *(t.grad for t in (m, s) if t.grad is not None)
        check(torch, f, seeds=SEEDS[:2])

    def g(L):
        p = L.linspace(0, 1, 17, dtype=L.float64).requires_grad_()
        out = L.bernoulli(p)
        assert type(out.grad_fn).__name__ == "BernoulliBackward0"
        out.sum().backward()
        return out, p.grad
    check(torch, g, seeds=SEEDS[:2])
    with ember.no_grad():
        assert not ember.normal(ember.zeros(2, requires_grad=True), 1.0).requires_grad


def test_fractional_max_pool_samples_outside_unit_interval(torch):
    """The window starts truncate toward zero as PyTorch's C cast does (ember floored them: other
    windows for negative _random_samples)."""
    g = np.random.default_rng(5)
    x = g.standard_normal((2, 3, 11, 13, 9))
    rs = (g.random((2, 3, 3)) - 0.5) * 20
    for lib_f, xs, r, ks in (("fractional_max_pool3d", x, rs, [2, 2, 2]),
                             ("fractional_max_pool2d", x[..., 0], rs[..., :2], [2, 3])):
        e = getattr(ember.nn.functional, lib_f)(ember.tensor(xs), ks, output_size=4, return_indices=True,
                                                  _random_samples=ember.tensor(np.ascontiguousarray(r)))
        t = getattr(torch.nn.functional, lib_f)(torch.tensor(xs), ks, output_size=4, return_indices=True,
                                                 _random_samples=torch.tensor(np.ascontiguousarray(r)))
        same(e[0], t[0])
        same(e[1], t[1])


def test_cauchy_refuses_nonpositive_sigma(torch):
    for sigma in (0.0, -1.0):
        for lib in (ember, torch):
            with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0"):
                lib.empty(3).cauchy_(0.0, sigma)


def test_samplers_refuse_dtypes_as_pytorch(torch):
    """cauchy_/exponential_ only on floating tensors (RuntimeError), geometric_ on floating and integer
    ones, log_normal_ on floating ones (NotImplementedError naming the CPU kernel); ember filled
    complex tensors."""
    for name, args in (("cauchy_", ()), ("exponential_", ()), ("geometric_", (0.5,)), ("log_normal_", ())):
        for dtype in ("int64", "uint8", "bool", "complex64", "float16", "bfloat16", "float32"):
            kinds = []
            for lib in (torch, ember):
                try:
                    getattr(lib.zeros(3, dtype=getattr(lib, dtype)), name)(*args)
                    kinds.append(None)
                except (RuntimeError, NotImplementedError) as e:
                    kinds.append(type(e))
            assert kinds[0] is kinds[1], (name, dtype, kinds)


@pytest.mark.parametrize("randomness", ["different", "same", "error"])
def test_vmap_normal_with_batched_parameters(torch, randomness):
    """normal with a vmap-batched mean or std draws over the whole batch as torch.func.vmap does
    (ember read vmap's placeholder data: NaN); 'same' and 'error' refuse as PyTorch."""
    cases = ((lambda L: L.arange(6, dtype=L.float64).reshape(2, 3), lambda L, x: L.normal(x, 1.0)),
             (lambda L: L.ones(2, 3, dtype=L.float64), lambda L, s: L.normal(L.zeros(4, 1, 3, dtype=L.float64), s)),
             (lambda L: L.ones(3, 17), lambda L, s: L.normal(0.5, s)))
    for make, f in cases:
        got = []
        for L in (ember, torch):
            L.manual_seed(0)
            try:
                got.append(L.func.vmap(lambda x: f(L, x), randomness=randomness)(make(L)))
            except RuntimeError as e:
                got.append(type(e))
        if randomness == "different":
            same(*got)
        else:
            assert got[0] is got[1] is RuntimeError
