"""PyTorch's CPU random streams, vectorised on NumPy.

The engine is the 32-bit Mersenne Twister (mt19937) seeded with the low 32 bits of the seed; NumPy's
MT19937 bit generator runs it (its key and position are settable, so a state saved by PyTorch loads
here and continues the same stream). The samplers below turn its 32-bit draws into numbers the way
PyTorch's CPU kernels do, as learnt by black-box comparison with PyTorch 2.13 (same seed, compare,
bisect):

* a float32 uniform takes one draw, ``(r & 0xffffff) * 2**-24``; a float64 uniform takes two draws
  joined as ``(first << 32) | second``, ``(x & (2**53 - 1)) * 2**-53``;
* normal samples for fewer than 16 elements (or a non-contiguous output) are Box-Muller pairs in
  float64 from two float64 uniforms, the second of each pair cached in the generator;
* 16 or more contiguous elements: all uniforms drawn first, then each block of 16 turned into
  normals in place (the last, partial block redone on the last 16 elements with fresh uniforms);
  float64 with the C library's log/cos/sin (through NumPy's ufuncs where a one-time check finds
  them to be the C library's: see numpy_libm), float32 in float32 arithmetic with Cephes' single
  precision log and sincos polynomials evaluated with fused multiply-adds (what PyTorch's AVX2
  kernel computes; bit for bit the same on the tested inputs). The float32 kernels' input is one of
  2**24 uniforms, so every rewrite of them is checked on all of them (tests/test_random_kernels.py
  with EMBER_RNG_EXHAUSTIVE=1).
"""
import math
import os
import struct
import sys
import threading

import numpy as np

from . import _parallel

_M24 = np.uint64(0xFFFFFF)
_M24X2 = np.uint64(0x00FFFFFF00FFFFFF)
_HI = 1 if sys.byteorder == "little" else 0  # the high 32-bit word of a uint64 viewed as two
_M53 = np.uint64((1 << 53) - 1)
_S32 = np.uint64(32)
_F24 = np.float32(2.0 ** -24)
_F53 = 2.0 ** -53
_F24_PY = 2.0 ** -24
_M53_PY = (1 << 53) - 1
_DRAW_CHUNK = 1 << 15  # draw pairs per chunk of the uniform samplers (their scratch stays in cache)
_SMALL = 32  # up to this many values, per-element Python beats a sequence of NumPy calls
STATE_BYTES = 5056      # PyTorch's get_rng_state() size: the legacy generator-state layout
_KEY_AT, _TAIL_AT = 24, 24 + 624 * 8


def _pairs24(w, o):
    """o (2 len(w) elements, float32 or float64) <- the low 24 bits of the draws in w, Generator's
    uint64 integers each (first << 32) | second of two draws (cheaper than its uint32 ones), in
    stream order, as integers: both halves masked at once, converted from int32 (much cheaper than
    from uint64), each pair put back in order by the conversion's strides. w is overwritten."""
    w &= _M24X2
    v = w.view(np.int32)
    np.copyto(o[0::2], v[_HI::2], casting="unsafe")
    np.copyto(o[1::2], v[1 - _HI::2], casting="unsafe")


class MT:
    """The mt19937 stream with PyTorch's per-generator normal cache."""

    __slots__ = ("bg", "seed", "normal_cache", "_fresh_key", "_gen")

    def __init__(self, seed):
        self.bg = np.random.MT19937(0)
        self._gen = np.random.Generator(self.bg)  # its full-range uint32 integers: one draw each
        self.manual_seed(seed)

    def manual_seed(self, seed):
        seed = int(seed) & ((1 << 64) - 1)
        self.seed = seed
        self.bg._legacy_seeding(seed & 0xFFFFFFFF)
        self._fresh_key = None
        self.normal_cache = None

    def copy_from(self, other):
        self.bg.state = other.bg.state
        self.seed = other.seed
        self.normal_cache = other.normal_cache
        self._fresh_key = other._fresh_key

    # -- raw draws
    def u32(self, n):
        """n 32-bit draws (uint64 array)."""
        return self.bg.random_raw(n)

    def draws32(self, n):
        """n 32-bit draws as a uint32 array (half the memory of u32's, and faster)."""
        return self._gen.integers(0, 1 << 32, n, dtype=np.uint32)

    def u64(self, n):
        """n 64-bit draws, each (first << 32) | second of two 32-bit draws (uint64 array): the
        Generator's full-range uint64 integers are exactly that for MT19937, and cheaper than
        joining random_raw's halves."""
        return self._gen.integers(0, 1 << 64, n, dtype=np.uint64)

    def next32(self):
        return int(self.bg.random_raw())

    def next64(self):
        r = self.bg.random_raw(2)
        return (int(r[0]) << 32) | int(r[1])

    # -- uniforms
    def uniform_f32(self, n, out=None):
        """n float32 uniforms (into out, a contiguous float32 array of n elements, when given): the
        low 24 bits of each draw times 2**-24, a cache-sized chunk of draw pairs at a time, scaled
        while in cache."""
        if out is None:
            out = np.empty(n, np.float32)
        if n <= _SMALL:  # a few values: Python ints cost less than NumPy calls
            out[...] = [(r & 0xFFFFFF) * _F24_PY for r in self.bg.random_raw(n).tolist()]
            return out
        k = n >> 1
        for i in range(0, k, _DRAW_CHUNK):
            o = out[2 * i:2 * min(k, i + _DRAW_CHUNK)]
            _pairs24(self.u64(o.size >> 1), o)
            o *= _F24
        if n & 1:
            out[-1] = (int(self.bg.random_raw()) & 0xFFFFFF) * _F24_PY
        return out

    def uniform_f32_scaled(self, n, scale, shift, out):
        """out (a contiguous float32 array of n elements) <- fma(u, scale, shift) for n float32
        uniforms u, rounded once (PyTorch's uniform_ on [shift, shift + scale) with float32 bounds).
        u = k * 2**-24 for a 24-bit k, so u * scale = k * (scale * 2**-24) is exact in float64 and
        the sum rounded to float32 is the fused result: computed from the integers in float64
        scratch a chunk at a time, written straight into out. The draws stay on this thread, in
        stream order, while the intra-op threads turn the chunks already drawn into values."""
        if n <= _SMALL:
            s24 = float(scale) * _F24_PY
            out[...] = [(r & 0xFFFFFF) * s24 + float(shift) for r in self.bg.random_raw(n).tolist()]
            return out
        s24, shift = float(scale) * _F24_PY, float(shift)
        drawn = {}

        def produce(lo, hi):  # pairs lo..hi: values 2 lo .. 2 hi
            drawn[lo] = self.u64(hi - lo)

        def consume(lo, hi):
            t = _scratch("scaled64", 2 * (hi - lo), np.float64)
            _pairs24(drawn.pop(lo), t)
            t *= s24
            t += shift
            np.copyto(out[2 * lo:2 * hi], t, casting="unsafe")
        _parallel.pipeline(n >> 1, produce, consume, work=n * _UNIFORM_COST, piece=_DRAW_CHUNK)
        if n & 1:
            out[-1] = (int(self.bg.random_raw()) & 0xFFFFFF) * s24 + shift
        return out

    def uniform_f64(self, n, out=None):
        """n float64 uniforms (into out, a contiguous float64 array of n elements, when given, a
        chunk of draws at a time)."""
        if out is None:
            r = self.u64(n)
            r &= _M53
            i = r.view(np.int64)
            out = i.view(np.float64)  # converted in place (no fresh array to page-fault on)
            np.copyto(out, i, casting="unsafe")
        else:
            step = 2 * _DRAW_CHUNK
            for j in range(0, n, step):
                r = self.u64(min(step, n - j))
                r &= _M53
                np.copyto(out[j:j + step], r.view(np.int64), casting="unsafe")
        out *= _F53
        return out

    def uniform(self, n, dtype):
        return self.uniform_f64(n) if dtype == np.float64 else self.uniform_f32(n)

    # -- normals
    def normal_scalar(self, n):
        """n standard normals (float64) the element-by-element way: Box-Muller pairs, the sine
        half cached for the next call."""
        out = np.empty(n, np.float64)
        i = 0
        if n and self.normal_cache is not None:
            out[0] = self.normal_cache
            self.normal_cache = None
            i = 1
        m = n - i
        if 0 < m <= _SMALL:  # the same arithmetic on Python floats (the C library's functions)
            k = (m + 1) // 2
            raw = self.bg.random_raw(4 * k).tolist()
            vals = []
            log1p, sqrt, cos, sin, tau = math.log1p, math.sqrt, math.cos, math.sin, 2.0 * math.pi
            for q in range(0, 4 * k, 4):
                u1 = (((raw[q] << 32) | raw[q + 1]) & _M53_PY) * _F53
                u2 = (((raw[q + 2] << 32) | raw[q + 3]) & _M53_PY) * _F53
                r = sqrt(-2.0 * log1p(-u2))
                vals.append(r * cos(tau * u1))
                vals.append(r * sin(tau * u1))
            out[i:] = vals[:m]
            if m % 2:
                self.normal_cache = vals[-1]
        elif m:
            k = (m + 1) // 2
            u = self.uniform_f64(2 * k)
            u1, u2 = u[0::2], u[1::2]
            r = np.sqrt(-2.0 * libm(math.log1p, -u2))
            th = 2.0 * math.pi * u1
            pairs = np.empty((k, 2))
            pairs[:, 0] = r * libm(math.cos, th)
            pairs[:, 1] = r * libm(math.sin, th)
            flat = pairs.ravel()
            out[i:] = flat[:m]
            if m % 2:
                self.normal_cache = float(flat[-1])
        return out

    def normal_fill(self, n, dtype, mean=0.0, std=1.0, out=None):
        """n >= 16 normals of dtype (float32, float64 or float16) the blocked way (the contiguous
        path): uniforms for all n elements, each whole block of 16 turned into normals; when n is
        not a multiple of 16, 16 fresh uniforms for the last 16 elements, redone as one block.
        float16 draws float32 uniforms for the whole blocks only, and transforms in float64
        (PyTorch's generic kernel, observed). Written into out (a contiguous array of n elements of
        dtype) when given. float32 and float64 draw a cache-sized chunk of whole blocks' uniforms
        into out, then turn them into normals in place; the draws stay on this thread, in stream
        order, while the intra-op threads transform the chunks already drawn (each block's normals
        depend on its own uniforms only: the same values on any number of threads)."""
        f32, f64 = dtype == np.float32, dtype == np.float64
        bm = _bm_f32 if f32 else _bm_f64
        nblocks = n // 16
        if out is None:
            out = np.empty(n, dtype)
        blocks_out = out[:nblocks * 16].reshape(nblocks, 16)
        if f32 or f64:
            draw, flat = (self.uniform_f64 if f64 else self.uniform_f32), out[:nblocks * 16]

            def produce(lo, hi):
                draw(16 * (hi - lo), flat[16 * lo:16 * hi])

            def consume(lo, hi):
                b = blocks_out[lo:hi]
                bm(b, mean, std, b)
            # (threads for two whole chunks and more only: see _CHUNK)
            _parallel.pipeline(nblocks, produce, consume, work=nblocks, grain=_CHUNK, piece=_CHUNK)
            self.bg.random_raw(n % 16 * (2 if f64 else 1))  # the uniforms of the partial block,
        else:                                               # overwritten before use
            for i in range(0, nblocks, _CHUNK):
                k = min(_CHUNK, nblocks - i)
                bm(self._draw_blocks(k, dtype), mean, std, blocks_out[i:i + k])
        if n % 16:
            out[n - 16:] = bm(self._draw_blocks(1, dtype), mean, std).ravel()
        return out

    def _draw_blocks(self, k, dtype):
        """k blocks of 16 uniforms (k, 16) for normal_fill, in per-thread scratch: float64 ones for
        float64, float32 ones for float32, float32 ones widened to float64 for float16."""
        if dtype == np.float64:
            return self.uniform_f64(16 * k, _scratch("draw64", 16 * k, np.float64)).reshape(k, 16)
        u = self.uniform_f32(16 * k, _scratch("draw32", 16 * k, np.float32)).reshape(k, 16)
        return u if dtype == np.float32 else u.astype(np.float64)

    def uniform_f64_reader(self):
        """A reader of float64 uniforms one at a time for samplers that take a variable number of
        draws per element (buffered; close() leaves the stream just after the draws consumed)."""
        return _Reader(self)

    # -- state (PyTorch's layout: seed, left, seeded, next, 624 uint64 words, the normal cache)
    def get_state_bytes(self):
        st = self.bg.state["state"]
        key = np.asarray(st["key"], np.uint64)
        pos = int(st["pos"])
        if pos >= 624:
            left, nxt = 1, (0 if self._is_fresh(key) else 624)
        else:
            left, nxt = 625 - pos, pos
        b = bytearray(STATE_BYTES)
        struct.pack_into("<QiiQ", b, 0, self.seed, left, 1, nxt)
        b[_KEY_AT:_TAIL_AT] = key.astype("<u8").tobytes()
        if self.normal_cache is not None:
            struct.pack_into("<ddd i", b, _TAIL_AT, 0.0, self.normal_cache, 0.0, 1)
        return bytes(b)

    def _is_fresh(self, key):
        if self._fresh_key is None:
            bg = np.random.MT19937(0)
            bg._legacy_seeding(self.seed & 0xFFFFFFFF)
            self._fresh_key = np.asarray(bg.state["state"]["key"], np.uint64)
        return np.array_equal(key, self._fresh_key)

    def set_state_bytes(self, b, what="set_state"):
        if len(b) != STATE_BYTES:
            raise RuntimeError(f"{what}: expected a state of {STATE_BYTES} bytes (a uint8 tensor as "
                               f"get_state() returns), got {len(b)}")
        seed, left, seeded, nxt = struct.unpack_from("<QiiQ", b, 0)
        if not (1 <= left <= 624) or nxt > 624:
            raise RuntimeError(f"{what}: Invalid mt19937 state (left={left}, next={nxt})")
        key = np.frombuffer(bytes(b[_KEY_AT:_TAIL_AT]), "<u8")
        if (key >> np.uint64(32)).any():
            raise RuntimeError(f"{what}: Invalid mt19937 state (a state word does not fit 32 bits)")
        pos = 624 if left == 1 else nxt
        self.bg.state = {"bit_generator": "MT19937",
                         "state": {"key": key.astype(np.uint32), "pos": pos}}
        self.seed = seed
        self._fresh_key = None
        _x, y, _rho, valid = struct.unpack_from("<ddd i", b, _TAIL_AT)
        self.normal_cache = y if valid else None


class _Reader:
    __slots__ = ("mt", "start", "buf", "i", "used")

    def __init__(self, mt):
        self.mt = mt
        self.start = mt.bg.state
        self.buf, self.i, self.used = [], 0, 0

    def __call__(self):
        if self.i == len(self.buf):
            self.used += len(self.buf)
            self.buf, self.i = self.mt.uniform_f64(256).tolist(), 0
        self.i += 1
        return self.buf[self.i - 1]

    def close(self):
        n = self.used + self.i
        self.mt.bg.state = self.start
        if n:
            self.mt.bg.random_raw(2 * n)


def libm(fn, x):
    """fn (a function of Python's math module: the C library's) over a float64 array, as PyTorch's
    CPU kernels compute it (they call the C library). NumPy's own ufunc is used where a one-time
    check (_numpy_agrees) found it to give the C library's bits on this machine; otherwise, and for
    a few values, the C library element by element."""
    x = np.asarray(x, np.float64)
    if x.size > _SMALL:
        f = numpy_libm(fn)
        if f is not None:
            with np.errstate(all="ignore"):
                return f(x)
    return np.fromiter(map(fn, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


def libm_log(x):
    return libm(math.log, x)


# ---- NumPy's float64 log/log1p/sin/cos/tan/exp against the C library's
#
# PyTorch's float64 samplers call the C library (glibc's log, sin, ...). NumPy's float64 ufuncs call
# the same C functions in a plain loop unless it has a SIMD loop of its own for the function on this
# CPU (its AVX-512 log/exp, SVML on AVX-512 builds, its Highway sin/cos in some versions): those
# give different last bits on a sizeable fraction of inputs (they are faithful to about 1 ulp, not
# near-correctly rounded like glibc's, which errs beyond half an ulp on a tiny fraction only). So a
# NumPy loop either IS the C library's function, equal on every input, or differs from it on far
# more inputs than a few in a million: comparing a few tens of thousands of inputs -- random values
# over the whole range each sampler feeds the function, plus the hard spots (near 1 for log, tiny
# arguments for log1p, near the multiples of pi/2 for sin/cos/tan, the ends of the exp range, powers
# of two) -- tells the two cases apart; any difference at all and the element-by-element C library
# path is kept. The check runs once per function and process, on first use with more than _SMALL
# values (10 to 30 milliseconds). EMBER_RNG_SCALAR_LIBM=1 skips it and keeps the C library path.

_NP_LIBM = {math.log: np.log, math.log1p: np.log1p, math.sin: np.sin, math.cos: np.cos,
            math.tan: np.tan, math.exp: np.exp}
_NP_OK = {}
_CHECK_N = 1 << 13


def _check_inputs(fn):
    rng = np.random.default_rng(0x5EED)
    u = (rng.integers(0, 1 << 53, 2 * _CHECK_N, dtype=np.int64).astype(np.float64) * _F53)
    k = np.arange(1, 2049, dtype=np.float64)
    tiny = np.concatenate([k * _F53, k * 2.0 ** -40, 2.0 ** -np.arange(0, 1075.0)])
    if fn is math.log:    # 1 - u (normals), u (geometric), and log-uniform over the whole range
        big = 2.0 ** rng.uniform(-1074, 1024, _CHECK_N)
        return np.concatenate([1.0 - u, u[u > 0], 1.0 - tiny, 1.0 + k * 2.0 ** -52, tiny, big,
                               2.0 ** np.arange(-1074, 1024.0)])
    if fn is math.log1p:  # -u (exponential, normals), small arguments of both signs
        return np.concatenate([-u, u, -tiny, tiny, -(1.0 - tiny[:2048])])
    if fn in (math.sin, math.cos, math.tan):  # 2*pi*u (normals), pi*(u - 0.5) (cauchy), near k*pi/2
        base = np.arange(-8, 9) * (math.pi / 2)
        off = np.concatenate([-tiny[:256], -tiny[4096:], [0.0], tiny[:256], tiny[4096:]])
        near = (base[:, None] + off[None, :]).ravel()
        grid = np.concatenate([k, 2.0 ** 53 - k]) * _F53 * (2.0 * math.pi)
        return np.concatenate([2.0 * math.pi * u, math.pi * (u - 0.5), near, grid,
                               rng.uniform(-1e4, 1e4, _CHECK_N)])
    # exp: the finite range, small arguments, both ends
    return np.concatenate([rng.uniform(-746.0, 710.0, 2 * _CHECK_N), rng.standard_normal(_CHECK_N) * 4,
                           tiny, -tiny, 709.78 - tiny[:2048] * 1e3, -745.1 + tiny[:2048] * 1e3])


def _numpy_agrees(fn):
    x = _check_inputs(fn)
    want = np.empty_like(x)
    for i, v in enumerate(x.tolist()):
        try:
            want[i] = fn(v)
        except (ValueError, OverflowError):
            want[i] = np.nan  # (the C library's inf or NaN; math raises): not compared
    with np.errstate(all="ignore"):
        got = _NP_LIBM[fn](x)
    ok = np.isfinite(want)
    return bool(np.array_equal(got[ok].view(np.int64), want[ok].view(np.int64)))


def numpy_libm(fn):
    """NumPy's ufunc for fn (math.log, log1p, sin, cos, tan or exp) when it gives the C library's
    bits here (checked once, see above), else None."""
    ok = _NP_OK.get(fn)
    if ok is None:
        ok = fn in _NP_LIBM and not os.environ.get("EMBER_RNG_SCALAR_LIBM") and _numpy_agrees(fn)
        _NP_OK[fn] = ok
    return _NP_LIBM[fn] if ok else None


def _split(a):
    t = a * 134217729.0  # 2**27 + 1: Veltkamp's split into two 26-bit halves
    hi = t - (t - a)
    return hi, a - hi


def fma64(a, b, c):
    """float64 a*b + c with one rounding (as the C kernels' fused multiply-add), from the exact
    product (Dekker) and an error-free sum; the standard-normal case (b=1, c=0) costs nothing."""
    a = np.asarray(a, np.float64)
    if type(b) is float and type(c) is float and b == 1.0 and c == 0.0:
        return a.copy()
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(np.asarray(b, np.float64))
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    v = s - p
    t = (p - (s - v)) + (c - v)
    return s + (t + e)


_HALF64 = np.dtype("V64")  # 8 float64 values as one item: half a block (see _bm_f32)


def _bm_f64(blocks, mean, std, out=None):
    k = blocks.shape[0]
    halves = np.ascontiguousarray(blocks, np.float64).view(_HALF64)  # (k, 2)
    u = np.empty(8 * k)
    np.copyto(u.view(_HALF64), halves[:, 0])
    np.subtract(1.0, u, out=u)
    r = libm_log(u)
    r *= -2.0
    np.sqrt(r, out=r)
    np.copyto(u.view(_HALF64), halves[:, 1])
    u *= 2.0 * math.pi
    if out is None:
        out = np.empty(blocks.shape, blocks.dtype)
    c = libm(math.cos, u)
    c *= r
    s = libm(math.sin, u)
    s *= r
    if not (std == 1.0 and mean == 0.0):
        c = fma64(c, std, mean)
        s = fma64(s, std, mean)
    return _store_halves(out, c, s)


def _store_halves(out, c, s):
    """out (k, 16) <- the cosine normals c (8k,) in the first half of each block, the sine ones s in
    the second: as one item per half-block where out is contiguous and of c's dtype (a ufunc over
    a strided (k, 8) view runs 8 elements per inner loop), else through the strided views."""
    k = out.shape[0]
    if out.dtype == c.dtype and out.flags.c_contiguous:
        half = np.dtype(f"V{8 * c.itemsize}")
        o = out.view(half)
        np.copyto(o[:, 0], c.view(half))
        np.copyto(o[:, 1], s.view(half))
    else:
        out[:, :8] = c.reshape(k, 8)
        out[:, 8:] = s.reshape(k, 8)
    return out


# ---- float32: Cephes' single-precision log and sincos, with the multiply-adds fused

_f32 = np.float32


def _fma(a, b, c):
    """float32 a*b + c rounded once (the product of two float32 is exact in float64)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + c).astype(_f32)


def fma32_(a, b, c):
    """a (a contiguous float32 array) <- a * b + c rounded once, b and c float32 scalars; a cache-
    sized chunk at a time through float64 scratch (no full-size temporaries)."""
    if not a.flags.c_contiguous:
        a[...] = _fma(a, b, c)
        return a
    flat = a.reshape(-1)
    b, c = float(b), float(c)
    step = _CHUNK * 8
    w64 = _work(min(step, flat.size))[1][0]
    for i in range(0, flat.size, step):
        part = flat[i:i + step]
        t = w64[:part.size]
        np.copyto(t, part)
        t *= b
        t += c
        np.copyto(part, t, casting="unsafe")
    return a


_LOG_P = [float(_f32(v)) for v in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                                   1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                                   3.3333331174E-1)]
_i32 = np.int32


# The float32 math below follows PyTorch's AVX2 kernel: float32 arithmetic whose multiply-adds are
# fused (one rounding). A fused a * b + c of float32 values is computed in float64 (the product is
# exact there) and rounded once to float32; where the product is exact in float32 too (a halving, a
# small integer times a constant of few bits) or there is no addition, plain float32 arithmetic is
# the same thing and one pass instead of four. Both functions were checked bit for bit against the
# step-by-step emulation on all 2**24 inputs the normal sampler can give them (test_random_kernels).
# No np.where (slow on random masks): selections are bit operations.

_SQRTHF = _f32(0.707106781186547524)
_SQRTHF_BITS = int(_SQRTHF.view(_i32))  # 0x3F3504F3
_LOG_Q1, _LOG_Q2 = _f32(-2.12194440e-4), _f32(0.693359375)


class _Work(threading.local):
    """Scratch arrays of the float32 kernels, kept per thread: NumPy's fresh temporaries of 128 KiB
    and more come from mmap and page-fault on every call, which cost more than the arithmetic."""
    n = 0
    f32 = f64 = i32 = ()


_WORK = _Work()


def _scratch(name, n, dtype):
    """A per-thread scratch array of n elements of dtype, kept under name (grown as needed)."""
    a = _WORK.__dict__.get(name)
    if a is None or a.size < n:
        a = np.empty(n, dtype)
        setattr(_WORK, name, a)
    return a[:n]


def _work(n):
    """Scratch views of n elements: 12 float32, 7 float64, 5 int32 (grown as needed)."""
    w = _WORK
    if w.n < n or not w.f64:  # (a thread's first call, even for n == 0, makes the lists)
        w.f32 = [np.empty(n, _f32) for _ in range(12)]
        w.f64 = [np.empty(n, np.float64) for _ in range(7)]
        w.i32 = [np.empty(n, _i32) for _ in range(5)]
        w.n = n
    return [a[:n] for a in w.f32], [a[:n] for a in w.f64], [a[:n] for a in w.i32]


def logf(x, work=None):
    """Natural log of positive normal float32 values, Cephes' logf evaluated with FMAs. The result
    is one of work's scratch arrays (float32 0 to 4, float64 0 to 2, int32 0 and 1 are used)."""
    f, d, i = work or _work(x.size)
    m, e, z, y, t = f[:5]
    m64, y64, z64 = d[:3]
    ex, k = i[:2]
    # Cephes: x = m * 2**ex with m in [0.5, 1) (frexp), m doubled and ex - 1 where m < sqrt(1/2):
    # x = M * 2**ex with M in [sqrt(1/2), 2 sqrt(1/2)), read off the bits (x is positive and normal):
    # ex = floor((bits(x) - bits(sqrt(1/2))) / 2**23), bits(M) = bits(x) - ex * 2**23
    b = x.view(_i32)
    np.subtract(b, _SQRTHF_BITS, out=ex)
    ex >>= 23
    np.left_shift(ex, 23, out=k)
    np.subtract(b, k, out=m.view(_i32))
    m -= _f32(1)                             # exact
    np.copyto(e, ex, casting="unsafe")
    np.copyto(m64, m)
    np.multiply(m, m, out=z)                 # float32 products: rounded once, as fused
    np.multiply(m64, _LOG_P[0], out=y64)
    y64 += _LOG_P[1]
    np.copyto(y, y64, casting="unsafe")
    for p in _LOG_P[2:]:                     # Horner with fused steps
        np.copyto(y64, y)
        y64 *= m64
        y64 += p
        np.copyto(y, y64, casting="unsafe")
    y *= m
    np.copyto(y64, y)
    np.copyto(z64, z)
    y64 *= z64
    np.multiply(e, _LOG_Q1, out=t)
    np.copyto(m64, t)
    y64 += m64
    np.copyto(y, y64, casting="unsafe")      # fma(y, z, e * q1)
    z *= _f32(0.5)
    y -= z                                   # fma(-0.5, z, y): the product is exact
    m += y
    e *= _LOG_Q2                             # exact (9-bit constant, small integer)
    m += e
    return m


_SC = [float(_f32(v)) for v in (2.443315711809948E-005, -1.388731625493765E-003, 4.166664568298827E-002,
                                -1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1)]
_DP = [float(_f32(v)) for v in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8)]
_FOPI = _f32(1.27323954473516)
_SIGN = _i32(-2 ** 31)


# dp1 + dp2 + dp3: exact in float64 (48 bits), and so are its products with the octants 0..8
# (tests/test_random_kernels.py checks both)
_DP_SUM = _DP[0] + _DP[1] + _DP[2]


def sincosf(x, work=None):
    """(sin, cos) of non-negative float32 values, Cephes' single-precision reduction and
    polynomials evaluated with FMAs. The results are two of work's scratch arrays (float32 5 to 9,
    float64 3 to 6, int32 2 to 4 are used)."""
    f, d, i = work or _work(x.size)
    y, xr, z, c, s = f[5:10]
    xr64, c64, z64, s64 = d[3:7]
    j, sw, diff = i[2:5]
    np.multiply(x, _FOPI, out=y)
    np.copyto(j, y, casting="unsafe")        # truncated
    j += 1
    j &= ~1
    # Cody-Waite reduction by j * pi/4 in three parts: xr = fma(j, dp3, (x + j * dp1) + j * dp2).
    # The first two steps are exact in float32 (j * dp1 and j * dp2 have few bits, x + j * dp1
    # cancels exactly, the second sum fits 24 bits on every input: checked on all 2**24), so the
    # whole is x - j * (dp1 + dp2) exactly in float64 (j * (dp1 + dp2) exact), plus j * dp3 rounded
    # once, then to float32; and as j * (dp1 + dp2 + dp3) is exact in float64 too, that is the
    # exact x + j * (dp1 + dp2 + dp3) rounded once: one sum
    np.copyto(c64, j)
    c64 *= _DP_SUM
    np.copyto(xr64, x)
    xr64 += c64
    np.copyto(xr, xr64, casting="unsafe")
    np.copyto(xr64, xr)
    np.multiply(xr, xr, out=z)
    np.copyto(z64, z)
    np.multiply(z64, _SC[0], out=c64)
    c64 += _SC[1]
    np.copyto(c, c64, casting="unsafe")
    np.copyto(c64, c)
    c64 *= z64
    c64 += _SC[2]
    np.copyto(c, c64, casting="unsafe")
    c *= z
    np.copyto(c64, c)
    c64 -= 0.5
    c64 *= z64
    np.copyto(c, c64, casting="unsafe")      # fma(c, z, -0.5 * z) as (c - 0.5) * z in float64
    c += _f32(1)
    np.multiply(z64, _SC[3], out=s64)
    s64 += _SC[4]
    np.copyto(s, s64, casting="unsafe")
    np.copyto(s64, s)
    s64 *= z64
    s64 += _SC[5]
    np.copyto(s, s64, casting="unsafe")
    s *= z
    np.copyto(s64, s)
    s64 *= xr64
    s64 += xr64
    np.copyto(s, s64, casting="unsafe")      # fma(s, xr, xr)
    c32 = c.view(_i32)
    s32 = s.view(_i32)
    np.left_shift(j, 30, out=sw)
    sw >>= 31                                # all ones where j & 2: sin and cos trade polynomials
    np.bitwise_xor(s32, c32, out=diff)
    diff &= sw
    s32 ^= diff
    c32 ^= diff
    np.left_shift(j, 29, out=sw)             # the quadrants' signs on bit 31: sin's is j's bit 2,
    sw &= _SIGN                              # cos's bit 2 of j + 2 (j is even: 0, 2, ..., 8)
    s32 ^= sw
    j += 2
    j <<= 29
    j &= _SIGN
    c32 ^= j
    return s, c


_TWO_PI_F = _f32(2 * math.pi)


_UNIFORM_COST = 4  # a float32 uniform's cost in elementwise operations, for the threads' grain
# Blocks per pass: fewer ufunc calls (each costs about a microsecond); the scratch arrays (8 MB a
# thread) stay in L3. Measured on a 32 MB L3: 8192 a few tens of percent faster than 2048. The
# intra-op threads take whole chunks only: the kernels are about a hundred NumPy calls a chunk, and
# every call hands the GIL over; two threads on smaller pieces were slower than one (two threads
# each transforming 512 / 2048 / 3906 / 8192 blocks at a time, against one thread doing both:
# 0.44x / 0.54x / 0.93x / 1.21x the speed, on two idle cores that run two processes at full speed).
_CHUNK = 8192


_HALF = np.dtype("V32")  # 8 float32 values as one item: half a block


def _bm_f32(blocks, mean, std, out=None):
    """Blocks of 16 float32 uniforms (k, 16) to normals: the first 8 of each block give the radii,
    the last 8 the angles (written into out, (k, 16) float32, when given). The halves of the blocks
    move between the interleaved layout and the kernels' contiguous arrays as 32-byte items (one
    copy loop; a ufunc over a (k, 8) strided view runs its inner loop 8 elements at a time and costs
    ten times a contiguous pass)."""
    k = blocks.shape[0]
    work = _work(8 * k)
    r, th = work[0][10:12]
    halves = np.ascontiguousarray(blocks).view(_HALF)  # (k, 2)
    np.copyto(r.view(_HALF), halves[:, 0])
    np.subtract(_f32(1), r, out=r)
    r = logf(r, work)
    r *= _f32(-2)
    np.sqrt(r, out=r)
    np.copyto(th.view(_HALF), halves[:, 1])
    np.multiply(_TWO_PI_F, th, out=th)
    s, c = sincosf(th, work)
    if out is None:
        out = np.empty_like(blocks)
    if mean == 0.0:  # fma(r * c, std, 0) is (r * c) * std, one rounding each
        c *= r
        s *= r
        if std != 1.0:
            c *= _f32(std)
            s *= _f32(std)
        return _store_halves(out, c, s)
    r = r.reshape(k, 8)
    out[:, :8] = _fma(r * c.reshape(k, 8), _f32(std), _f32(mean))
    out[:, 8:] = _fma(r * s.reshape(k, 8), _f32(std), _f32(mean))
    return out
