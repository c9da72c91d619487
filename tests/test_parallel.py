"""The intra-op thread pool (issue 22): set_num_threads/get_num_threads/OMP_NUM_THREADS, and every
kernel routed through it giving bit for bit its one-thread result (values, dtype, strides)."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
from ember import _parallel as P


@pytest.fixture
def threads():
    """at(n, fn): fn() with the intra-op pool at n threads. Only the pool's count changes (the BLAS
    keeps its own, so a GEMM's blocking, which the one-thread conv path changes, stays the same).
    The grains are the ones ember had before they were measured on slow hand-overs (2^17 elements,
    2^19 multiply-adds): the tests' arrays split without being the size of real steps'."""
    before, dyn, grains = P._threads[0], P._DYNAMIC, (P.GRAIN, P.MIN_SIZE, P.GEMM_GRAIN)

    def at(n, fn):
        P._threads[0], P._DYNAMIC = n, False  # (a fixed pool: the machine's load decides nothing)
        P.GRAIN, P.MIN_SIZE, P.GEMM_GRAIN = SMALL_GRAIN, 2 * SMALL_GRAIN, SMALL_GEMM_GRAIN
        try:
            return fn()
        finally:
            P._threads[0], P._DYNAMIC = before, dyn
            P.GRAIN, P.MIN_SIZE, P.GEMM_GRAIN = grains
    return at


SMALL_GRAIN, SMALL_GEMM_GRAIN = 1 << 17, 1 << 19


def _same(a, b):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else a
    b = b.detach().numpy() if isinstance(b, ember.Tensor) else b
    assert a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
    assert a.tobytes() == b.tobytes()  # bit for bit (NaN payloads and signed zeros too)


def _both(threads, fn, split=True):
    """fn() at 1 and at 2 threads, bit for bit the same; ``split``: the 2-thread run used the pool."""
    one = threads(1, fn)
    real, used = P.parallel_for, []

    def counting(n, f, work=None, grain=P.GRAIN):
        used.append(n)
        return real(n, f, work, grain)
    P.parallel_for = counting
    try:
        two = threads(2, fn)
    finally:
        P.parallel_for = real
    if split:
        assert used, "the kernel never reached the thread pool"
    if isinstance(one, (tuple, list)):
        assert len(one) == len(two)
        for a, b in zip(one, two):
            _same(a, b)
    else:
        _same(one, two)
    return two


# ------------------------------------------------------------------ thread count


def test_set_get_num_threads_and_errors():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        assert ember._blas.get_num_threads() in (1, os.cpu_count())  # BLAS kept in step where found
        ember.set_num_threads(3)
        assert ember.get_num_threads() == 3
    finally:
        ember.set_num_threads(before)
    with pytest.raises(RuntimeError, match="positive integer"):
        ember.set_num_threads(0)
    with pytest.raises(RuntimeError, match="expects an int, but got float"):
        ember.set_num_threads(2.5)
    with pytest.raises(RuntimeError, match="expects an int, but got bool"):
        ember.set_num_threads(True)


def test_thread_count_first_read_under_one_blas_thread():
    """The pool's count, first read while a GEMM stack holds OpenBLAS at one thread, is still
    OpenBLAS's own count (it was once read as that stack's 1, and stayed 1)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
    code = ("from ember import _parallel as P, _blas\n"
            "seen = []\n"
            "P.split_gemms(4, lambda lo, hi: seen.append(P.get_num_threads()), 1)\n"
            "print(seen[0], P.get_num_threads(), _blas.get_num_threads())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    inside, after, blas = (int(v) for v in out.split())
    assert inside == after == blas


@pytest.mark.parametrize("value,expected", [("1", 1), ("3", 3), ("0", None), ("abc", None)])
def test_omp_num_threads_is_the_default(value, expected):
    env = dict(os.environ, OMP_NUM_THREADS=value)
    env.pop("OPENBLAS_NUM_THREADS", None)
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", "import ember; print(ember.get_num_threads())"],
                         env=env, capture_output=True, text=True, check=True).stdout
    n = int(out.strip().splitlines()[-1])
    if expected is None:  # not a positive integer: ignored (the BLAS's own count, >= 1)
        assert n >= 1
    else:
        assert n == expected


# ------------------------------------------------------------------ the pool itself


def test_parallel_for_covers_the_range_once(threads):
    seen = np.zeros(P.MIN_SIZE * 2, np.int64)

    def body():
        seen[:] = 0

        def fn(lo, hi):
            seen[lo:hi] += 1
        P.parallel_for(seen.size, fn)
        return seen.copy()
    r = threads(2, body)
    assert (r == 1).all()
    # a worker takes part: the caller's first chunk waits (bounded) until another thread has run one
    names, other = [], threading.Event()
    me = threading.current_thread().name

    def fn(lo, hi):
        names.append(threading.current_thread().name)
        if threading.current_thread().name == me:
            other.wait(20)
        else:
            other.set()
    threads(2, lambda: P.parallel_for(2, fn, work=4 * P.GRAIN))
    assert sorted(names) == sorted([me, "ember-intraop"])


def test_small_work_stays_on_the_caller(threads):
    names = []
    threads(2, lambda: P.parallel_for(1000, lambda lo, hi: names.append((threading.current_thread().name, lo, hi))))
    assert names == [(threading.current_thread().name, 0, 1000)]


def test_dynamic_threads_follow_idle_cores(threads, monkeypatch):
    """OMP_DYNAMIC (on unless OMP_DYNAMIC=false): no worker while other programs keep the cores busy."""
    ran = []

    def body():
        P._DYNAMIC = True
        P.parallel_for(4, lambda lo, hi: ran.append((lo, hi)), work=8 * P.GRAIN)
    monkeypatch.setattr(P, "_free_cores", lambda: 0.4)
    threads(2, body)
    assert ran == [(0, 4)]
    ran.clear()
    monkeypatch.setattr(P, "_free_cores", lambda: 2.0)
    threads(2, body)
    assert len(ran) == 4 and sorted(ran)[0] == (0, 1)


def test_omp_dynamic_false_turns_it_off():
    env = dict(os.environ, OMP_DYNAMIC="false")
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src"))
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", "from ember import _parallel as P; print(P._DYNAMIC)"],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.split()[-1] == "False"


def test_errors_from_a_worker_reach_the_caller(threads):
    def fn(lo, hi):
        if lo > 0:
            raise ValueError("chunk failed")
    with pytest.raises(ValueError, match="chunk failed"):
        threads(2, lambda: P.parallel_for(2, fn, work=4 * P.GRAIN))
    # and the pool still works afterwards
    r = []
    threads(2, lambda: P.parallel_for(2, lambda lo, hi: r.append(lo), work=4 * P.GRAIN))
    assert sorted(r) == [0, 1]


def test_nested_calls_run_serially(threads):
    inner = []

    def outer(lo, hi):
        P.parallel_for(2, lambda a, b: inner.append((a, b)), work=4 * P.GRAIN)
    threads(2, lambda: P.parallel_for(2, outer, work=4 * P.GRAIN))
    assert sorted(inner) == [(0, 2), (0, 2)]  # each outer chunk ran its inner loop whole


def _pipe_log(threads, n, nt, work=None, piece=None, fail=None):
    """pipeline(n) at nt threads, logging (event, lo, hi, thread name, produced spans so far); fail:
    "produce" or "consume" raises from the spans past the middle."""
    log, made = [], []

    def produce(lo, hi):
        if fail == "produce" and lo >= 500:
            raise ValueError("produce failed")
        made.append((lo, hi))
        log.append(("p", lo, hi, threading.current_thread().name, len(made)))

    def consume(lo, hi):
        if fail == "consume" and lo >= 500:
            raise ValueError("consume failed")
        log.append(("c", lo, hi, threading.current_thread().name, len(made)))
    threads(nt, lambda: P.pipeline(n, produce, consume, work=work, piece=piece))
    return log


@pytest.mark.parametrize("nt", [1, 2, 4])
def test_pipeline_produces_in_order_and_consumes_each_span_once_after_it(threads, nt):
    log = _pipe_log(threads, 1000, nt, work=64 * P.GRAIN, piece=100)
    me = threading.current_thread().name
    prod = [(lo, hi) for e, lo, hi, name, _ in log if e == "p"]
    assert all(name == me for e, _, _, name, _ in log if e == "p")
    assert prod[0][0] == 0 and prod[-1][1] == 1000 and all(a[1] == b[0] for a, b in zip(prod, prod[1:]))
    assert max(hi - lo for lo, hi in prod) <= 100
    assert len(prod) == (10 if nt == 1 else 8 * nt if nt == 4 else 16)  # parallel_for's cut, at most `piece`
    cons = [(lo, hi) for e, lo, hi, _, _ in log if e == "c"]
    assert sorted(cons) == prod
    for e, lo, hi, _, n_made in log:  # a span is consumed only after it was produced
        if e == "c":
            assert prod.index((lo, hi)) < n_made


def test_pipeline_without_threads_alternates(threads):
    log = _pipe_log(threads, 300, 2, work=10, piece=100)  # little work: the caller alone
    assert [(e, lo) for e, lo, *_ in log] == [("p", 0), ("c", 0), ("p", 100), ("c", 100), ("p", 200), ("c", 200)]


@pytest.mark.parametrize("where", ["produce", "consume"])
def test_pipeline_errors_reach_the_caller(threads, where):
    with pytest.raises(ValueError, match=f"{where} failed"):
        _pipe_log(threads, 1000, 2, work=64 * P.GRAIN, piece=100, fail=where)
    # and the pool still works afterwards
    log = _pipe_log(threads, 1000, 2, work=64 * P.GRAIN, piece=100)
    assert sorted((lo, hi) for e, lo, hi, *_ in log if e == "c") == [(lo, hi) for e, lo, hi, *_ in log if e == "p"]


# ------------------------------------------------------------------ routed kernels: bit for bit


BIG = (8, 64, 32, 32)  # 524288 elements: split at 2 threads


def _x(shape=BIG, dtype=ember.float32, seed=0, cl=False):
    g = ember.Generator().manual_seed(seed)
    x = ember.randn(*shape, generator=g, dtype=dtype)
    return x.to(memory_format=ember.channels_last) if cl else x


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "pow", "gt"])
@pytest.mark.parametrize("cl", [False, True])
def test_binary_ops_bit_identical(threads, op, cl):
    a, b = _x(cl=cl), _x(seed=1, cl=cl)
    bias = _x((64, 1, 1), seed=2)
    f = getattr(ember, op)
    if op == "pow":
        a, bias = a.abs(), bias.abs()
    half = 0.5 if op != "maximum" else ember.tensor(0.5)
    r = _both(threads, lambda: (f(a, b), f(a, bias), f(a, half), f(bias, a)))
    if cl:
        assert r[0].is_contiguous(memory_format=ember.channels_last)


@pytest.mark.parametrize("op", ["mul", "add", "div", "maximum", "gt"])
def test_outer_products_of_small_operands_split(threads, op):
    """Each operand under the split size, their broadcast over it (vmap's per-sample weight
    gradients are such a product): split, bit for bit."""
    a, b = _x((8, 64, 1), seed=1), _x((8, 1, 1024), seed=2)
    assert max(a.numel(), b.numel()) < 2 * SMALL_GRAIN <= 8 * 64 * 1024  # (the fixture's split size)
    r = _both(threads, lambda: getattr(ember, op)(a, b))
    assert tuple(r.shape) == (8, 64, 1024)


def test_mixed_dtypes_and_python_numbers(threads):
    a = _x(dtype=ember.float64)
    b = _x(seed=1)
    i = ember.randint(0, 10, BIG, generator=ember.Generator().manual_seed(3))
    _both(threads, lambda: (a + b, i + 1, i * 2.5, i / 3, b + i, a > 0.0, (i > 3) & (i < 8)))


def test_inplace_ops_bit_identical(threads):
    def run():
        a = _x()
        a.add_(_x(seed=1)).mul_(_x((64, 1, 1), seed=2)).sub_(0.25)
        a += 1
        return a
    _both(threads, run)


def test_overlapping_inplace_matches_numpy(threads):
    def run():
        a = _x((2 * P.MIN_SIZE,))
        a[1:] += a[:-1]  # NumPy buffers the overlap: the pool must not split it
        return a
    _both(threads, run, split=False)


def test_relu_bit_identical(threads):
    x = _x()
    x.view(-1)[::7] = float("nan")
    _both(threads, lambda: (ember.relu(x), ember.nn.functional.relu(_x(cl=True))))


def test_small_tensors_untouched(threads, monkeypatch):
    calls = []
    monkeypatch.setattr(P, "parallel_for", lambda *a, **k: calls.append(a))
    a = _x((64, 64))
    threads(2, lambda: (a + a, a * 2, ember.relu(a), a.add_(1)))
    assert calls == []


@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("k,stride,pad,cin,cout", [(3, 1, 1, 64, 64), (3, 1, 1, 3, 16), (3, 2, 1, 16, 32),
                                                   (1, 1, 0, 32, 64), (7, 2, 3, 3, 16)])
def test_conv2d_forward_backward_bit_identical(threads, cl, k, stride, pad, cin, cout):
    x = _x((8, cin, 32, 32), seed=4, cl=cl)
    w = _x((cout, cin, k, k), seed=5, cl=cl) * 0.1

    def run():
        xx, ww = x.detach().requires_grad_(), w.detach().requires_grad_()
        y = ember.nn.functional.conv2d(xx, ww, stride=stride, padding=pad)
        (y * y).sum().backward()
        return y, xx.grad, ww.grad
    _both(threads, run)


@pytest.mark.parametrize("make", [
    lambda ps: ember.optim.SGD(ps, lr=0.1),
    lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-4),
    lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1),
    lambda ps: ember.optim.Adam(ps, lr=1e-2),
    lambda ps: ember.optim.Adam(ps, lr=1e-2, weight_decay=0.1, amsgrad=True),
    lambda ps: ember.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    lambda ps: ember.optim.AdamW(ps, lr=1e-2, maximize=True),
])
def test_optimizer_updates_bit_identical(threads, make):
    def run():
        p = ember.nn.Parameter(_x((512, 512, 3, 3), seed=6))  # (a ResNet-18 layer4 conv weight)
        q = ember.nn.Parameter(_x((512, 512, 3, 3), seed=6).to(memory_format=ember.channels_last))
        opt = make([p, q])
        for s in range(3):
            p.grad = _x((512, 512, 3, 3), seed=10 + s)
            q.grad = _x((512, 512, 3, 3), seed=10 + s)  # (contiguous grad of a channels_last param)
            opt.step()
        return p, q
    r = _both(threads, run)
    assert r[0].detach().numpy().tobytes() != _x((512, 512, 3, 3), seed=6).numpy().tobytes()


@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_batch_norm_train_forward_backward_bit_identical(threads, cl, affine, dtype):
    x = _x((8, 64, 32, 32), seed=7, cl=cl, dtype=dtype) * 3 + 1
    w = _x((64,), seed=8, dtype=dtype) if affine else None
    b = _x((64,), seed=9, dtype=dtype) if affine else None

    def run():
        xx = x.detach().requires_grad_()
        ww = w.detach().requires_grad_() if affine else None
        bb = b.detach().requires_grad_() if affine else None
        rm, rv = ember.zeros(64, dtype=dtype), ember.ones(64, dtype=dtype)
        y = ember.nn.functional.batch_norm(xx, rm, rv, ww, bb, training=True)
        (y * _x((8, 64, 32, 32), seed=11, dtype=dtype)).sum().backward()
        out = [y, xx.grad, rm, rv]
        return out + ([ww.grad, bb.grad] if affine else [])
    r = _both(threads, run)
    if cl:
        assert r[0].is_contiguous(memory_format=ember.channels_last)


def test_batch_norm_1d_bit_identical(threads):
    x = _x((4096, 128), seed=12)

    def run():
        xx = x.detach().requires_grad_()
        y = ember.nn.functional.batch_norm(xx, None, None, training=True)
        (y * y).sum().backward()
        return y, xx.grad
    _both(threads, run)


@pytest.mark.parametrize("shape,dim", [((64, 8192), -1), ((8, 4, 128, 128), -1), ((8, 64, 32, 32), 1),
                                       ((4096, 64), 0)])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_softmax_log_softmax_bit_identical(threads, shape, dim, dtype):
    x = _x(shape, seed=13, dtype=dtype) * 4
    x.view(-1)[::1001] = float("-inf")
    x.view(-1)[5::4099] = 1e4            # rows that overflow: done again with their maximum subtracted
    F = ember.nn.functional
    _both(threads, lambda: (F.softmax(x, dim), F.log_softmax(x, dim)))


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("normalized", [(256,), (16, 256)])
def test_layer_norm_bit_identical(threads, affine, normalized):
    x = _x((64, 16, 256), seed=14) * 2 + 0.5
    w = _x(normalized, seed=15) if affine else None
    b = _x(normalized, seed=16) if affine else None
    _both(threads, lambda: ember.nn.functional.layer_norm(x, normalized, w, b))


def test_strided_operands_keep_numpy_layout(threads):
    base = _x((16, 64, 32, 32), seed=17)
    views = [base[::2], base.flip(0), base[:, :, ::2], base.transpose(1, 3), base[:8].permute(0, 2, 3, 1)]

    def run():
        out = []
        for v in views:
            out += [v * 2.0, v + 1, ember.relu(v), v / 3.0, v + v]
        return out
    _both(threads, run)


@pytest.mark.parametrize("groups", [2, 8])
def test_grouped_conv2d_bit_identical(threads, groups):
    """Grouped convolutions multiply one GEMM per group (split over the threads, each on one BLAS
    thread): bit for bit the one-thread result, forward and both gradients."""
    x = _x((8, 32, 24, 24), seed=6)
    w = _x((64, 32 // groups, 3, 3), seed=7) * 0.1

    def run():
        xx, ww = x.detach().requires_grad_(), w.detach().requires_grad_()
        y = ember.nn.functional.conv2d(xx, ww, padding=1, groups=groups)
        (y * y).sum().backward()
        return y, xx.grad, ww.grad
    _both(threads, run)


def test_per_sample_conv_grads_bit_identical(threads):
    """vmap(grad) over a conv net (its per-sample weight gradients are grouped convolutions, its
    batched convolutions blocked per image): bit for bit the one-thread result."""
    ember.manual_seed(0)
    conv = ember.nn.Conv2d(3, 16, 3)
    params = {k: v.detach() for k, v in conv.named_parameters()}
    x = _x((8, 3, 24, 24), seed=8)

    def loss(p, xi):
        return ember.func.functional_call(conv, p, (xi.unsqueeze(0),)).square().sum()

    def run():
        g = ember.func.vmap(ember.func.grad(loss), in_dims=(None, 0))(params, x)
        return g["weight"], g["bias"]
    _both(threads, run)


@pytest.mark.parametrize("other", ["tensor", "number"])
def test_where_bit_identical(threads, other):
    x, y = _x(seed=9), _x(seed=10)
    c = x > 0
    r = _both(threads, lambda: ember.where(c, x, y if other == "tensor" else 0.0))
    assert r.dtype is ember.float32


def test_where_by_bit_masks_is_numpys_where(threads):
    """P.where chooses values by bit masks: bit for bit np.where (dtype, shape, every bit: NaN
    payloads and -0.0 included) over random mixes of dtypes, broadcast and transposed inputs, zero
    and nonzero numbers, on one and two threads."""
    import ml_dtypes
    rng = np.random.default_rng(12)
    dtypes = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int64, np.int32, np.uint8, np.bool_]
    numbers = [0, 0.0, -0.0, np.nan, -np.inf, 3, True]

    def some(shape):  # a part of shape (broadcast ones, fewer leading axes)
        sh = tuple(1 if rng.random() < 0.3 else s for s in shape)
        return sh[rng.integers(0, len(sh)):] if rng.random() < 0.3 else sh

    def array(shape, dt):
        x = rng.standard_normal(shape) * 3
        x[rng.random(shape) < 0.05] = -0.0
        x = (x > 0) if dt is np.bool_ else x.astype(dt)
        return x.T.copy().T if x.ndim > 1 and rng.random() < 0.3 else x

    def same_bits(a, b):
        as_int = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
        return (a.dtype == b.dtype and a.shape == b.shape and
                np.array_equal(a.view(as_int[a.itemsize]), b.view(as_int[b.itemsize])))
    checked = 0
    for _ in range(120):
        shape = tuple(int(s) for s in rng.integers(1, 12, size=rng.integers(1, 4))) + (int(rng.integers(900, 3000)),)
        dt = dtypes[rng.integers(len(dtypes))]
        c = rng.random(some(shape)) < rng.random()
        a, b = array(some(shape), dt), array(some(shape), dt)
        if rng.random() < 0.5:
            a, b = (numbers[rng.integers(len(numbers))], b) if rng.random() < 0.5 else (a, numbers[rng.integers(len(numbers))])
        try:
            want = np.where(c, a, b)
        except (TypeError, ValueError):
            continue
        for n in (1, 2):
            assert same_bits(threads(n, lambda: P.where(c, a, b)), want), (dt, c.shape, np.shape(a), np.shape(b))
        checked += 1
    assert checked > 80


def test_relu_backward_under_vmap_bit_identical(threads):
    x = _x(seed=11)

    def run():
        return ember.func.vmap(ember.func.grad(lambda r: ember.relu(r).square().sum()))(x)
    _both(threads, run)


@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize("k,s,p", [(2, 2, 0), (3, 2, 1)])
def test_max_pool2d_bit_identical(threads, cl, k, s, p):
    """max_pool2d splits over images: values and indices (ties included) as on one thread."""
    x = _x((8, 64, 48, 48), cl=cl)
    x = ember.where(x > 1, ember.ones(()), x)  # ties: the first maximum in scan order wins

    def run():
        xx = x.detach().requires_grad_()
        y, i = ember.nn.functional.max_pool2d(xx, k, s, p, return_indices=True)
        (y * y).sum().backward()
        return y, i, xx.grad
    _both(threads, run)


def test_ufunc_output_layout_is_numpys():
    """_out_like's output (the array the split ufunc writes) has NumPy's own result layout over the
    axes longer than 1, for random mixes of broadcast, strided, permuted and reversed inputs,
    outer products (no input of the full shape) included; where it cannot say, it says None."""
    rng = np.random.default_rng(0)
    checked = outer = 0
    for _ in range(3000):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(v) for v in rng.integers(1, 5, nd))
        args = []
        for _ in range(2):
            xs = tuple(1 if rng.random() < 0.4 else n for n in shape)[int(rng.integers(0, nd)):]
            base = rng.standard_normal(tuple(n * 2 if rng.random() < 0.3 else n for n in xs)).astype(np.float32)
            x = base[tuple(slice(0, n * 2, 2) if b == 2 * n else slice(0, n) for b, n in zip(base.shape, xs))]
            if x.ndim > 1 and rng.random() < 0.4:
                p = rng.permutation(x.ndim)
                x = np.ascontiguousarray(x.transpose(p)).transpose(np.argsort(p))
            if x.ndim and rng.random() < 0.1:
                x = x[::-1]
            args.append(x)
        if rng.random() < 0.2:
            args[1] = np.float32(1.5)
        if np.broadcast_shapes(*(a.shape for a in args if isinstance(a, np.ndarray))) != shape:
            continue
        o = P._out_like(args, np.multiply, shape)
        if o is None:
            continue
        want = np.multiply(*args)
        spans = [i for i, n in enumerate(shape) if n > 1]
        assert o.shape == want.shape and o.dtype == want.dtype
        assert [o.strides[i] for i in spans] == [want.strides[i] for i in spans], (shape, args)
        checked += 1
        outer += not any(isinstance(a, np.ndarray) and a.shape == shape for a in args)
    assert checked > 500 and outer > 50


def test_outer_product_ufunc_is_split(threads):
    """A broadcast product with no input of the output's shape (a batch of outer products, as
    per-sample weight gradients are) runs on the pool, bit for bit and in NumPy's layout."""
    a = np.random.default_rng(1).standard_normal((8, 128, 1)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((8, 1, 600)).astype(np.float32)
    want = np.multiply(a, b)
    got = _both(threads, lambda: P.ufunc(np.multiply, a, b))
    _same(got, want)
