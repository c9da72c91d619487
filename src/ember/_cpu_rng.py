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
  float64 with the C library's log/cos/sin, float32 in float32 arithmetic with Cephes' single
  precision log and sincos polynomials evaluated with fused multiply-adds (what PyTorch's AVX2
  kernel computes; bit for bit the same on the tested inputs).
"""
import math
import struct

import numpy as np

_M24 = np.uint64(0xFFFFFF)
_M53 = np.uint64((1 << 53) - 1)
_S32 = np.uint64(32)
_F24 = np.float32(2.0 ** -24)
_F53 = 2.0 ** -53
_F24_PY = 2.0 ** -24
_M53_PY = (1 << 53) - 1
_LOW = 0 if np.little_endian else 1
_SMALL = 32  # up to this many values, per-element Python beats a sequence of NumPy calls
STATE_BYTES = 5056      # PyTorch's get_rng_state() size: the legacy generator-state layout
_KEY_AT, _TAIL_AT = 24, 24 + 624 * 8


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
        r = self.bg.random_raw(2 * n)
        return (r[0::2] << _S32) | r[1::2]

    def next32(self):
        return int(self.bg.random_raw())

    def next64(self):
        r = self.bg.random_raw(2)
        return (int(r[0]) << 32) | int(r[1])

    # -- uniforms
    def uniform_f32(self, n):
        if n <= _SMALL:  # a few values: Python ints cost less than NumPy calls
            return np.array([(r & 0xFFFFFF) * _F24_PY for r in self.bg.random_raw(n).tolist()], np.float32)
        # the low 32 bits of each draw (little-endian words), masked to 24 bits as int32: an int32
        # to float32 conversion is much cheaper than NumPy's uint64 one
        r = self.bg.random_raw(n).view(np.uint32)[_LOW::2].view(np.int32)
        out = np.bitwise_and(r, 0xFFFFFF).astype(np.float32)
        out *= _F24
        return out

    def uniform_f64(self, n):
        return (self.u64(n) & _M53).astype(np.float64) * _F53

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
            pairs[:, 0] = r * np.cos(th)
            pairs[:, 1] = r * np.sin(th)
            flat = pairs.ravel()
            out[i:] = flat[:m]
            if m % 2:
                self.normal_cache = float(flat[-1])
        return out

    def normal_fill(self, n, dtype, mean=0.0, std=1.0):
        """n >= 16 normals of dtype (float32, float64 or float16) the blocked way (the contiguous
        path): uniforms for all n elements, each whole block of 16 turned into normals; when n is
        not a multiple of 16, 16 fresh uniforms for the last 16 elements, redone as one block.
        float16 draws float32 uniforms for the whole blocks only, and transforms in float64
        (PyTorch's generic kernel, observed). Done a cache-sized chunk at a time."""
        f32, f64 = dtype == np.float32, dtype == np.float64
        if f32 or f64:
            draw = self.uniform_f64 if f64 else self.uniform_f32
        else:
            def draw(k):
                return self.uniform_f32(k).astype(np.float64)
        bm = _bm_f32 if f32 else _bm_f64
        nblocks = n // 16
        out = np.empty(n, dtype)
        blocks_out = out[:nblocks * 16].reshape(nblocks, 16)
        for i in range(0, nblocks, _CHUNK):
            k = min(_CHUNK, nblocks - i)
            blocks_out[i:i + k] = bm(draw(16 * k).reshape(k, 16), mean, std)
        if n % 16:
            if f32 or f64:
                draw(n % 16)  # the uniforms of the partial block, overwritten before use
            out[n - 16:] = bm(draw(16).reshape(1, 16), mean, std).ravel()
        return out

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
    """fn (a function of Python's math module: the C library's) over a float64 array. NumPy's SIMD
    log, exp, tan, ... differ from the C library in the last bit for some inputs, and PyTorch's CPU
    kernels call the C library."""
    x = np.asarray(x, np.float64)
    return np.fromiter(map(fn, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


def libm_log(x):
    return libm(math.log, x)


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


def _bm_f64(blocks, mean, std):
    u1 = 1.0 - blocks[:, :8]
    u2 = blocks[:, 8:]
    r = np.sqrt(-2.0 * libm_log(u1))
    th = 2.0 * math.pi * u2
    out = np.empty_like(blocks)
    out[:, :8] = fma64(r * np.cos(th), std, mean)
    out[:, 8:] = fma64(r * np.sin(th), std, mean)
    return out


# ---- float32: Cephes' single-precision log and sincos, with the multiply-adds fused

_f32 = np.float32


def _fma(a, b, c):
    """float32 a*b + c rounded once (the product of two float32 is exact in float64)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + c).astype(_f32)


_LOG_P = [float(_f32(v)) for v in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                                   1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                                   3.3333331174E-1)]
_SQRTHF_BITS = _f32(0.707106781186547524).view(np.int32)
_i32 = np.int32


def _r32(x, buf):
    """Round the float64 array x to float32 precision, in place (buf: a float32 scratch array)."""
    np.copyto(buf, x, casting="unsafe")
    np.copyto(x, buf)
    return x


# The float32 math below runs in float64 arrays holding float32 values, each step rounded back to
# float32: the product of two float32 values is exact in float64, so ``a * b + c`` rounded once to
# float32 is the fused multiply-add of the AVX2 kernel. Both functions were checked against a plain
# float32 emulation on all 2**24 inputs the normal sampler can give them. No np.where (slow on
# random masks): selections are bit operations.

def logf(x, buf=None):
    """Natural log of positive normal float32 values, Cephes' logf evaluated with FMAs."""
    if buf is None:
        buf = np.empty(x.shape, _f32)
    bits = x.view(_i32)
    mb = (bits & _i32(0x007FFFFF)) | _i32(0x3F000000)  # the mantissa in [0.5, 1)
    small = (mb < _SQRTHF_BITS).astype(np.float64)      # below sqrt(1/2): doubled, exponent - 1
    e = ((bits >> 23) - 126).astype(np.float64)
    e -= small
    m = mb.view(_f32).astype(np.float64)
    m *= small + 1.0
    m -= 1.0
    z = _r32(m * m, buf)
    y = m * _LOG_P[0]
    y += _LOG_P[1]
    _r32(y, buf)
    for p in _LOG_P[2:]:
        y *= m
        y += p
        _r32(y, buf)
    _r32(np.multiply(y, m, out=y), buf)
    t = _r32(e * float(_f32(-2.12194440e-4)), buf)
    y *= z
    y += t
    _r32(y, buf)
    y -= 0.5 * z
    _r32(y, buf)
    m += y
    _r32(m, buf)
    m += e * 0.693359375
    return m.astype(_f32)


_SC = [float(_f32(v)) for v in (2.443315711809948E-005, -1.388731625493765E-003, 4.166664568298827E-002,
                                -1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1)]
_DP = [float(_f32(v)) for v in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8)]
_FOPI = _f32(1.27323954473516)


def sincosf(x, buf=None):
    """(sin, cos) of non-negative float32 values, Cephes' single-precision reduction and
    polynomials evaluated with FMAs."""
    if buf is None:
        buf = np.empty(x.shape, _f32)
    j = (x * _FOPI).astype(_i32)
    j += 1
    j &= ~1
    y = j.astype(np.float64)
    xr = x.astype(np.float64)
    for dp in _DP:  # Cody-Waite reduction by j * pi/4 in three parts
        xr += y * dp
        _r32(xr, buf)
    z = _r32(xr * xr, buf)
    c = z * _SC[0]
    c += _SC[1]
    _r32(c, buf)
    c *= z
    c += _SC[2]
    _r32(c, buf)
    _r32(np.multiply(c, z, out=c), buf)
    c *= z
    c -= 0.5 * z
    _r32(c, buf)
    c += 1.0
    s = z * _SC[3]
    s += _SC[4]
    _r32(s, buf)
    s *= z
    s += _SC[5]
    _r32(s, buf)
    _r32(np.multiply(s, z, out=s), buf)
    s *= xr
    s += xr
    c32 = c.astype(_f32).view(_i32)
    s32 = s.astype(_f32).view(_i32)
    swap = ((j & 2) != 0).astype(_i32)
    np.negative(swap, out=swap)                 # all ones where sin and cos trade polynomials
    diff = (s32 ^ c32) & swap
    sn = s32 ^ diff
    cs = c32 ^ diff
    sn ^= (j & 4) << 29                         # the quadrants' signs, on bit 31
    cs ^= ((~(j - 2)) & 4) << 29
    return sn.view(_f32), cs.view(_f32)


_TWO_PI_F = _f32(2 * math.pi)


_CHUNK = 4096  # blocks per pass: the temporaries stay in the cache (twice as fast as one pass)


def _bm_f32(blocks, mean, std):
    buf = np.empty(blocks.shape[0] * 8, _f32)
    u1 = (_f32(1) - blocks[:, :8]).ravel()
    r = np.sqrt(_f32(-2) * logf(u1, buf))
    s, c = sincosf((_TWO_PI_F * blocks[:, 8:]).ravel(), buf)
    out = np.empty_like(blocks)
    if mean == 0.0:  # fma(r * c, std, 0) is (r * c) * std, one rounding each
        c *= r
        s *= r
        if std != 1.0:
            c *= _f32(std)
            s *= _f32(std)
        out[:, :8] = c.reshape(-1, 8)
        out[:, 8:] = s.reshape(-1, 8)
        return out
    out[:, :8] = _fma(r * c, _f32(std), _f32(mean)).reshape(-1, 8)
    out[:, 8:] = _fma(r * s, _f32(std), _f32(mean)).reshape(-1, 8)
    return out
