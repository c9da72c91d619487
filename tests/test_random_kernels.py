"""The float32 Box-Muller kernels of ember._cpu_rng (Cephes' logf and sincosf with fused
multiply-adds, as PyTorch's AVX2 normal kernel computes them) against a plain step-by-step
emulation written here: every fused multiply-add rounded once, everything else in float32. The
optimised kernels take shortcuts (plain float32 steps where a product is exact); this checks they
give the same bits. By default a stride of the 2**24 inputs the sampler can produce plus both ends;
EMBER_RNG_EXHAUSTIVE=1 checks all of them (about a minute)."""
import os

import numpy as np
import pytest

from ember import _cpu_rng as R

f32 = np.float32


def fma(a, b, c):
    """float32 a * b + c rounded once (the product of two float32 values is exact in float64)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(f32)


LOG_P = [f32(v) for v in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                          1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                          3.3333331174E-1)]


def logf_steps(x):
    m, e = np.frexp(x)
    small = m < f32(0.707106781186547524)
    e = (e - small).astype(f32)
    m = np.where(small, m + m, m) - f32(1)
    z = m * m
    y = fma(LOG_P[0], m, LOG_P[1])
    for p in LOG_P[2:]:
        y = fma(y, m, p)
    y = y * m
    y = fma(y, z, e * f32(-2.12194440e-4))
    y = fma(f32(-0.5), z, y)
    m = m + y
    return fma(e, f32(0.693359375), m)


SC = [f32(v) for v in (2.443315711809948E-005, -1.388731625493765E-003, 4.166664568298827E-002,
                       -1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1)]


def sincosf_steps(x):
    j = (x * f32(1.27323954473516)).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(f32)
    xr = fma(y, f32(-0.78515625), x)
    xr = fma(y, f32(-2.4187564849853515625e-4), xr)
    xr = fma(y, f32(-3.77489497744594108e-8), xr)
    z = xr * xr
    c = fma(z, SC[0], SC[1])
    c = fma(c, z, SC[2])
    c = c * z
    c = fma(c, z, f32(-0.5) * z)
    c = c + f32(1)
    s = fma(z, SC[3], SC[4])
    s = fma(s, z, SC[5])
    s = s * z
    s = fma(s, xr, xr)
    swap = (j & 2) != 0
    sn, cs = np.where(swap, c, s), np.where(swap, s, c)
    sn = np.where((j & 4) != 0, -sn, sn)
    cs = np.where(((j - 2) & 4) == 0, -cs, cs)
    return sn, cs


def _inputs():
    k = np.arange(1 << 24, dtype=np.int32)
    if not os.environ.get("EMBER_RNG_EXHAUSTIVE"):
        k = np.unique(np.concatenate([k[::61], k[:4096], k[-4096:]]))
    u = k.astype(f32) * f32(2.0 ** -24)          # every float32 uniform the stream can give
    return f32(1) - u, R._TWO_PI_F * u            # the inputs of the log and of sincos


def same_bits(a, b):
    a, b = np.asarray(a, f32).view(np.int32), np.asarray(b, f32).view(np.int32)
    bad = np.flatnonzero(a != b)
    assert bad.size == 0, f"{bad.size} differ, first at {bad[:5]}"


def test_logf_matches_the_step_by_step_emulation():
    x, _ = _inputs()
    for i in range(0, x.size, 1 << 20):
        same_bits(R.logf(x[i:i + (1 << 20)].copy()), logf_steps(x[i:i + (1 << 20)]))


def test_sincosf_matches_the_step_by_step_emulation():
    _, x = _inputs()
    for i in range(0, x.size, 1 << 20):
        s, c = R.sincosf(x[i:i + (1 << 20)].copy())
        s2, c2 = sincosf_steps(x[i:i + (1 << 20)])
        same_bits(s, s2)
        same_bits(c, c2)


def test_sincosf_reduction_constant_is_exact():
    """sincosf's reduction x + j * (dp1 + dp2 + dp3) is one float64 sum only because the constant's
    sum and its products with every octant j are exact in float64."""
    from fractions import Fraction
    exact = sum(Fraction(float(d)) for d in R._DP[:3])
    for j in range(9):
        assert Fraction(j * R._DP_SUM) == j * exact


def test_kernels_are_close_to_the_true_functions():
    """A check of the reference itself: Cephes' float32 functions are within 2 ulps (sin/cos within
    2e-7 absolute) of the float64 ones on these inputs."""
    x, t = _inputs()
    lg = logf_steps(x[1:])
    assert np.all(np.abs(lg - np.log(x[1:].astype(np.float64))) <= 2 * np.spacing(np.abs(lg)) + 1e-30)
    s, c = sincosf_steps(t)
    assert np.abs(s - np.sin(t.astype(np.float64))).max() < 2e-7
    assert np.abs(c - np.cos(t.astype(np.float64))).max() < 2e-7


@pytest.mark.parametrize("n", [16, 17, 31, 32, R._CHUNK * 16 - 1, R._CHUNK * 16, R._CHUNK * 16 + 1,
                               R._CHUNK * 16 + 15, 2 * R._CHUNK * 16 + 17])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_normal_fill_chunking(n, dtype):
    """normal_fill works a chunk of _CHUNK blocks at a time: the same values as one chunk over the
    whole array, for sizes around the chunk boundary and the partial last block."""
    a, b = R.MT(7), R.MT(7)
    got = a.normal_fill(n, np.dtype(dtype), 0.5, 2.0)
    chunk = R._CHUNK
    try:
        R._CHUNK = 1 << 30
        want = b.normal_fill(n, np.dtype(dtype), 0.5, 2.0)
    finally:
        R._CHUNK = chunk
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert a.next32() == b.next32()


@pytest.mark.parametrize("n", [0, 1, 8191, 8192, 8193, 16383, 16384, 16385, 20000, 40000])
def test_fma32_in_chunks(n):
    """fma32_ (in place, a chunk at a time) is the one-shot fused multiply-add."""
    u = np.random.default_rng(n).random(n, dtype=np.float32)
    want = R._fma(u, f32(2.5), f32(-1.25))
    got = R.fma32_(u.copy(), f32(2.5), f32(-1.25))
    assert got.dtype == np.float32 and np.array_equal(got, want)


def test_fma32_in_place_on_a_strided_array():
    u = np.random.default_rng(1).random((300, 40), dtype=f32)
    want = R._fma(u.T, f32(3), f32(1))
    got = R.fma32_(u.T, f32(3), f32(1))
    assert np.array_equal(got, want) and np.array_equal(u.T, want)


@pytest.mark.parametrize("fn", ["log", "log1p", "sin", "cos", "tan", "exp"])
def test_numpy_libm_check_refuses_a_function_that_differs(fn, monkeypatch):
    """The one-time check that NumPy's float64 ufunc is the C library's: a loop differing in the
    last bit on one input in ten thousand is refused (the float64 samplers then stay on the C
    library element by element)."""
    import math
    f = getattr(math, fn)
    good = R._NP_LIBM[f]

    def off(x):
        y = good(x)
        bad = (np.arange(y.size) % 10007) == 5
        y.view(np.int64)[bad] ^= 1
        return y
    monkeypatch.setitem(R._NP_LIBM, f, off)
    assert not R._numpy_agrees(f)
    monkeypatch.setitem(R._NP_LIBM, f, good)
    monkeypatch.setattr(R, "_NP_OK", {})
    monkeypatch.setenv("EMBER_RNG_SCALAR_LIBM", "1")
    assert R.numpy_libm(f) is None


@pytest.mark.parametrize("n", [33, 1000, 20011])
def test_float64_normals_same_on_both_libm_paths(n, monkeypatch):
    """Whichever path the check picks (NumPy's ufuncs or the C library per element), the float64
    normals are the same."""
    import math
    a = R.MT(7)
    fast = [a.normal_fill(n, np.float64), a.normal_scalar(n), a.normal_fill(n, np.float64, 1.5, 0.25)]
    monkeypatch.setattr(R, "_NP_OK", {f: False for f in R._NP_LIBM})
    b = R.MT(7)
    slow = [b.normal_fill(n, np.float64), b.normal_scalar(n), b.normal_fill(n, np.float64, 1.5, 0.25)]
    for x, y in zip(fast, slow):
        assert np.array_equal(x.view(np.int64), y.view(np.int64))
    assert R.libm(math.log, np.array([0.5] * 40)).tolist() == [math.log(0.5)] * 40


@pytest.mark.parametrize("n", [16, 17, 1000, 16 * 2048 + 15, 10 ** 5 + 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_fill_on_several_threads(n, dtype, monkeypatch):
    """normal_fill's blocks shared by the intra-op threads (small chunks, so many pieces; no
    dynamic adjustment, so the pieces go to the pool even on a busy machine): the values and the
    stream position of one thread."""
    import ember
    from ember import _parallel as P
    monkeypatch.setattr(P, "_DYNAMIC", False)
    monkeypatch.setattr(R, "_CHUNK", 64)
    threads = set()
    bm = R._bm_f32 if dtype == np.float32 else R._bm_f64

    def spy(*a, **k):
        import threading
        threads.add(threading.get_ident())
        return bm(*a, **k)
    monkeypatch.setattr(R, "_bm_f32" if dtype == np.float32 else "_bm_f64", spy)
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = R.MT(3)
        want = one.normal_fill(n, np.dtype(dtype), 0.5, 2.0)
        ember.set_num_threads(4)
        several = R.MT(3)
        got = several.normal_fill(n, np.dtype(dtype), 0.5, 2.0)
    finally:
        ember.set_num_threads(before)
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    assert one.next32() == several.next32()
    assert threads


@pytest.mark.parametrize("n", [33, 1001, 2 * 4096 + 1, 10 ** 5 + 1])
@pytest.mark.parametrize("threads", [1, 4])
def test_uniform_f32_scaled_in_chunks_and_on_several_threads(n, threads, monkeypatch):
    """uniform_f32_scaled's pairs of draws in chunks (small, so many), turned into values on the
    intra-op threads (no dynamic adjustment: the pool is used even on a busy machine): each value
    is fma(k * 2**-24, scale, shift) of its own draw's low 24 bits, and the stream ends where one
    draw per value leaves it."""
    import ember
    from ember import _parallel as P
    monkeypatch.setattr(P, "_DYNAMIC", False)
    monkeypatch.setattr(R, "_DRAW_CHUNK", 512)
    scale, shift = np.float32(0.7), np.float32(-0.35)
    ref = R.MT(11)
    k = ref.bg.random_raw(n) & 0xFFFFFF
    want = (k * (float(scale) * 2.0 ** -24) + float(shift)).astype(np.float32)
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(threads)
        mt = R.MT(11)
        got = mt.uniform_f32_scaled(n, scale, shift, np.empty(n, np.float32))
    finally:
        ember.set_num_threads(before)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    assert mt.next32() == ref.next32()
