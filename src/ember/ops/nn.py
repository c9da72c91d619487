"""nn kernels: convolution, pooling, normalisation, embedding (torch.nn.functional's signatures).

Convolution is im2col by strided views plus one BLAS matmul. Both memory layouts have kernels:
channels_last (NHWC memory viewed as NCHW) gathers windows whose innermost run is the kw*C
contiguous pixels, and its output is the matmul's result as is; NCHW gathers (C, kh, kw) x
(Ho*Wo) columns and multiplies per image. 1x1 convolutions are plain matmuls (no copy at all in
channels_last). float32 stride-1 3x3 convolutions with 64 channels or more run as Winograd F(4x4, 3x3)
instead (36 batched GEMMs over tiles, 4x fewer multiplications; see _use_winograd): the forward,
the input gradient (itself such a convolution) and the weight gradient (the adjoint transforms).
The three convolution primitives -- forward, input gradient (which is also conv_transpose2d) and
weight gradient -- are each other's vjps, so create_graph works at any order.

Pooling works on window offsets (kh*kw strided slices of the whole batch, never a loop over
pixels). Fused backward kernels that are not closed under differentiation (batch norm) run only
when nothing observes them (grad mode off, no transform); otherwise the vjp is the composite
formula in ember ops. Forward-mode (jvp) rules are written in ember ops too.
"""
import math
import threading

import numpy as np

from .. import _dispatch as D
from .. import _parallel as _P
from .. import _dtype as dt
from .._dispatch import defop, dispatch
from .._memory_format import is_channels_last
from . import _util as U
from .elementwise import _cj  # conj of a complex operand (the conv vjps conjugate their other operand)
from .linalg import linear  # noqa: F401  (F.linear: the addmm path lives in linalg)

NN = "nn"
_as_strided = np.lib.stride_tricks.as_strided

# ----------------------------------------------------------------------------- scratch buffers


class _Scratch(threading.local):
    def __init__(self):
        self.bufs = {}
        self.nbytes = 0


_scratch = _Scratch()
_SCRATCH_LIMIT = 192 << 20


def _buf(xp, tag, shape, dtype, fill=None):
    """A reusable temporary (im2col columns, padded copies): fresh pages cost more than the copy.
    The caller must not let it escape. Buffers with ``fill`` keep that fill outside what the
    caller writes, so the tag must identify the region written (e.g. include the padding)."""
    s = _scratch
    key = (tag, shape, dtype, fill)
    a = s.bufs.pop(key, None)
    if a is None:
        a = xp.empty(shape, dtype) if fill is None else xp.full(shape, fill[0], dtype)
        s.nbytes += a.nbytes
        while s.nbytes > _SCRATCH_LIMIT and s.bufs:
            old = s.bufs.pop(next(iter(s.bufs)))
            s.nbytes -= old.nbytes
        if a.nbytes > _SCRATCH_LIMIT:
            s.nbytes -= a.nbytes
            return a
    s.bufs[key] = a  # most recently used last
    return a


# ----------------------------------------------------------------------------- argument helpers


def _tuple(v, n, name, op):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            v = tuple(v) * n
        if len(v) != n:
            raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of {n} "
                               f"values to match the convolution dimensions, but got {name}={list(v)}")
        out = []
        for x in v:
            try:
                out.append(x.__index__())
            except AttributeError:
                raise TypeError(f"{op}: {name} must be ints, got {type(x).__name__}") from None
        return tuple(out)
    try:
        return (v.__index__(),) * n
    except AttributeError:
        raise TypeError(f"{op}: {name} must be an int or a tuple of ints, got {type(v).__name__}") from None


# PyTorch's CPU kernel named in its error for complex input, where it differs from the op's name
_COMPLEX_KERNEL = {"layer_norm": "LayerNormKernelImpl", "group_norm": "GroupNormKernelImpl"}


def _float_check(op, *arrs):
    for a in arrs:
        if a is not None and a.dtype.kind == "c":
            U.no_complex(_COMPLEX_KERNEL.get(op, op), a)
        if a is not None and a.dtype.kind != "f" and a.dtype != U.BF16:
            raise RuntimeError(f"{op}: expected a floating point tensor, got {dt.FROM_NP[a.dtype].name}")


def _phys(a, nhwc):
    """The array in its memory order: NHWC for channels_last, NCHW otherwise."""
    return a.transpose(0, 2, 3, 1) if nhwc else a


def _unphys(a, nhwc):
    return a.transpose(0, 3, 1, 2) if nhwc else a


def _sp(nhwc, hs, ws):
    """Index tuple selecting spatial slices of a physical array."""
    return (slice(None), hs, ws, slice(None)) if nhwc else (slice(None), slice(None), hs, ws)


def _padded(xp, a, pads, fill, nhwc, tag="pad"):
    """a (physical layout) with (top, bottom, left, right) padding, in a reused buffer."""
    pt, pb, pl, pr = pads
    if not (pt or pb or pl or pr):
        return a
    if nhwc:
        N, H, W, C = a.shape
        shape = (N, H + pt + pb, W + pl + pr, C)
    else:
        N, C, H, W = a.shape
        shape = (N, C, H + pt + pb, W + pl + pr)
    buf = _buf(xp, tag, shape, a.dtype, (fill, pads))
    buf[_sp(nhwc, slice(pt, pt + H), slice(pl, pl + W))] = a
    return buf


def _rng(i, d, s, p, n_in, n_out):
    """For kernel offset i: (input slice, output slice) of the positions inside the unpadded input."""
    a = i * d - p
    lo = max(0, -(a // s))
    hi = min(n_out - 1, (n_in - 1 - a) // s)
    if hi < lo:
        return None
    h0 = lo * s + a
    return slice(h0, h0 + (hi - lo) * s + 1, s), slice(lo, hi + 1)


def _out_size(n, k, s, p0, p1, d):
    return (n + p0 + p1 - d * (k - 1) - 1) // s + 1


# ----------------------------------------------------------------------------- im2col


def _windows(a, nhwc, kh, kw, sh, sw, dh, dw, Ho, Wo):
    """Strided view of all windows: (N, Ho, Wo, kh, kw, C) for NHWC, (N, C, kh, kw, Ho, Wo) else."""
    if nhwc:
        N, _, _, C = a.shape
        sN, sH, sW, sC = a.strides
        return _as_strided(a, (N, Ho, Wo, kh, kw, C), (sN, sH * sh, sW * sw, sH * dh, sW * dw, sC),
                           writeable=False)
    N, C = a.shape[:2]
    sN, sC, sH, sW = a.strides
    return _as_strided(a, (N, C, kh, kw, Ho, Wo), (sN, sC, sH * dh, sW * dw, sH * sh, sW * sw),
                       writeable=False)


def _cols_nhwc(xp, x, kh, kw, st, pads, dil, Ho, Wo, groups):
    """Columns of x for NHWC: (M, kh*kw*C) when groups == 1, else (G, M, kh*kw*Cg)."""
    xh = x.transpose(0, 2, 3, 1)
    N, H, W, C = xh.shape
    M = N * Ho * Wo
    if kh == 1 and kw == 1 and not any(pads) and groups == 1:
        if st[0] != 1 or st[1] != 1:
            xh = xh[:, ::st[0], ::st[1]][:, :Ho, :Wo]
        return xh.reshape(M, C)
    xpd = _padded(xp, xh, pads, 0, True)
    win = _windows(xpd, True, kh, kw, st[0], st[1], dil[0], dil[1], Ho, Wo)
    if groups == 1:
        buf = _buf(xp, "cols", (N, Ho, Wo, kh, kw, C), x.dtype)
        _P.copyto(buf, win)
        return buf.reshape(M, kh * kw * C)
    G, Cg = groups, C // groups
    win = win.reshape(N, Ho, Wo, kh, kw, G, Cg).transpose(5, 0, 1, 2, 3, 4, 6)
    buf = _buf(xp, "colsg", (G, N, Ho, Wo, kh, kw, Cg), x.dtype)
    _P.copyto(buf, win)
    return buf.reshape(G, M, kh * kw * Cg)


_BLOCK_ROWS = 512  # GEMM rows per block: the block's columns stay in cache between copy and GEMM
_BLOCK_COLS = 1024  # the same for NCHW, whose GEMM (Cout x K times K x block) wants wider blocks


def _blocked(N):
    """Whether the blocked kernels (one small GEMM per block of output rows) run: on one thread, or
    with images to share among the threads (each thread takes whole images, OpenBLAS on one
    thread: _P.split_gemms). A multi-threaded GEMM per block would synchronise its threads every
    block, which costs more than the cache reuse gains."""
    return N >= 2 or _P.get_num_threads() == 1


def _conv_nhwc_blocked(xp, x, wm, b, kh, kw, st, pads, dil, Ho, Wo):
    """channels_last forward (groups 1) in blocks of output rows: gather a block of windows into a
    small reused buffer and multiply it straight into its rows of the (N, Ho, Wo, Cout) output, so
    the columns are read back from cache instead of memory."""
    xh = x.transpose(0, 2, 3, 1)
    N, H, W, C = xh.shape
    K, Cout = wm.shape
    win = _windows(_padded(xp, xh, pads, 0, True), True, kh, kw, st[0], st[1], dil[0], dil[1], Ho, Wo)
    out = xp.empty((N, Ho, Wo, Cout), x.dtype)
    work = N * Ho * Wo * K * Cout
    if Ho * Wo >= _BLOCK_ROWS:  # blocks of rows within an image
        rows = max(1, _BLOCK_ROWS // Wo)

        def run(lo, hi):  # images lo:hi (each thread its own scratch buffer)
            buf = _buf(xp, "colsb", (rows, Wo, kh, kw, C), x.dtype)
            for n in range(lo, hi):
                for r0 in range(0, Ho, rows):
                    r1 = min(Ho, r0 + rows)
                    cb = buf[:r1 - r0]
                    xp.copyto(cb, win[n, r0:r1])
                    ob = out[n, r0:r1].reshape(-1, Cout)
                    xp.matmul(cb.reshape(-1, K), wm, out=ob)
                    if b is not None:
                        ob += b
        _P.split_gemms(N, run, work)
    else:  # blocks of whole images
        imgs = max(1, _BLOCK_ROWS // (Ho * Wo))
        nb = (N + imgs - 1) // imgs

        def run(lo, hi):  # blocks lo:hi
            buf = _buf(xp, "colsb", (imgs, Ho, Wo, kh, kw, C), x.dtype)
            for blk in range(lo, hi):
                n0 = blk * imgs
                n1 = min(N, n0 + imgs)
                cb = buf[:n1 - n0]
                xp.copyto(cb, win[n0:n1])
                ob = out[n0:n1].reshape(-1, Cout)
                xp.matmul(cb.reshape(-1, K), wm, out=ob)
                if b is not None:
                    ob += b
        _P.split_gemms(nb, run, work)
    return out.transpose(0, 3, 1, 2)


def _flat_rows(kh, kw, st, Wo, Wr):
    """Stride-1 kernels wider than 1x1 gather and scatter whole shifted planes (see _cols_km), when
    the junk columns this adds to the GEMM (Wr - Wo per row) cost less than the strided copies."""
    return st == (1, 1) and (kh > 1 or kw > 1) and 8 * (Wr - Wo) <= Wo


def _cols_km(xp, x, kh, kw, st, pads, dil, Ho, Wo):
    """Columns of an NCHW x as one matrix (C*kh*kw, N*Ho*Wr), rows ordered (C, kh, kw), columns
    (N, Ho, Wr); returns (cols, Wr). Wr == Wo, except for stride 1 where columns keep the padded row
    length Wr = W + pads: kernel offset (i, j) is then the padded plane shifted by i*Wr + j, so each
    row of cols is one contiguous run of Ho*Wr pixels (the Wr - Wo extra columns per output row are
    junk the caller drops). The padded copy has one spare zero row so the last shift stays inside."""
    N, C, H, W = x.shape
    if kh == 1 and kw == 1 and not any(pads):
        if st[0] != 1 or st[1] != 1:
            x = x[:, :, ::st[0], ::st[1]][:, :, :Ho, :Wo]
        if N == 1:
            return x.reshape(C, Ho * Wo), Wo
        buf = _buf(xp, "colsk", (C, N, Ho, Wo), x.dtype)
        _P.copyto(buf, x.transpose(1, 0, 2, 3))
        return buf.reshape(C, N * Ho * Wo), Wo
    pt, pb, pl, pr = pads
    Hp, Wr = H + pt + pb, W + pl + pr
    if _flat_rows(kh, kw, st, Wo, Wr):
        xpd = _buf(xp, "fpad", (N, C, Hp + 1, Wr), x.dtype, (0, pads))
        _P.copyto(xpd[:, :, pt:pt + H, pl:pl + W], x)
        sN, sC, sH, sW = xpd.strides
        win = _as_strided(xpd, (C, kh, kw, N, Ho * Wr), (sC, dil[0] * sH, dil[1] * sW, sN, sW), writeable=False)
        buf = _buf(xp, "colsk", (C, kh, kw, N, Ho * Wr), x.dtype)
        _P.copyto(buf, win)
        return buf.reshape(C * kh * kw, N * Ho * Wr), Wr
    xpd = _padded(xp, x, pads, 0, False)
    win = _windows(xpd, False, kh, kw, st[0], st[1], dil[0], dil[1], Ho, Wo)
    buf = _buf(xp, "colsk", (C, kh, kw, N, Ho, Wo), x.dtype)
    _P.copyto(buf, win.transpose(1, 2, 3, 0, 4, 5))
    return buf.reshape(C * kh * kw, N * Ho * Wo), Wo


def _conv_nchw_blocked(xp, x, w2, b, kh, kw, st, pads, dil, Ho, Wo):
    """NCHW forward (groups 1) in blocks of output rows of one image: the block's (C*kh*kw, rows*Wr)
    columns (shifted-plane rows for stride 1, strided windows otherwise) are gathered into a small
    reused buffer, multiplied, and the product copied into the output rows with the bias."""
    N, C, H, W = x.shape
    Cout, K = w2.shape
    pt, pb, pl, pr = pads
    Hp, Wr = H + pt + pb, W + pl + pr
    if _flat_rows(kh, kw, st, Wo, Wr):
        xpd = _buf(xp, "fpad", (N, C, Hp + 1, Wr), x.dtype, (0, pads))
        _P.copyto(xpd[:, :, pt:pt + H, pl:pl + W], x)
        sN, sC, sH, sW = xpd.strides
        win = _as_strided(xpd, (N, C, kh, kw, Ho, Wr), (sN, sC, dil[0] * sH, dil[1] * sW, sH, sW),
                          writeable=False)
        rl = Wr
    else:
        win = _windows(_padded(xp, x, pads, 0, False), False, kh, kw, st[0], st[1], dil[0], dil[1], Ho, Wo)
        rl = Wo
    rows = max(1, min(Ho, _BLOCK_COLS // rl))
    out = xp.empty((N, Cout, Ho, Wo), x.dtype)
    bb = None if b is None else b.reshape(Cout, 1, 1)

    def run(lo, hi):  # images lo:hi (each thread its own scratch buffers)
        cbuf = _buf(xp, "colsnb", (K * rows * rl,), x.dtype)
        obuf = _buf(xp, "outnb", (Cout * rows * rl,), x.dtype)
        for n in range(lo, hi):
            for r0 in range(0, Ho, rows):
                r1 = min(Ho, r0 + rows)
                m = (r1 - r0) * rl
                cb = cbuf[:K * m].reshape(C, kh, kw, r1 - r0, rl)
                xp.copyto(cb, win[n, :, :, :, r0:r1])
                ob = obuf[:Cout * m].reshape(Cout, m)
                xp.matmul(w2, cb.reshape(K, m), out=ob)
                src = ob.reshape(Cout, r1 - r0, rl)[:, :, :Wo]
                if bb is None:
                    out[n, :, r0:r1] = src
                else:
                    xp.add(src, bb, out=out[n, :, r0:r1])
    _P.split_gemms(N, run, N * Cout * K * Ho * rl)
    return out


def _cm(xp, g, Wr):
    """g (N, Cout, Ho, Wo) as the matrix (Cout, N*Ho*Wr) in a reused buffer; columns past Wo zero."""
    N, Cout, Ho, Wo = g.shape
    if Wr == Wo and N == 1 and g.flags.c_contiguous:
        return g.reshape(Cout, Ho * Wo)
    buf = _buf(xp, "gcm", (Cout, N, Ho, Wr), g.dtype, (0, Wo) if Wr != Wo else None)
    _P.copyto(buf[..., :Wo], g.transpose(1, 0, 2, 3))
    return buf.reshape(Cout, N * Ho * Wr)


def _col2im_flat(xp, dcols, N, C, H, W, kh, kw, pads, dil, Ho, Wr, dtype):
    """Input gradient from (C*kh*kw, N*Ho*Wr) columns of a stride-1 conv: kh*kw shifted-plane adds
    into a padded (C, N, Hp, Wr) buffer, then the interior copied out as (N, C, H, W)."""
    pt, pb, pl, pr = pads
    Hp = H + pt + pb
    P = Hp * Wr
    L = Ho * Wr
    dst = _buf(xp, "c2i", (C, N, P), dtype)
    dst.fill(0)
    d5 = dcols.reshape(C, kh, kw, N, L)
    for i in range(kh):
        for j in range(kw):
            off = i * dil[0] * Wr + j * dil[1]
            n = min(L, P - off)  # past the plane end only junk columns remain
            dst[:, :, off:off + n] += d5[:, i, j, :, :n]
    out = xp.empty((N, C, H, W), dtype)
    _P.copyto(out, dst.reshape(C, N, Hp, Wr)[:, :, pt:pt + H, pl:pl + W].transpose(1, 0, 2, 3))
    return out


def _col2im(xp, dst, dcols, nhwc, kh, kw, st, pads, dil, Ho, Wo):
    """dst (zeroed) += the columns scattered back to their pixels. NHWC: dst (N, H, W, C) and dcols
    (N, Ho, Wo, kh, kw, C); else dst (C, N, H, W) and dcols (C, kh, kw, N, Ho, Wo)."""
    H, W = (dst.shape[1], dst.shape[2]) if nhwc else (dst.shape[2], dst.shape[3])
    for i in range(kh):
        rh = _rng(i, dil[0], st[0], pads[0], H, Ho)
        if rh is None:
            continue
        for j in range(kw):
            rw = _rng(j, dil[1], st[1], pads[2], W, Wo)
            if rw is None:
                continue
            if nhwc:
                src = dcols[:, rh[1], rw[1], i, j]
            else:
                src = dcols[:, i, j, :, rh[1], rw[1]]
            dst[_sp(nhwc, rh[0], rw[0])] += src


# Winograd F(4x4, 3x3) for stride-1, dilation-1, 3x3, groups-1 float32 convolutions. A 6x6 input
# tile d and a 3x3 filter g give the 4x4 output tile Y = A^T [(G g G^T) * (B^T d B)] A, with the
# polynomial points 0, 1, -1, 2, -2 and infinity:
#   B^T = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
#          [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]]
#   G   = [[1/4, 0, 0], [-1/6, -1/6, -1/6], [-1/6, 1/6, -1/6],
#          [1/24, 1/12, 1/6], [1/24, -1/12, 1/6], [0, 0, 1]]
#   A^T = [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]
# The elementwise product summed over input channels is one GEMM per tile position (36 of them):
# 36 multiplications per 16 outputs instead of 144. Each two-sided transform M t M^T over a tile is
# one linear map of its flattened entries, kron(M, M), so every stage is a GEMM over all tiles at
# once. The weight gradient is the adjoint of the same maps: with V the transformed input tiles and
# Gy = kron(A, A) applied to the output-gradient tiles, dW = kron(G, G)^T (sum over tiles V^T Gy).
# float32 only: its rounding error is about 1e-5 of the output's magnitude (direct: 1e-7).

_WINO_BT = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                     [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64)
_WINO_G = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                    [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])
_WINO_AT = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
                    np.float64)
_WINO_BB = np.kron(_WINO_BT, _WINO_BT).astype(np.float32)  # (36, 36): input tile -> B^T d B
_WINO_GG = np.kron(_WINO_G, _WINO_G).astype(np.float32)  # (36, 9): filter taps -> G g G^T
_WINO_AA = np.kron(_WINO_AT, _WINO_AT).astype(np.float32)  # (16, 36): product tile -> A^T m A


def _use_winograd(x, Cout, ksize, stride, dilation, groups, Ho, Wo):
    """Where 4x fewer multiplications beat the transforms' passes over memory, measured layer by
    layer against im2col with NumPy's OpenBLAS on one and two threads, AVX2 and AVX-512 kernels: at
    least 64 channels in and out, and at least 32 tiles. With fewer channels the transforms cost
    more than the GEMM they save; with fewer tiles the per-call filter transform (a 36 x 9 map
    per channel pair: the multiplications of 9 tiles, at a K=9 GEMM's lower rate) does."""
    C = x.shape[1]
    return (ksize == (3, 3) and stride == (1, 1) and dilation == (1, 1) and groups == 1 and x.dtype == np.float32
            and C >= _WINO_MIN_C and Cout >= _WINO_MIN_C
            and x.shape[0] * ((Ho + 3) // 4) * ((Wo + 3) // 4) >= _WINO_MIN_TILES)


_WINO_MIN_C, _WINO_MIN_TILES = 64, 32


def _wino_input(xp, x, pads, Th, Tw, tag):
    """Transformed input tiles B^T d B of x (N, C, H, W, any layout): (36, N*Th*Tw, C). The
    padded NHWC copy (which also transposes an NCHW x) is gathered into overlapping 6x6 tiles at
    stride 4, and one GEMM with kron(B^T, B^T) transforms them all."""
    N, C, H, W = x.shape
    pt, pb, pl, pr = pads
    d = _buf(xp, tag + "pad", (N, 4 * Th + 2, 4 * Tw + 2, C), x.dtype, (0, (H, W, pt, pl)))
    _P.copyto(d[:, pt:pt + H, pl:pl + W], x.transpose(0, 2, 3, 1))
    sN, sH, sW, sC = d.strides
    tiles = _as_strided(d, (6, 6, N, Th, Tw, C), (sH, sW, sN, 4 * sH, 4 * sW, sC), writeable=False)
    t = _buf(xp, tag + "tiles", (36, N * Th * Tw * C), x.dtype)
    _P.copyto(t.reshape(tiles.shape), tiles)
    v = _buf(xp, tag + "v", (36, N * Th * Tw, C), x.dtype)
    xp.matmul(_WINO_BB, t, out=v.reshape(36, -1))
    return v


def _conv_winograd(xp, x, w, b, pads, Ho, Wo, nhwc):
    """conv2d by Winograd F(4x4, 3x3): transformed tiles (36, tiles, C) @ transformed filter
    (36, C, Cout), then the output transform, written into the output's layout (cropped to Ho x Wo
    where the tiles overhang)."""
    N = x.shape[0]
    Cout, C = w.shape[:2]
    Th, Tw = (Ho + 3) // 4, (Wo + 3) // 4
    v = _wino_input(xp, x, pads, Th, Tw, "wf")
    u = xp.matmul(_WINO_GG, w.transpose(2, 3, 1, 0).reshape(9, C * Cout)).reshape(36, C, Cout)
    m = _buf(xp, "wm", (36, N * Th * Tw, Cout), x.dtype)
    _P.matmul(v, u, out=m)  # 36 GEMMs (tiles, C) @ (C, Cout), one per thread
    yt = _buf(xp, "wy", (16, N * Th * Tw * Cout), x.dtype)
    xp.matmul(_WINO_AA, m.reshape(36, -1), out=yt)
    yt = yt.reshape(4, 4, N, Th, Tw, Cout)
    if nhwc:
        y = xp.empty((N, Th, 4, Tw, 4, Cout), x.dtype)
        _P.copyto(y.transpose(2, 4, 0, 1, 3, 5), yt)
        y = y.reshape(N, 4 * Th, 4 * Tw, Cout)
    else:
        y = xp.empty((N, Cout, Th, 4, Tw, 4), x.dtype)
        _P.copyto(y.transpose(3, 5, 0, 2, 4, 1), yt)
        y = y.reshape(N, Cout, 4 * Th, 4 * Tw)
    if (4 * Th, 4 * Tw) != (Ho, Wo):
        y = xp.ascontiguousarray(y[_sp(nhwc, slice(0, Ho), slice(0, Wo))])
    y = _unphys(y, nhwc)
    if b is not None:
        y += b.reshape(Cout, 1, 1)
    return y


def _conv_weight_winograd(xp, x, g, pads, wcl):
    """Weight gradient of a conv2d that _use_winograd picks: the adjoint of its filter and output
    transforms. g (N, Cout, Ho, Wo) is zero-padded to whole tiles, its 4x4 tiles transformed by
    kron(A, A), multiplied against the input tiles per tile position and summed over tiles
    (36 GEMMs (C, tiles) @ (tiles, Cout)), and kron(G, G)^T maps the result back to 3x3 taps."""
    N, Cout, Ho, Wo = g.shape
    C = x.shape[1]
    Th, Tw = (Ho + 3) // 4, (Wo + 3) // 4
    v = _wino_input(xp, x, pads, Th, Tw, "ww")
    gp = _buf(xp, "wgpad", (N, Th, 4, Tw, 4, Cout), g.dtype, (0, (Ho, Wo)))
    _P.copyto(gp.reshape(N, 4 * Th, 4 * Tw, Cout)[:, :Ho, :Wo], g.transpose(0, 2, 3, 1))
    gt = _buf(xp, "wgt", (4, 4, N, Th, Tw, Cout), g.dtype)
    _P.copyto(gt, gp.transpose(2, 4, 0, 1, 3, 5))
    gy = _buf(xp, "wgy", (36, N * Th * Tw, Cout), g.dtype)
    xp.matmul(_WINO_AA.T, gt.reshape(16, -1), out=gy.reshape(36, -1))
    du = _P.matmul(v.transpose(0, 2, 1), gy)  # (36, C, Cout)
    dw = xp.matmul(_WINO_GG.T, du.reshape(36, -1)).reshape(3, 3, C, Cout)
    if wcl:  # (Cout, 3, 3, C) in memory
        return xp.ascontiguousarray(dw.transpose(3, 0, 1, 2)).transpose(0, 3, 1, 2)
    return xp.ascontiguousarray(dw.transpose(3, 2, 0, 1))


def _use_nhwc(x, w):
    return is_channels_last(x) or is_channels_last(w)


# ----------------------------------------------------------------------------- complex convolutions


def _complex_bilinear(xp, kernel, op, a, b, bias=None, **kw):
    """A real convolution kernel (bilinear in its two arrays a, b) on complex a, b: three real calls
    by Gauss's trick, (ar + ai)*br, ar*(bi - br), ai*(br + bi), so every fast real path (im2col GEMM,
    Winograd, channels_last blocks) serves complex input too. ``bias`` (complex, shape (C,)) is added
    to the output's channels. The real path never gets here (one dtype check in the kernel)."""
    if a.dtype != b.dtype or (bias is not None and bias.dtype != a.dtype):
        got = [dt.FROM_NP[a.dtype].name, dt.FROM_NP[b.dtype].name] + ([] if bias is None else
                                                                      [dt.FROM_NP[bias.dtype].name])
        raise RuntimeError(f"{op}: Input type ({got[0]}) and weight type ({got[1]})"
                           + ("" if bias is None else f" and bias type ({got[2]})") + " should be the same")
    ar, ai = a.real.copy(order="K"), a.imag.copy(order="K")
    br, bi = b.real, b.imag
    t1 = kernel(xp, ar + ai, br.copy(order="K"), **kw)
    t2 = kernel(xp, ar, bi - br, **kw)
    t3 = kernel(xp, ai, br + bi, **kw)
    out = xp.empty_like(t1, dtype=a.dtype)  # t1's memory layout (channels_last stays channels_last)
    xp.subtract(t1, t3, out=out.real)
    xp.add(t1, t2, out=out.imag)
    if bias is not None:
        out += bias.reshape((-1,) + (1,) * (out.ndim - 2))
    return out


# ----------------------------------------------------------------------------- conv2d


def _bias_check(op, input, bias):
    """PyTorch's error for a bias of another dtype than the input (a complex bias on real input included)."""
    if bias is not None and U.is_tensor(bias) and bias.dtype is not input.dtype:
        raise RuntimeError(f"{op}: Input type ({input.dtype.name}) and bias type ({bias.dtype.name}) should be the "
                           f"same")


def _conv_check(op, x, w, groups):
    if x.dtype is not w.dtype:
        raise RuntimeError(f"{op}: Input type ({dt.FROM_NP[x.dtype].name}) and weight type "
                           f"({dt.FROM_NP[w.dtype].name}) should be the same")
    _float_check(op, x)


def _conv2d_impl(xp, x, w, b=None, *, stride, pad, dilation, groups):
    if x.dtype.kind == "c":
        return _complex_bilinear(xp, _conv2d_impl, "conv2d", x, w, b, stride=stride, pad=pad, dilation=dilation,
                                 groups=groups)
    _conv_check("conv2d", x, w, groups)
    if U.is_lowp(x):  # float32 products and sums, rounded once (PyTorch's CPU kernels for these dtypes)
        return U.lowp_f32(_conv2d_impl, xp, x, w, b, stride=stride, pad=pad, dilation=dilation, groups=groups)
    N, C, H, W = x.shape
    Cout, Cg, kh, kw = w.shape
    Ho = _out_size(H, kh, stride[0], pad[0], pad[1], dilation[0])
    Wo = _out_size(W, kw, stride[1], pad[2], pad[3], dilation[1])
    G = groups
    if _use_winograd(x, Cout, (kh, kw), stride, dilation, G, Ho, Wo):
        return _conv_winograd(xp, x, w, b, pad, Ho, Wo, _use_nhwc(x, w))
    if _use_nhwc(x, w):
        if G == 1 and (kh > 1 or kw > 1 or any(pad)) and _blocked(N):
            wm = w.transpose(2, 3, 1, 0).reshape(kh * kw * Cg, Cout)
            return _conv_nhwc_blocked(xp, x, wm, b, kh, kw, stride, pad, dilation, Ho, Wo)
        cols = _cols_nhwc(xp, x, kh, kw, stride, pad, dilation, Ho, Wo, G)
        if G == 1:
            wm = w.transpose(2, 3, 1, 0).reshape(kh * kw * Cg, Cout)
            out = xp.matmul(cols, wm)
        else:
            wm = w.reshape(G, Cout // G, Cg, kh, kw).transpose(0, 3, 4, 2, 1).reshape(G, kh * kw * Cg, Cout // G)
            out = xp.empty((N * Ho * Wo, G, Cout // G), x.dtype)
            out.transpose(1, 0, 2)[...] = _P.matmul(cols, wm)
            out = out.reshape(-1, Cout)
        if b is not None:
            out += b
        return out.reshape(N, Ho, Wo, Cout).transpose(0, 3, 1, 2)
    if G == 1 and (kh > 1 or kw > 1 or any(pad)) and Ho * Wo >= 256 and _blocked(N):
        return _conv_nchw_blocked(xp, x, w.reshape(Cout, Cg * kh * kw), b, kh, kw, stride, pad, dilation, Ho, Wo)
    cols, Wr = _cols_km(xp, x, kh, kw, stride, pad, dilation, Ho, Wo)
    if G == 1:
        om = xp.matmul(w.reshape(Cout, Cg * kh * kw), cols)
    else:
        om = _P.matmul(w.reshape(G, Cout // G, Cg * kh * kw), cols.reshape(G, Cg * kh * kw, -1))
    om = om.reshape(Cout, N, Ho, Wr)[..., :Wo].transpose(1, 0, 2, 3)
    if b is None:
        return om.copy() if N > 1 or Wr != Wo else om
    out = xp.empty((N, Cout, Ho, Wo), x.dtype)
    xp.add(om, b.reshape(Cout, 1, 1), out=out)
    return out


def _conv_input_impl(xp, g, w, *, in_hw, stride, pad, dilation, groups, nhwc):
    """Gradient of conv2d w.r.t. its input (= conv_transpose2d of g)."""
    if g.dtype.kind == "c":
        return _complex_bilinear(xp, _conv_input_impl, "conv_transpose2d", g, w, in_hw=in_hw, stride=stride,
                                 pad=pad, dilation=dilation, groups=groups, nhwc=nhwc)
    _conv_check("conv2d_backward_input", g, w, groups)
    if U.is_lowp(g):
        return U.lowp_f32(_conv_input_impl, xp, g, w, in_hw=in_hw, stride=stride, pad=pad, dilation=dilation,
                          groups=groups, nhwc=nhwc)
    N, Cout, Ho, Wo = g.shape
    _, Cg, kh, kw = w.shape
    H, W = in_hw
    full = (dilation[0] * (kh - 1), dilation[0] * (kh - 1), dilation[1] * (kw - 1), dilation[1] * (kw - 1))
    if (groups == 1 and stride == (1, 1) and (kh > 1 or kw > 1) and all(p <= f for p, f in zip(pad, full))
            and (H * W >= (1024 if nhwc else 256) or _use_winograd(g, Cg, (kh, kw), stride, dilation, 1, H, W))):
        # stride 1: the input gradient is the forward convolution of g with the flipped, transposed
        # kernel (padding d*(k-1) - p): one im2col + GEMM (or Winograd) instead of GEMM + kh*kw
        # scatter-adds
        wf = w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
        if nhwc:
            wf = xp.ascontiguousarray(wf.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        else:
            wf = xp.ascontiguousarray(wf)
            if is_channels_last(g):
                g = xp.ascontiguousarray(g)
        return _conv2d_impl(xp, g, wf, stride=stride, pad=tuple(f - p for p, f in zip(pad, full)),
                            dilation=dilation, groups=1)
    G = groups
    C = Cg * G
    Coutg = Cout // G
    if nhwc:
        gm = g.transpose(0, 2, 3, 1).reshape(N * Ho * Wo, Cout)
        if G == 1:
            dcols = xp.matmul(gm, w.transpose(0, 2, 3, 1).reshape(Cout, kh * kw * Cg))
        else:
            wm = w.reshape(G, Coutg, Cg, kh, kw).transpose(0, 1, 3, 4, 2).reshape(G, Coutg, kh * kw * Cg)
            dcols = _P.matmul(gm.reshape(-1, G, Coutg).transpose(1, 0, 2), wm)  # (G, M, Kg)
        if kh == kw == 1 and stride == (1, 1) and not any(pad) and (Ho, Wo) == (H, W):
            dx = dcols.reshape(N, H, W, C) if G == 1 else \
                dcols.reshape(G, N, H, W, Cg).transpose(1, 2, 3, 0, 4).reshape(N, H, W, C)
            return dx.transpose(0, 3, 1, 2)
        if G == 1:
            d6 = dcols.reshape(N, Ho, Wo, kh, kw, C)
            dst = xp.zeros((N, H, W, C), g.dtype)
            _col2im(xp, dst, d6, True, kh, kw, stride, pad, dilation, Ho, Wo)
        else:
            d6 = dcols.reshape(G, N, Ho, Wo, kh, kw, Cg).transpose(1, 2, 3, 4, 5, 0, 6)
            dst = xp.zeros((N, H, W, G, Cg), g.dtype)
            _col2im(xp, dst, d6, True, kh, kw, stride, pad, dilation, Ho, Wo)
            dst = dst.reshape(N, H, W, C)
        return dst.transpose(0, 3, 1, 2)
    flat = _flat_rows(kh, kw, stride, Wo, W + pad[2] + pad[3])
    Wr = W + pad[2] + pad[3] if flat else Wo
    gm = _cm(xp, g, Wr)
    if G == 1:
        dcols = xp.matmul(w.reshape(Cout, Cg * kh * kw).T, gm)
    else:
        dcols = _P.matmul(w.reshape(G, Coutg, Cg * kh * kw).transpose(0, 2, 1), gm.reshape(G, Coutg, -1))
    if flat:
        return _col2im_flat(xp, dcols, N, C, H, W, kh, kw, pad, dilation, Ho, Wr, g.dtype)
    if kh == kw == 1 and stride == (1, 1) and not any(pad) and (Ho, Wo) == (H, W):
        dx = dcols.reshape(C, N, H, W).transpose(1, 0, 2, 3)
        return dx.copy() if N > 1 else dx
    d6 = dcols.reshape(C, kh, kw, N, Ho, Wo)
    dst = xp.zeros((N, C, H, W), g.dtype)
    _col2im(xp, dst.transpose(1, 0, 2, 3), d6, False, kh, kw, stride, pad, dilation, Ho, Wo)
    return dst


def _conv_weight_impl(xp, x, g, *, ksize, stride, pad, dilation, groups, nhwc, wcl):
    """Gradient of conv2d w.r.t. its weight."""
    if x.dtype.kind == "c":
        return _complex_bilinear(xp, _conv_weight_impl, "conv2d_backward_weight", x, g, ksize=ksize, stride=stride,
                                 pad=pad, dilation=dilation, groups=groups, nhwc=nhwc, wcl=wcl)
    _conv_check("conv2d_backward_weight", x, g, groups)
    if U.is_lowp(x):
        return U.lowp_f32(_conv_weight_impl, xp, x, g, ksize=ksize, stride=stride, pad=pad, dilation=dilation,
                          groups=groups, nhwc=nhwc, wcl=wcl)
    N, C, H, W = x.shape
    _, Cout, Ho, Wo = g.shape
    kh, kw = ksize
    G = groups
    Cg, Coutg = C // G, Cout // G
    if _use_winograd(x, Cout, ksize, stride, dilation, G, Ho, Wo):
        return _conv_weight_winograd(xp, x, g, pad, wcl)
    if nhwc:
        cols = _cols_nhwc(xp, x, kh, kw, stride, pad, dilation, Ho, Wo, G)
        gm = g.transpose(0, 2, 3, 1).reshape(N * Ho * Wo, Cout)
        if G == 1:
            gw = xp.matmul(gm.T, cols)  # (Cout, kh*kw*C): (Cout, kh, kw, C) in memory
        else:
            gw = _P.matmul(gm.reshape(-1, G, Coutg).transpose(1, 2, 0), cols)  # (G, Coutg, Kg)
        gw = gw.reshape(Cout, kh, kw, Cg).transpose(0, 3, 1, 2)
        return gw if wcl else xp.ascontiguousarray(gw)
    cols, Wr = _cols_km(xp, x, kh, kw, stride, pad, dilation, Ho, Wo)
    gm = _cm(xp, g, Wr)
    if G == 1:
        gw = xp.matmul(gm, cols.T).reshape(Cout, Cg, kh, kw)
    else:
        cols = cols.reshape(G, Cg * kh * kw, -1)
        gw = _P.matmul(gm.reshape(G, Coutg, -1), cols.transpose(0, 2, 1)).reshape(Cout, Cg, kh, kw)
    if wcl:
        return xp.ascontiguousarray(gw.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    return gw


conv2d_op = defop("conv2d", _conv2d_impl, save=("inputs",), family=NN, node_name="ConvolutionBackward0")
conv2d_input_op = defop("conv2d_backward_input", _conv_input_impl, save=("inputs",), family=NN,
                        node_name="ConvolutionBackwardInputBackward0")
conv2d_weight_op = defop("conv2d_backward_weight", _conv_weight_impl, save=("inputs",), family=NN,
                         node_name="ConvolutionBackwardWeightBackward0")


def _cparams(p):
    return {"stride": p["stride"], "pad": p["pad"], "dilation": p["dilation"], "groups": p["groups"]}


def _input_grad(g, w, p, in_hw, nhwc):
    """conv2d's input gradient (conv_transpose2d of g) for a conv with params ``p``."""
    return dispatch(conv2d_input_op, (g, w), dict(p, in_hw=in_hw, nhwc=nhwc))


def _weight_grad(x, g, p, w, nhwc):
    """conv2d's weight gradient, in the layout of the weight ``w``."""
    return dispatch(conv2d_weight_op, (x, g), dict(p, ksize=tuple(w.shape[2:]), nhwc=nhwc,
                                                   wcl=is_channels_last(w._data)))


@conv2d_op.def_vjp
def _(ctx, g):
    x, w = ctx.inputs[0], ctx.inputs[1]
    n = ctx.needs
    p = _cparams(ctx.params)
    nhwc = _use_nhwc(x._data, w._data)
    # complex: the conjugate of the other operand (_cj is the tensor itself when real)
    gx = _input_grad(g, _cj(w), p, tuple(x.shape[2:]), nhwc) if n[0] else None
    gw = _weight_grad(_cj(x), g, p, w, nhwc) if n[1] else None
    if len(n) > 2:
        return gx, gw, (g.sum((0, 2, 3)) if n[2] else None)
    return gx, gw


@conv2d_input_op.def_vjp
def _(ctx, v):
    g, w = ctx.inputs
    n = ctx.needs
    p = _cparams(ctx.params)
    dg = dispatch(conv2d_op, (v, _cj(w)), p) if n[0] else None
    if dg is not None and tuple(dg.shape[2:]) != tuple(g.shape[2:]):
        # an output_padding of at least the stride (allowed below the dilation) adds rows/columns
        # the convolution maps past g's extent: they are not g's
        dg = dg[:, :, :g.shape[2], :g.shape[3]]
    dw = _weight_grad(v, _cj(g), p, w, ctx.params["nhwc"]) if n[1] else None
    return dg, dw


@conv2d_weight_op.def_vjp
def _(ctx, v):
    x, g = ctx.inputs
    n = ctx.needs
    p = _cparams(ctx.params)
    dx = _input_grad(_cj(g), v, p, tuple(x.shape[2:]), ctx.params["nhwc"]) if n[0] else None
    dg = dispatch(conv2d_op, (_cj(x), v), p) if n[1] else None
    return dx, dg


def _tsum(*ts):
    r = None
    for t in ts:
        if t is not None:
            r = t if r is None else r + t
    return r


@conv2d_op.def_jvp
def _(ctx, tx, tw, tb=None):
    x, w = ctx.inputs[0], ctx.inputs[1]
    p = _cparams(ctx.params)
    return _tsum(None if tx is None else dispatch(conv2d_op, (tx, w), p),
                 None if tw is None else dispatch(conv2d_op, (x, tw), p),
                 None if tb is None else tb.reshape(-1, 1, 1))


@conv2d_input_op.def_jvp
def _(ctx, tg, tw):
    g, w = ctx.inputs
    p = ctx.params
    return _tsum(None if tg is None else dispatch(conv2d_input_op, (tg, w), p),
                 None if tw is None else dispatch(conv2d_input_op, (g, tw), p))


@conv2d_weight_op.def_jvp
def _(ctx, tx, tg):
    x, g = ctx.inputs
    p = ctx.params
    return _tsum(None if tx is None else dispatch(conv2d_weight_op, (tx, g), p),
                 None if tg is None else dispatch(conv2d_weight_op, (x, tg), p))


def _conv_padding(padding, k, dilation, stride, op):
    """(top, bottom, left, right) from an int, a pair, 'same' or 'valid'."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
            out = []
            for kk, d in zip(k, dilation):
                tot = d * (kk - 1)
                out += [tot // 2, tot - tot // 2]
            return tuple(out)
        raise ValueError(f"{op}: Invalid padding string {padding!r}, should be one of 'valid' or 'same'")
    ph, pw = _tuple(padding, 2, "padding", op)
    if ph < 0 or pw < 0:
        raise RuntimeError(f"{op}: negative padding is not supported")
    return (ph, ph, pw, pw)


def _conv_prep(input, weight, bias, stride, padding, dilation, groups, op):
    if not U.is_tensor(input) or not U.is_tensor(weight):
        raise TypeError(f"{op}(): argument 'input' and 'weight' must be Tensors")
    if weight.dim() != 4:
        raise RuntimeError(f"{op}: expected weight to be a 4-D tensor, but got weight of shape "
                           f"{U.fmt_shape(weight.shape)}")
    unbatched = input.dim() == 3
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to {op}, but got input of "
                           f"size: {U.fmt_shape(input.shape)}")
    if unbatched:
        input = input.unsqueeze(0)
    stride = _tuple(stride, 2, "stride", op)
    dilation = _tuple(dilation, 2, "dilation", op)
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero")
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported")
    k = tuple(weight.shape[2:])
    pad = _conv_padding(padding, k, dilation, stride, op)
    C = input.shape[1]
    Cout = weight.shape[0]
    if C != weight.shape[1] * groups:
        raise RuntimeError(f"{op}: Given groups={groups}, weight of size {U.fmt_shape(weight.shape)}, expected "
                           f"input{U.fmt_shape(input.shape)} to have {weight.shape[1] * groups} channels, but "
                           f"got {C} channels instead")
    if Cout < 1:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be at least 1 at dimension 0, but got "
                           f"weight of size {U.fmt_shape(weight.shape)} instead")
    if Cout % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size {U.fmt_shape(weight.shape)} instead")
    _bias_check(op, input, bias)
    if bias is not None and tuple(bias.shape) != (Cout,):
        raise RuntimeError(f"{op}: Given weight of size {U.fmt_shape(weight.shape)}, expected bias to be 1-dimensional "
                           f"with {Cout} elements, but got bias of size {U.fmt_shape(bias.shape)} instead")
    H, W = input.shape[2:]
    eh = dilation[0] * (k[0] - 1) + 1
    ew = dilation[1] * (k[1] - 1) + 1
    if H + pad[0] + pad[1] < eh or W + pad[2] + pad[3] < ew:
        raise RuntimeError(f"{op}: Calculated padded input size per channel: ({H + pad[0] + pad[1]} x "
                           f"{W + pad[2] + pad[3]}). Kernel size: ({eh} x {ew}). Kernel size can't be greater "
                           f"than actual input size")
    return input, unbatched, {"stride": stride, "pad": pad, "dilation": dilation, "groups": groups}


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    x, unbatched, p = _conv_prep(input, weight, bias, stride, padding, dilation, groups, "conv2d")
    args = (x, weight) if bias is None else (x, weight, bias)
    out = dispatch(conv2d_op, args, p)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if weight.dim() != 3:
        raise RuntimeError(f"conv1d: expected weight to be a 3-D tensor, but got weight of shape "
                           f"{U.fmt_shape(weight.shape)}")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
                           f"{U.fmt_shape(input.shape)}")
    if input.shape[-2] != weight.shape[1] * groups:
        raise RuntimeError(f"conv1d: Given groups={groups}, weight of size {U.fmt_shape(weight.shape)}, expected "
                           f"input{U.fmt_shape(input.shape)} to have {weight.shape[1] * groups} channels, but "
                           f"got {input.shape[-2]} channels instead")
    s = _tuple(stride, 1, "stride", "conv1d")[0]
    d = _tuple(dilation, 1, "dilation", "conv1d")[0]
    pad = padding if isinstance(padding, str) else (0, _tuple(padding, 1, "padding", "conv1d")[0])
    out = conv2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, (1, s), pad, (1, d), groups)
    return out.squeeze(-2)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    op = "conv_transpose2d"
    if weight.dim() != 4:
        raise RuntimeError(f"{op}: expected weight to be a 4-D tensor, but got weight of shape "
                           f"{U.fmt_shape(weight.shape)}")
    unbatched = input.dim() == 3
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to {op}, but got input of "
                           f"size: {U.fmt_shape(input.shape)}")
    x = input.unsqueeze(0) if unbatched else input
    stride = _tuple(stride, 2, "stride", op)
    dilation = _tuple(dilation, 2, "dilation", op)
    pad = _tuple(padding, 2, "padding", op)
    opad = _tuple(output_padding, 2, "output_padding", op)
    groups = int(groups)
    for o, s, d in zip(opad, stride, dilation):
        if o >= s and o >= d:
            raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={list(opad)}, stride={list(stride)}, dilation={list(dilation)}")
    if any(o >= s for o, s in zip(opad, stride)):
        # output padding of a stride or more (allowed below the dilation) crops the adjoint
        # convolution's padding: the N-d kernels of ops/conv3d.py take that, with a unit depth
        from .conv3d import conv_transpose3d
        out = conv_transpose3d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1,) + stride, (0,) + pad,
                               (0,) + opad, groups, (1,) + dilation).squeeze(2)
        return out.squeeze(0) if unbatched else out
    Cin = x.shape[1]
    if weight.shape[0] != Cin:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {U.fmt_shape(weight.shape)}, expected input"
                           f"{U.fmt_shape(x.shape)} to have {weight.shape[0]} channels, but got {Cin} channels "
                           f"instead")
    if Cin % groups:
        raise RuntimeError(f"{op}: input channels ({Cin}) must be divisible by groups ({groups})")
    Cout = weight.shape[1] * groups
    _bias_check(op, x, bias)
    if bias is not None and tuple(bias.shape) != (Cout,):
        raise RuntimeError(f"{op}: expected bias of shape [{Cout}], got {U.fmt_shape(bias.shape)}")
    kh, kw = weight.shape[2:]
    H, W = x.shape[2:]
    Ho = (H - 1) * stride[0] - 2 * pad[0] + dilation[0] * (kh - 1) + opad[0] + 1
    Wo = (W - 1) * stride[1] - 2 * pad[1] + dilation[1] * (kw - 1) + opad[1] + 1
    if Ho <= 0 or Wo <= 0:
        raise RuntimeError(f"{op}: computed output size ({Ho} x {Wo}) is too small")
    p = {"stride": stride, "pad": (pad[0], pad[0], pad[1], pad[1]), "dilation": dilation, "groups": groups,
         "in_hw": (Ho, Wo), "nhwc": _use_nhwc(x._data, weight._data)}
    out = dispatch(conv2d_input_op, (x, weight), p)
    if bias is not None:
        out = out + bias.reshape(Cout, 1, 1)
    return out.squeeze(0) if unbatched else out


# ----------------------------------------------------------------------------- pooling


def _pool_out(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    if ceil:
        o = -(-num // s) + 1
        if (o - 1) * s >= n + p:
            o -= 1
    else:
        o = num // s + 1
    return o


def _pool_geometry(x, kernel, stride, pad, dilation, ceil):
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, pad, dilation
    Ho = _pool_out(H, kh, sh, ph, dh, ceil)
    Wo = _pool_out(W, kw, sw, pw, dw, ceil)
    Hn = max(H + 2 * ph, (Ho - 1) * sh + dh * (kh - 1) + 1)
    Wn = max(W + 2 * pw, (Wo - 1) * sw + dw * (kw - 1) + 1)
    return Ho, Wo, (ph, Hn - H - ph, pw, Wn - W - pw)


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" or dtype == U.BF16 else np.iinfo(dtype).min


def _max_pool_core(xp, x, kernel, stride, pad, dilation, ceil_mode, want_idx):
    N, C, H, W = x.shape
    kh, kw = kernel
    sh, sw = stride
    dh, dw = dilation
    Ho, Wo, pads = _pool_geometry(x, kernel, stride, pad, dilation, ceil_mode)
    nhwc = is_channels_last(x)
    a = _padded(xp, _phys(x, nhwc), pads, _lowest(x.dtype), nhwc, "mpad")
    osh = (N, Ho, Wo, C) if nhwc else (N, C, Ho, Wo)
    out = xp.empty(osh, x.dtype)
    if want_idx:  # per-plane flat index (PyTorch's): window origin + the winning offset's displacement
        lut = ((xp.arange(kh) * dh)[:, None] * W + xp.arange(kw) * dw).reshape(-1)
        base = (xp.arange(Ho) * sh - pad[0])[:, None] * W + (xp.arange(Wo) * sw - pad[1])
        base = base[:, :, None] if nhwc else base
        idx = xp.empty(osh, lut.dtype)
        adt = np.int8 if kh * kw < 127 else np.int32  # (branch-free updates: masked copies are far slower)

    def run(lo, hi):  # images lo:hi (whole images: every value is a selection, the same on any thread)
        a_ = a[lo:hi]
        o = out[lo:hi]

        def sl(i, j):
            return a_[_sp(nhwc, slice(i * dh, i * dh + (Ho - 1) * sh + 1, sh),
                          slice(j * dw, j * dw + (Wo - 1) * sw + 1, sw))]
        xp.copyto(o, sl(0, 0))
        if want_idx:  # the first maximum in scan order wins ties, as in PyTorch
            arg = xp.zeros(o.shape, adt)
            mask = xp.empty(o.shape, bool)
            tmp = xp.empty(o.shape, adt)
        k = 0
        for i in range(kh):
            for j in range(kw):
                if k:
                    v = sl(i, j)
                    if want_idx:
                        xp.greater(v, o, out=mask)
                        xp.subtract(adt(k), arg, out=tmp)
                        xp.multiply(tmp, mask, out=tmp)
                        xp.add(arg, tmp, out=arg)
                    xp.maximum(o, v, out=o)
                k += 1
        if want_idx:
            ix = idx[lo:hi]
            xp.take(lut, arg, out=ix)
            ix += base
    if type(a) is np.ndarray and N > 1 and out.size >= _P.MIN_SIZE:
        _P.parallel_for(N, run, work=out.size * (kh * kw + 1) // 2)
    else:
        run(0, N)
    if not want_idx:
        return _unphys(out, nhwc), None
    return _unphys(out, nhwc), _unphys(idx, nhwc)


def _max_pool_impl(xp, x, *, kernel, stride, pad, dilation, ceil_mode):
    return _max_pool_core(xp, x, kernel, stride, pad, dilation, ceil_mode, False)[0]


def _max_pool_idx_impl(xp, x, *, kernel, stride, pad, dilation, ceil_mode):
    return _max_pool_core(xp, x, kernel, stride, pad, dilation, ceil_mode, True)


def _max_pool_bwd_impl(xp, g, idx, *, in_shape, nhwc, overlap):
    N, C, H, W = in_shape
    HW = H * W
    size = N * C * HW
    if nhwc:
        gp, ip = g.transpose(0, 2, 3, 1), idx.transpose(0, 2, 3, 1)
        gl = (ip + (xp.arange(N) * HW).reshape(N, 1, 1, 1)) * C + xp.arange(C)
    else:
        gp, ip = g, idx
        gl = ip + (xp.arange(N * C) * HW).reshape(N, C, 1, 1)
    gl = gl.reshape(-1)
    gv = gp.reshape(-1)
    if overlap:
        gx = xp.bincount(gl, weights=gv, minlength=size).astype(g.dtype, copy=False)
    else:
        gx = xp.zeros(size, g.dtype)
        gx[gl] = gv
    return _unphys(gx.reshape((N, H, W, C) if nhwc else (N, C, H, W)), nhwc)


# the index-free kernel runs only when no gradient can be asked for (see max_pool2d)
max_pool2d_op = defop("max_pool2d", _max_pool_impl, family=NN, differentiable=False)
max_pool2d_idx_op = defop("max_pool2d_with_indices", _max_pool_idx_impl, save=("inputs", "out"), nout=2,
                          diff_outputs=(0,), family=NN, node_name="MaxPool2DWithIndicesBackward0")
max_pool2d_bwd_op = defop("max_pool2d_with_indices_backward", _max_pool_bwd_impl, save=("inputs",),
                          family=NN)


def _overlap(p):
    return any(s < d * (k - 1) + 1 for k, s, d in zip(p["kernel"], p["stride"], p["dilation"]))


@max_pool2d_idx_op.def_vjp
def _(ctx, g, _gi=None):
    x, = ctx.inputs
    idx = ctx._out[1]  # the indices output; the pooled output (not needed) may be changed in place
    return dispatch(max_pool2d_bwd_op, (g, idx), {"in_shape": tuple(x.shape), "nhwc": is_channels_last(x._data),
                                                    "overlap": _overlap(ctx.params)})


@max_pool2d_bwd_op.def_vjp
def _(ctx, v):
    return _gather_planes(v, ctx.inputs[1]), None


def _gather_planes(v, idx):
    N, C = idx.shape[:2]
    return v.reshape(N, C, -1).gather(2, idx.reshape(N, C, -1)).reshape(idx.shape)


@max_pool2d_idx_op.def_jvp
def _(ctx, tx):
    return _gather_planes(tx, ctx.outs[1]), None


@max_pool2d_bwd_op.def_jvp
def _(ctx, tg, _ti=None):
    return dispatch(max_pool2d_bwd_op, (tg, ctx.inputs[1]), ctx.params)


def _pool_args(input, kernel_size, stride, padding, dilation, op):
    if input.dim() not in (3, 4):
        raise RuntimeError(f"{op}: Expected 3D or 4D (batch mode) tensor for input, got input of size "
                           f"{U.fmt_shape(input.shape)}")
    k = _tuple(kernel_size, 2, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _tuple(stride, 2, "stride", op)
    p = _tuple(padding, 2, "padding", op)
    d = _tuple(dilation, 2, "dilation", op)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got {list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride must be greater than zero, but got {list(s)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got {list(d)}")
    if any(pp < 0 or pp > kk // 2 for pp, kk in zip(p, k)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={list(p)}, "
                           f"kernel_size={list(k)}")
    return k, s, p, d


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    op = "max_pool2d"
    k, s, p, d = _pool_args(input, kernel_size, stride, padding, dilation, op)
    if input.is_complex():
        U.no_complex("max_pool2d", input)
    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    H, W = x.shape[2:]
    Ho = _pool_out(H, k[0], s[0], p[0], d[0], ceil_mode)
    Wo = _pool_out(W, k[1], s[1], p[1], d[1], ceil_mode)
    if Ho <= 0 or Wo <= 0:
        raise RuntimeError(f"{op}: Given input size: ({x.shape[1]}x{H}x{W}). Calculated output size: "
                           f"({x.shape[1]}x{Ho}x{Wo}). Output size is too small (kernel_size={list(k)}, "
                           f"stride={list(s)}, padding={list(p)})")
    params = {"kernel": k, "stride": s, "pad": p, "dilation": d, "ceil_mode": bool(ceil_mode)}
    if return_indices or (x._rg and D.grad_mode.enabled) or not D.state.simple:
        out, idx = dispatch(max_pool2d_idx_op, (x,), params)
        if unbatched:
            out, idx = out.squeeze(0), idx.squeeze(0)
        return (out, idx) if return_indices else out
    out = dispatch(max_pool2d_op, (x,), params)
    return out.squeeze(0) if unbatched else out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    k = _tuple(kernel_size, 1, "kernel_size", "max_pool1d")[0]
    s = k if stride is None else _tuple(stride, 1, "stride", "max_pool1d")[0]
    r = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _tuple(padding, 1, "padding", "max_pool1d")[0]),
                   (1, _tuple(dilation, 1, "dilation", "max_pool1d")[0]), ceil_mode, return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def _avg_divisor(xp, n, k, s, p, o, include_pad):
    st = xp.arange(o) * s - p
    en = xp.minimum(st + k, n + p)
    if include_pad:
        return en - st
    return xp.minimum(en, n) - xp.maximum(st, 0)


def _avg_scale(xp, H, W, k, s, p, Ho, Wo, cip, dov, dtype, nhwc):
    if dov:
        return 1.0 / dov
    dh = _avg_divisor(xp, H, k[0], s[0], p[0], Ho, cip)
    dw = _avg_divisor(xp, W, k[1], s[1], p[1], Wo, cip)
    r = (1.0 / (dh[:, None] * dw[None, :])).astype(dtype)
    return r[:, :, None] if nhwc else r


def _avg_pool_impl(xp, x, *, kernel, stride, pad, ceil_mode, count_include_pad, divisor_override):
    _float_check("avg_pool2d", x)
    if U.is_lowp(x):  # a float32 window sum, rounded once
        return U.lowp_f32(_avg_pool_impl, xp, x, kernel=kernel, stride=stride, pad=pad, ceil_mode=ceil_mode,
                          count_include_pad=count_include_pad, divisor_override=divisor_override)
    N, C, H, W = x.shape
    kh, kw = kernel
    sh, sw = stride
    Ho, Wo, pads = _pool_geometry(x, kernel, stride, pad, (1, 1), ceil_mode)
    nhwc = is_channels_last(x)
    a = _padded(xp, _phys(x, nhwc), pads, 0, nhwc, "apad")
    out = None
    for i in range(kh):
        for j in range(kw):
            v = a[_sp(nhwc, slice(i, i + (Ho - 1) * sh + 1, sh), slice(j, j + (Wo - 1) * sw + 1, sw))]
            if out is None:
                out = v.copy()
            else:
                out += v
    out *= _avg_scale(xp, H, W, kernel, stride, pad, Ho, Wo, count_include_pad, divisor_override, x.dtype, nhwc)
    return _unphys(out, nhwc)


def _avg_pool_bwd_impl(xp, g, *, in_shape, nhwc, kernel, stride, pad, ceil_mode, count_include_pad,
                       divisor_override):
    if U.is_lowp(g):
        return U.lowp_f32(_avg_pool_bwd_impl, xp, g, in_shape=in_shape, nhwc=nhwc, kernel=kernel, stride=stride,
                          pad=pad, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                          divisor_override=divisor_override)
    N, C, H, W = in_shape
    Ho, Wo = g.shape[2:]
    gs = _phys(g, nhwc) * _avg_scale(xp, H, W, kernel, stride, pad, Ho, Wo, count_include_pad,
                                     divisor_override, g.dtype, nhwc)
    dst = xp.zeros((N, H, W, C) if nhwc else (N, C, H, W), g.dtype)
    for i in range(kernel[0]):
        rh = _rng(i, 1, stride[0], pad[0], H, Ho)
        if rh is None:
            continue
        for j in range(kernel[1]):
            rw = _rng(j, 1, stride[1], pad[1], W, Wo)
            if rw is None:
                continue
            dst[_sp(nhwc, rh[0], rw[0])] += gs[_sp(nhwc, rh[1], rw[1])]
    return _unphys(dst, nhwc)


avg_pool2d_op = defop("avg_pool2d", _avg_pool_impl, save=("inputs",), family=NN, node_name="AvgPool2DBackward0")
avg_pool2d_bwd_op = defop("avg_pool2d_backward", _avg_pool_bwd_impl, family=NN)


@avg_pool2d_op.def_vjp
def _(ctx, g):
    x, = ctx.inputs
    return dispatch(avg_pool2d_bwd_op, (g,), dict(ctx.params, in_shape=tuple(x.shape),
                                                  nhwc=is_channels_last(x._data)))


@avg_pool2d_bwd_op.def_vjp
def _(ctx, v):
    p = dict(ctx.params)
    del p["in_shape"], p["nhwc"]
    return dispatch(avg_pool2d_op, (v,), p)


avg_pool2d_op.jvp = lambda ctx, t: dispatch(avg_pool2d_op, (t,), ctx.params)
avg_pool2d_bwd_op.jvp = lambda ctx, t: dispatch(avg_pool2d_bwd_op, (t,), ctx.params)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    op = "avg_pool2d"
    k, s, p, _ = _pool_args(input, kernel_size, stride, padding, 1, op)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    H, W = x.shape[2:]
    Ho = _pool_out(H, k[0], s[0], p[0], 1, ceil_mode)
    Wo = _pool_out(W, k[1], s[1], p[1], 1, ceil_mode)
    if Ho <= 0 or Wo <= 0:
        raise RuntimeError(f"{op}: Given input size: ({x.shape[1]}x{H}x{W}). Calculated output size: "
                           f"({x.shape[1]}x{Ho}x{Wo}). Output size is too small (kernel_size={list(k)}, "
                           f"stride={list(s)}, padding={list(p)})")
    out = dispatch(avg_pool2d_op, (x,), {"kernel": k, "stride": s, "pad": p, "ceil_mode": bool(ceil_mode),
                                         "count_include_pad": bool(count_include_pad),
                                         "divisor_override": divisor_override})
    return out.squeeze(0) if unbatched else out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    k = _tuple(kernel_size, 1, "kernel_size", "avg_pool1d")[0]
    s = k if stride is None else _tuple(stride, 1, "stride", "avg_pool1d")[0]
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _tuple(padding, 1, "padding", "avg_pool1d")[0]),
                      ceil_mode, count_include_pad).squeeze(-2)


def adaptive_output_dims(input, output_size):
    """PyTorch's Python-level check of the adaptive pools: a list output_size needs an input of more dims
    (ValueError, before the kernel's own shape checks)."""
    if isinstance(output_size, (list, tuple)) and input.dim() <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")


def _adaptive_size(input, output_size, op):
    adaptive_output_dims(input, output_size)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"{op}: Expected 3D or 4D tensor, but got {U.fmt_shape(input.shape)}")
    if not isinstance(output_size, (list, tuple)):
        output_size = (output_size, output_size)
    if len(output_size) != 2:
        raise RuntimeError(f"{op}: output_size must be 2")
    H, W = input.shape[-2:]
    return (H if output_size[0] is None else int(output_size[0]),
            W if output_size[1] is None else int(output_size[1]))


def _adaptive_matrix(n, o, dtype):
    m = np.zeros((o, n), dtype)
    for i in range(o):
        a, b = (i * n) // o, -(-((i + 1) * n) // o)
        m[i, a:b] = 1.0 / (b - a)
    return m


def adaptive_avg_pool2d(input, output_size):
    Ho, Wo = _adaptive_size(input, output_size, "adaptive_avg_pool2d")
    if input.is_complex() and (Ho, Wo) != (1, 1) and input.numel():  # PyTorch: complex for a 1x1 output
        U.no_complex("adaptive_avg_pool2d", input._data)
    H, W = input.shape[-2:]
    if Ho < 0 or Wo < 0:
        raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{Ho}, {Wo}}}")
    if Ho == 0 or Wo == 0:   # an empty result, as PyTorch's (still on the graph)
        return input.mean((-2, -1), keepdim=True).expand(*input.shape[:-2], Ho, Wo)
    if (Ho, Wo) == (1, 1):
        return input.mean((-2, -1), keepdim=True)
    if H % Ho == 0 and W % Wo == 0:
        return avg_pool2d(input, (H // Ho, W // Wo), (H // Ho, W // Wo))
    from .._creation import tensor
    mh = tensor(_adaptive_matrix(H, Ho, input.dtype.np))
    mwt = tensor(_adaptive_matrix(W, Wo, input.dtype.np).T)
    return mh @ input @ mwt  # two matmuls: a contiguous result, as PyTorch's (.view() works on it)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    Ho, Wo = _adaptive_size(input, output_size, "adaptive_max_pool2d")
    H, W = input.shape[-2:]
    if Ho <= 0 or Wo <= 0:
        raise RuntimeError(f"adaptive_max_pool2d: output_size must be positive, got ({Ho}, {Wo})")
    if H % Ho == 0 and W % Wo == 0:
        return max_pool2d(input, (H // Ho, W // Wo), (H // Ho, W // Wo), return_indices=return_indices)
    # uneven windows [floor(i*H/Ho), ceil((i+1)*H/Ho)): the winners' plane indices per output cell (a
    # loop over the few output cells, each a whole-batch argmax), then a differentiable gather
    x = input.unsqueeze(0) if input.dim() == 3 else input
    a = x.detach()._data
    N, C = a.shape[:2]
    idx = np.empty((N, C, Ho, Wo), np.int64)
    for i in range(Ho):
        h0, h1 = (i * H) // Ho, -(-((i + 1) * H) // Ho)
        for j in range(Wo):
            w0, w1 = (j * W) // Wo, -(-((j + 1) * W) // Wo)
            k = a[:, :, h0:h1, w0:w1].reshape(N, C, -1).argmax(-1)
            idx[:, :, i, j] = (h0 + k // (w1 - w0)) * W + w0 + k % (w1 - w0)
    from .._creation import tensor
    it = tensor(idx)
    out = x.reshape(N, C, H * W).gather(2, it.reshape(N, C, -1)).reshape(N, C, Ho, Wo)
    if input.dim() == 3:
        out, it = out.squeeze(0), it.squeeze(0)
    return (out, it) if return_indices else out


# ----------------------------------------------------------------------------- nearest upsampling


def _upsample_nearest_impl(xp, x, src):
    """src: per trailing spatial dim, the input index each output position reads."""
    if x.dtype.kind != "f" and x.dtype != np.uint8 and x.dtype != U.BF16:
        raise RuntimeError(f"upsample_nearest: not implemented for {dt.FROM_NP[x.dtype].name} input "
                           f"(floating point or uint8 is expected)")
    k = len(src)
    return x[(Ellipsis,) + xp.ix_(*[xp.asarray(s, dtype=np.intp) for s in src])] if k else x.copy()


# F.interpolate(mode="nearest"): PyTorch's UpsampleNearest{1,2,3}DBackward0; the vjp adds each output
# gradient into the input position it was read from (index_add per dim, in ember ops)
upsample_nearest_op = defop("upsample_nearest", _upsample_nearest_impl, save=("shapes",), family=NN,
                            node_name=lambda args, params: f"UpsampleNearest{len(params['src'])}DBackward0")


@upsample_nearest_op.def_vjp
def _(ctx, g):
    from .._creation import zeros, tensor
    src = ctx.params["src"]
    shape = ctx.shapes[0]
    nd = len(shape)
    for k in range(len(src) - 1, -1, -1):
        d = nd - len(src) + k
        size = tuple(g.shape[:d]) + (shape[d],) + tuple(g.shape[d + 1:])
        g = zeros(size, dtype=g.dtype).index_add(d, tensor(np.asarray(src[k], dtype=np.int64)), g)
    return g


upsample_nearest_op.jvp = lambda ctx, t: dispatch(upsample_nearest_op, (t,), ctx.params)
# (the resampled dims are the trailing ones: a leading batch dim passes through)
upsample_nearest_op.batch = lambda op, vals, bd, params, size: (dispatch(op, tuple(vals), params), True)


def upsample_nearest(input, src):
    return dispatch(upsample_nearest_op, (input,), {"src": tuple(tuple(int(i) for i in s) for s in src)})


# ----------------------------------------------------------------------------- batch norm


def _bn_view(xp, a):
    """(array 2-D/3-D, reduction axes, restore fn) with channels on one axis, in memory order."""
    if a.ndim == 2:
        return a, (0,), lambda r: r
    if a.ndim == 4 and is_channels_last(a):
        N, C, H, W = a.shape
        return a.transpose(0, 2, 3, 1).reshape(-1, C), (0,), \
            lambda r: r.reshape(N, H, W, C).transpose(0, 3, 1, 2)
    shape = a.shape
    return a.reshape(shape[0], shape[1], math.prod(shape[2:])), (0, 2), lambda r: r.reshape(shape)


def _bcast(v, two_d):
    return v if two_d else v[:, None]


def _bn_impl(xp, x, w, b, rm, rv, *, training, momentum, eps):
    _float_check("batch_norm", x)
    if U.is_lowp(x):  # float32 statistics and normalisation, rounded once; running stats updated in place
        f32 = [None if v is None else v.astype(np.float32) for v in (rm, rv)]
        r = U.lowp_f32(_bn_impl, xp, x, w, b, *f32, training=training, momentum=momentum, eps=eps)
        for v, v32 in zip((rm, rv), f32):
            if v is not None and training and momentum:
                v[...] = v32
        return r
    a, axes, restore = _bn_view(xp, x)
    two_d = len(axes) == 1
    C = x.shape[1]
    n = x.size // C if C else 0
    if training and n == 0:   # an empty batch (as PyTorch): empty output, running statistics untouched
        zero = xp.zeros(C, x.dtype)
        return restore(a.copy()), zero, zero.copy()
    if training and a.size >= _P.MIN_SIZE and _bn_split(a, w, b):
        y, mean, var, invstd = _bn_stats_split(xp, a, two_d, n, eps, w, b)
        _bn_running(rm, rv, mean, var, momentum, n)
        return restore(y), mean, invstd
    if training:
        mean = a.mean(axes, dtype=np.float64 if x.dtype == np.float16 else None).astype(x.dtype, copy=False)
        xc = a - _bcast(mean, two_d)
        var = xp.einsum("ij,ij->j", xc, xc) if two_d else xp.einsum("ncl,ncl->c", xc, xc)
        var = var / n
        invstd = 1.0 / xp.sqrt(var + eps)
        _bn_running(rm, rv, mean, var, momentum, n)
        scale = invstd if w is None else invstd * w
        y = xc
        y *= _bcast(scale.astype(x.dtype, copy=False), two_d)
        if b is not None:
            y += _bcast(b, two_d)
        return restore(y), mean, invstd.astype(x.dtype, copy=False)
    mean = rm
    invstd = (1.0 / xp.sqrt(rv + eps)).astype(x.dtype, copy=False)
    scale = invstd if w is None else invstd * w
    shift = -mean * scale if b is None else b - mean * scale
    y = a * _bcast(scale, two_d)
    y += _bcast(shift, two_d)
    return restore(y), mean.copy(), invstd


def _bn_split(a, *others):
    """Whether batch norm runs channel by channel on the intra-op threads (more than one of them):
    float32/float64 arrays in C order, the other arrays (or None) of the same dtype. The split keeps
    every channel's sums whole: bit for bit the one-thread result."""
    return (a.dtype.kind == "f" and a.dtype.itemsize >= 4 and a.flags.c_contiguous and a.shape[1] > 1
            and all(o is None or o.dtype is a.dtype for o in others) and _P.get_num_threads() > 1)


def _bn_running(rm, rv, mean, var, momentum, n):
    if rm is not None and momentum:
        rm *= 1 - momentum
        rm += momentum * mean
    if rv is not None and momentum:
        rv *= 1 - momentum
        rv += momentum * var * (n / (n - 1) if n > 1 else 1.0)


def _bn_stats_split(xp, a, two_d, n, eps, w, b):
    """Training batch norm of a (M, C) or (N, C, L) in channel chunks over the intra-op threads:
    (y, mean, var, invstd), each chunk the same operations as _bn_impl's one-thread path."""
    C = a.shape[1]
    y = xp.empty(a.shape, a.dtype)
    mean, var, invstd = xp.empty(C, a.dtype), xp.empty(C, a.dtype), xp.empty(C, a.dtype)
    axes = (0,) if two_d else (0, 2)
    spec = "ij,ij->j" if two_d else "ncl,ncl->c"

    def part(lo, hi):
        sa, sy = a[:, lo:hi], y[:, lo:hi]
        m = sa.mean(axes)
        mean[lo:hi] = m
        xp.subtract(sa, _bcast(m, two_d), out=sy)
        v = xp.einsum(spec, sy, sy) / n
        var[lo:hi] = v
        r = 1.0 / xp.sqrt(v + eps)
        invstd[lo:hi] = r
        sy *= _bcast(r if w is None else r * w[lo:hi], two_d)
        if b is not None:
            sy += _bcast(b[lo:hi], two_d)
    _P.parallel_for(C, part, work=a.size)
    return y, mean, var, invstd


def _bn_bwd_split(xp, a, ga, w, mean, invstd, two_d, n):
    """Training batch norm backward in channel chunks over the intra-op threads: (gx, gw, gb)."""
    C = a.shape[1]
    gx = xp.empty(a.shape, a.dtype)
    gw, gb = xp.empty(C, a.dtype), xp.empty(C, a.dtype)
    axes = (0,) if two_d else (0, 2)
    spec = "ij,ij->j" if two_d else "ncl,ncl->c"

    def part(lo, hi):
        sa, sg, sx = a[:, lo:hi], ga[:, lo:hi], gx[:, lo:hi]
        r = invstd[lo:hi]
        xp.subtract(sa, _bcast(mean[lo:hi], two_d), out=sx)
        gsum = sg.sum(axes)
        dot = xp.einsum(spec, sg, sx)
        k = r if w is None else r * w[lo:hi]
        sx *= _bcast(-(dot / n) * r * r * k, two_d)
        sx += sg * _bcast(k, two_d)
        sx -= _bcast(gsum / n * k, two_d)
        gw[lo:hi] = dot * r
        gb[lo:hi] = gsum
    _P.parallel_for(C, part, work=a.size)
    return gx, gw, gb


def _bn_bwd_impl(xp, g, x, w, mean, invstd, *, training):
    """Fused backward (no graph is recorded through it): (gx, gw, gb)."""
    if U.is_lowp(x):
        return U.lowp_f32(_bn_bwd_impl, xp, g, x, w, mean, invstd, training=training)
    a, axes, restore = _bn_view(xp, x)
    two_d = len(axes) == 1
    ga = _bn_view(xp, g)[0] if g.ndim != 4 or is_channels_last(g) == is_channels_last(x) else \
        _bn_view(xp, _unphys(xp.ascontiguousarray(_phys(g, is_channels_last(x))), is_channels_last(x)))[0]
    if ga.shape != a.shape:
        ga = ga.reshape(a.shape)
    n = max(x.size // x.shape[1], 1) if x.shape[1] else 1   # (an empty batch: empty gx, zero gw, gb)
    if training and a.size >= _P.MIN_SIZE and _bn_split(a, w, ga, mean, invstd):
        gx, gw, gb = _bn_bwd_split(xp, a, ga, w, mean, invstd, two_d, n)
        return restore(gx), gw, gb
    xc = a - _bcast(mean, two_d)
    gsum = ga.sum(axes)
    dot = xp.einsum("ij,ij->j", ga, xc) if two_d else xp.einsum("ncl,ncl->c", ga, xc)
    k = invstd if w is None else invstd * w
    if training:
        gx = xc
        gx *= _bcast(-(dot / n) * invstd * invstd * k, two_d)
        gx += ga * _bcast(k, two_d)
        gx -= _bcast(gsum / n * k, two_d)
    else:
        gx = ga * _bcast(k, two_d)
    return restore(gx), dot * invstd, gsum


batch_norm_op = defop("batch_norm", _bn_impl, save=("inputs", "out"), nout=3, diff_outputs=(0,), family=NN,
                      node_name="NativeBatchNormBackward0")
batch_norm_bwd_op = defop("batch_norm_backward", _bn_bwd_impl, nout=3, family=NN, differentiable=False)


def _bn_dims(x):
    return (0,) + tuple(range(2, x.dim()))


def _cshape(x):
    return (1, -1) + (1,) * (x.dim() - 2)


@batch_norm_op.def_vjp
def _(ctx, g, _g1=None, _g2=None):
    x, w, b, rm, rv = ctx.inputs
    training = ctx.params["training"]
    n = ctx.needs
    mean, invstd = ctx._out[1], ctx._out[2]  # never handed out, so only y's version matters (unused)
    if not D.grad_mode.enabled and D.state.simple:
        gx, gw, gb = dispatch(batch_norm_bwd_op, (g, x, w, mean, invstd), {"training": training})
        return (gx if n[0] else None), (gw if n[1] else None), (gb if n[2] else None), None, None
    # composite rule in ember ops: differentiable (create_graph) and batchable
    dims = _bn_dims(x)
    cs = _cshape(x)
    if training:
        eps = ctx.params["eps"]
        mu = x.mean(dims, keepdim=True)
        xc = x - mu
        istd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    else:
        xc = x - rm.reshape(cs)
        istd = invstd.reshape(cs)
    xhat = xc * istd
    gx = gw = gb = None
    if n[0]:
        k = istd if w is None else istd * w.reshape(cs)
        if training:
            gx = (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True)) * k
        else:
            gx = g * k
    if n[1]:
        gw = (g * xhat).sum(dims)
    if n[2]:
        gb = g.sum(dims)
    return gx, gw, gb, None, None


@batch_norm_op.def_jvp
def _(ctx, tx, tw, tb, _trm=None, _trv=None):
    x, w, b, rm, rv = ctx.inputs
    dims = _bn_dims(x)
    cs = _cshape(x)
    if ctx.params["training"]:
        mu = x.mean(dims, keepdim=True)
        xc = x - mu
        istd = ((xc * xc).mean(dims, keepdim=True) + ctx.params["eps"]).rsqrt()
    else:
        xc = x - rm.reshape(cs)
        istd = ctx.outs[2].reshape(cs)
    xhat = xc * istd
    txhat = None
    if tx is not None:
        if ctx.params["training"]:
            txhat = (tx - tx.mean(dims, keepdim=True) - xhat * (tx * xhat).mean(dims, keepdim=True)) * istd
        else:
            txhat = tx * istd
    ty = _tsum(None if txhat is None else (txhat if w is None else txhat * w.reshape(cs)),
               None if tw is None else xhat * tw.reshape(cs),
               None if tb is None else tb.reshape(cs))
    return ty, None, None


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-05):
    if input.dim() < 2:
        if input.numel() == 0 and all(t is None or t.numel() == 0 for t in (running_mean, running_var, weight, bias)):
            return input.clone()  # (PyTorch: an empty input with empty statistics gives an empty result)
        raise ValueError(f"batch_norm: expected at least 2D input (got {input.dim()}D input)")
    C = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"batch_norm: {name} should contain {C} elements not {t.numel()}")
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"batch_norm: mixed dtype: expect parameter {name} to have scalar type "
                               f"{input.dtype}, got {t.dtype}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in evaluation mode")
    if training:
        n = input.numel() // C if C else 0
        if n == 1:  # an empty batch is fine (PyTorch returns an empty output)
            raise ValueError(f"batch_norm: Expected more than 1 value per channel when training, got input size "
                             f"{list(input.shape)}")
    if training and momentum:  # the op updates the running stats in place (versions move first, so
        for t in (running_mean, running_var):  # the node saves the post-update versions)
            if t is not None:
                t._bump()
    args = (input, weight, bias, running_mean, running_var)
    out = dispatch(batch_norm_op, args, {"training": bool(training), "momentum": momentum or 0.0,
                                         "eps": float(eps)})
    return out[0]


# ----------------------------------------------------------------------------- layer norm, group norm


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or tuple(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(f"layer_norm: Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size "
                           f"{U.fmt_shape(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(f"layer_norm: expected {name} of shape {list(normalized_shape)}, got "
                               f"{U.fmt_shape(t.shape)}")
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"layer_norm: mixed dtype: expect parameter {name} to have scalar type "
                               f"{input.dtype} (the input's), got {t.dtype}")
    # when a node will be recorded, the forward keeps x-hat and 1/std for the fused backward
    return D.dispatch_keeping(layer_norm_op, (input, weight, bias),
                              {"normalized_shape": normalized_shape, "eps": float(eps)},
                              on=D.grad_mode.enabled and D.state.simple and (
                                  input._rg or any(t is not None and t._rg for t in (weight, bias))))


# One primitive (PyTorch's NativeLayerNormBackward0 node; one pass over the data instead of eight ops)
# whose rules are written in ember ops, recomputing the statistics from x, so double backward,
# forward mode and vmap compose.


def _row_mean(xp, a):
    """The mean of each row of a 2-D a, (R, 1): a float32/float64 a by a GEMV with a ones vector (BLAS
    sums a row in a few vector passes; NumPy's row-wise reduction of short rows costs 5x more)."""
    k = a.shape[1]
    if k and a.ndim == 2 and (a.dtype == np.float32 or a.dtype == np.float64):
        m = xp.matmul(a, U.ones_vec(xp, k, a.dtype))
        m /= k
        return m[:, None]
    return a.mean(1, keepdims=True)


def _row_stats(xp, x2, eps):
    """Rows of x2 (R, K): the centered rows (a new array) and 1/std per row (R, 1); sums of
    squares by einsum, without a temporary the size of x."""
    xc = x2 - _row_mean(xp, x2)
    var = xp.einsum("rk,rk->r", xc, xc)[:, None] / max(x2.shape[1], 1)
    return xc, (1.0 / xp.sqrt(var + eps)).astype(x2.dtype, copy=False)


def _row_norm_input_grad(xp, gg, xhat, rstd, own=False):
    """d loss / d x of row normalization from gg = d loss / d xhat (R, K); overwrites xhat, and gg
    when ``own`` (a fresh array: no further allocation the size of x)."""
    k = max(gg.shape[1], 1)
    dot = xp.einsum("rk,rk->r", gg, xhat)[:, None] / k
    if own:
        gx = gg
        gx -= _row_mean(xp, gg)
    else:
        gx = gg - _row_mean(xp, gg)
    xhat *= dot
    gx -= xhat
    gx *= rstd
    return gx


def _ln_split(xp, x2, w, b, eps):
    """Layer norm of the rows of a big float32/64 C-ordered x2 (R, K) over the intra-op threads,
    rows in chunks (each row's sums whole: bit for bit _ln_impl's one-thread result)."""
    y = xp.empty(x2.shape, x2.dtype)
    w1 = None if w is None else w.reshape(-1)
    b1 = None if b is None else b.reshape(-1)

    def part(lo, hi):
        xc, rstd = _row_stats(xp, x2[lo:hi], eps)
        xc *= rstd
        if w1 is not None:
            xc *= w1
        if b1 is not None:
            xc += b1
        y[lo:hi] = xc
    _P.parallel_for(x2.shape[0], part, work=x2.size)
    return y


def _ln_impl(xp, x, w, b, *, normalized_shape, eps):
    _float_check("layer_norm", x)
    if U.is_lowp(x):  # float32 statistics and normalisation, rounded once
        return U.lowp_f32(_ln_impl, xp, x, w, b, normalized_shape=normalized_shape, eps=eps)
    k = math.prod(normalized_shape)
    if x.size >= _P.MIN_SIZE and k and x.flags.c_contiguous and x.dtype.itemsize >= 4 \
            and all(o is None or o.dtype is x.dtype for o in (w, b)) and _P.get_num_threads() > 1:
        return _ln_split(xp, x.reshape(x.size // k, k), w, b, eps).reshape(x.shape)
    y, rstd = _row_stats(xp, x.reshape(x.size // k if k else 0, k), eps)
    y *= rstd
    if D.keeping() and (x.dtype == np.float32 or x.dtype == np.float64):
        D.keep((y, rstd))  # (x-hat, used once by the fused backward, which overwrites it)
        y = y.reshape(x.shape)
        y = y * w if w is not None else y.copy()
    else:
        y = y.reshape(x.shape)
        if w is not None:
            y *= w
    if b is not None:
        y += b
    return y


def _ln_bwd_impl(xp, g, x, w, xhat=None, rstd=None, *, normalized_shape, eps):
    """Fused backward (no graph is recorded through it): (gx, gw, gb). xhat, rstd: the forward's
    normalised rows and 1/std, when kept (xhat is overwritten)."""
    if U.is_lowp(x):
        return U.lowp_f32(_ln_bwd_impl, xp, g, x, w, normalized_shape=normalized_shape, eps=eps)
    k = math.prod(normalized_shape)
    rows = x.size // k if k else 0
    if xhat is None or xhat.shape != (rows, k) or xhat.dtype != x.dtype:
        xhat, rstd = _row_stats(xp, x.reshape(rows, k), eps)
        xhat *= rstd
    g2 = g.reshape(rows, k)
    gw = xp.einsum("rk,rk->k", g2, xhat).reshape(normalized_shape)
    gb = U.col_sums(xp, g2).reshape(normalized_shape)
    gg = g2 if w is None else (g * w).reshape(rows, k)
    return _row_norm_input_grad(xp, gg, xhat, rstd, own=w is not None).reshape(x.shape), gw, gb


layer_norm_op = defop("layer_norm", _ln_impl, save=("inputs",), family=NN, node_name="NativeLayerNormBackward0")
layer_norm_bwd_op = defop("layer_norm_backward", _ln_bwd_impl, nout=3, family=NN, differentiable=False)


def _ln_stats(x, params):
    dims = tuple(range(x.dim() - len(params["normalized_shape"]), x.dim()))
    xc = x - x.mean(dims, keepdim=True)
    rstd = ((xc * xc).mean(dims, keepdim=True) + params["eps"]).rsqrt()
    return dims, xc * rstd, rstd


def _ln_grads(g, x, w, params, needs=(True, True, True), first_lead=0):
    """(gx, gw, gb) in ember ops; gw and gb sum over the leading dims from ``first_lead`` on."""
    dims, xhat, rstd = _ln_stats(x, params)
    lead = tuple(range(first_lead, x.dim() - len(dims)))
    gx = gw = gb = None
    if needs[0]:
        gxh = g if w is None else g * w
        gx = (gxh - gxh.mean(dims, keepdim=True) - xhat * (gxh * xhat).mean(dims, keepdim=True)) * rstd
    if needs[1]:
        gw = (g * xhat).sum(lead) if lead else g * xhat
    if needs[2]:
        gb = g.sum(lead) if lead else g
    return gx, gw, gb


def _fused_norm_grads(ctx, g, bwd_op):
    """(gx, gw, gb) of layer/group norm by their fused NumPy backward when nothing observes the vjp
    (grad mode off, no transform: the fused kernel is not differentiable itself); else None, and
    the caller's composite rule in ember ops (differentiable, batchable) runs."""
    if D.grad_mode.enabled or not D.state.simple:
        return None
    n = ctx.needs
    gx, gw, gb = dispatch(bwd_op, (g, ctx.inputs[0], ctx.inputs[1]), ctx.params)
    return (gx if n[0] else None), (gw if n[1] else None), (gb if n[2] else None)


@layer_norm_op.def_vjp
def _(ctx, g):
    if not D.grad_mode.enabled and D.state.simple:
        x, w = ctx.inputs[0], ctx.inputs[1]  # (checks x unchanged since the forward: x-hat is x's)
        kept = ctx.__dict__.pop("_kept", None)
        if kept is not None:
            n = ctx.needs
            gx, gw, gb = dispatch(layer_norm_bwd_op, (g, x, w) + kept, ctx.params)
            return (gx if n[0] else None), (gw if n[1] else None), (gb if n[2] else None)
    fused = _fused_norm_grads(ctx, g, layer_norm_bwd_op)
    if fused is not None:
        return fused
    return _ln_grads(g, ctx.inputs[0], ctx.inputs[1], ctx.params, ctx.needs)


@layer_norm_bwd_op.def_batch
def _(op, vals, bd, params, size):
    """vmap of the fused backward: the ember-ops rule with the batch dim kept out of the sums."""
    from ._batching import _materialize
    g, x, w = vals
    g = g if bd[0] else _materialize(g, size)
    x = x if bd[1] else _materialize(x, size)
    if w is not None and bd[2]:
        w = w.reshape((size,) + (1,) * (x.dim() - 1 - len(params["normalized_shape"])) + tuple(w.shape[1:]))
    return _ln_grads(g, x, w, params, first_lead=1), (True, True, True)


@layer_norm_op.def_jvp
def _(ctx, tx, tw, tb):
    x, w, b = ctx.inputs
    dims, xhat, rstd = _ln_stats(x, ctx.params)
    txh = None
    if tx is not None:
        txh = (tx - tx.mean(dims, keepdim=True) - xhat * (tx * xhat).mean(dims, keepdim=True)) * rstd
        if w is not None:
            txh = txh * w
    return _tsum(txh, None if tw is None else xhat * tw, tb)


@layer_norm_op.def_batch
def _(op, vals, bd, params, size):
    """vmap: a batched input is one more leading dim (the normalized dims are the trailing ones);
    batched weights or biases (ensembles) scale and shift the normalized batch afterwards."""
    from ._batching import _materialize
    x, w, b = vals
    if not any(bd[1:]):
        return dispatch(op, (x, w, b), params), True
    if not bd[0]:
        x = _materialize(x, size)
    y = dispatch(op, (x, None, None), params)
    ones = (1,) * (x.dim() - 1 - len(params["normalized_shape"]))
    for v, bv, last in ((w, bd[1], False), (b, bd[2], True)):
        if v is not None:
            if bv:
                v = v.reshape((size,) + ones + tuple(v.shape[1:]))
            y = y + v if last else y * v
    return y, True


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    if input.dim() < 2:
        raise RuntimeError(f"group_norm: expected at least 2 dims, got input of size {U.fmt_shape(input.shape)}")
    N, C = input.shape[:2]
    if C % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {U.fmt_shape(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (C,):
            raise RuntimeError(f"group_norm: expected {name} of shape [{C}], got {U.fmt_shape(t.shape)}")
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"group_norm: mixed dtype: expect parameter {name} to have scalar type "
                               f"{input.dtype} (the input's), got {t.dtype}")
    return dispatch(group_norm_op, (input, weight, bias), {"groups": num_groups, "eps": float(eps)})


# One primitive (PyTorch's NativeGroupNormBackward0); rules in ember ops recomputing the statistics.


def _gn_impl(xp, x, w, b, *, groups, eps):
    _float_check("group_norm", x)
    if U.is_lowp(x):  # float32 statistics and normalisation, rounded once
        return U.lowp_f32(_gn_impl, xp, x, w, b, groups=groups, eps=eps)
    N, C = x.shape[:2]
    y, rstd = _row_stats(xp, x.reshape(N * groups, (C // groups) * math.prod(x.shape[2:])), eps)
    y *= rstd
    y = y.reshape(x.shape)
    cs = (1, C) + (1,) * (x.ndim - 2)
    if w is not None:
        y *= w.reshape(cs)
    if b is not None:
        y += b.reshape(cs)
    return y


def _gn_bwd_impl(xp, g, x, w, *, groups, eps):
    """Fused backward (no graph is recorded through it): (gx, gw, gb)."""
    if U.is_lowp(x):
        return U.lowp_f32(_gn_bwd_impl, xp, g, x, w, groups=groups, eps=eps)
    N, C = x.shape[:2]
    L = math.prod(x.shape[2:])
    xhat, rstd = _row_stats(xp, x.reshape(N * groups, (C // groups) * L), eps)
    xhat *= rstd
    g3 = g.reshape(N, C, L)
    gw = xp.einsum("ncl,ncl->c", g3, xhat.reshape(N, C, L))
    gb = g3.sum((0, 2))
    gg = g if w is None else g * w.reshape((1, C) + (1,) * (x.ndim - 2))
    gx = _row_norm_input_grad(xp, gg.reshape(xhat.shape), xhat, rstd, own=w is not None)
    return gx.reshape(x.shape), gw, gb


group_norm_op = defop("group_norm", _gn_impl, save=("inputs",), family=NN, node_name="NativeGroupNormBackward0")
group_norm_bwd_op = defop("group_norm_backward", _gn_bwd_impl, nout=3, family=NN, differentiable=False)


@group_norm_bwd_op.def_batch
def _(op, vals, bd, params, size):
    """vmap of the fused backward: the input gradient with the batch joined to the samples, the
    weight/bias gradients summed per example from the normalized input."""
    from ._batching import _materialize
    g, x, w = vals
    g = g if bd[0] else _materialize(g, size)
    x = x if bd[1] else _materialize(x, size)
    s = tuple(x.shape)
    if w is not None:
        g_w = g * w.reshape(((size,) if bd[2] else (1,)) + (1, s[2]) + (1,) * (len(s) - 3))
    else:
        g_w = g
    merged = (s[0] * s[1],) + s[2:]
    gx = dispatch(op, (g_w.reshape(merged), x.reshape(merged), None), params)[0].reshape(s)
    xhat = dispatch(group_norm_op, (x.reshape(merged), None, None), params).reshape(s)
    dims = (1,) + tuple(range(3, len(s)))
    return (gx, (g * xhat).sum(dims), g.sum(dims)), (True, True, True)


def _gn_stats(x, params):
    """x grouped as (N, G, M), its normalized values in that shape and 1/std per group."""
    N, C = x.shape[:2]
    G = params["groups"]
    xg = x.reshape(N, G, (C // G) * math.prod(x.shape[2:]))
    xc = xg - xg.mean(2, keepdim=True)
    rstd = ((xc * xc).mean(2, keepdim=True) + params["eps"]).rsqrt()
    return xg.shape, xc * rstd, rstd


@group_norm_op.def_vjp
def _(ctx, g):
    fused = _fused_norm_grads(ctx, g, group_norm_bwd_op)
    if fused is not None:
        return fused
    x, w, b = ctx.inputs
    n = ctx.needs
    gshape, xhat, rstd = _gn_stats(x, ctx.params)
    cs = _cshape(x)
    dims = (0,) + tuple(range(2, x.dim()))
    gx = gw = gb = None
    if n[0]:
        gg = (g if w is None else g * w.reshape(cs)).reshape(gshape)
        gx = ((gg - gg.mean(2, keepdim=True) - xhat * (gg * xhat).mean(2, keepdim=True)) * rstd).reshape(x.shape)
    if n[1]:
        gw = (g * xhat.reshape(x.shape)).sum(dims)
    if n[2]:
        gb = g.sum(dims)
    return gx, gw, gb


@group_norm_op.def_jvp
def _(ctx, tx, tw, tb):
    x, w, b = ctx.inputs
    gshape, xhat, rstd = _gn_stats(x, ctx.params)
    cs = _cshape(x)
    txh = None
    if tx is not None:
        tg = tx.reshape(gshape)
        txh = ((tg - tg.mean(2, keepdim=True) - xhat * (tg * xhat).mean(2, keepdim=True)) * rstd).reshape(x.shape)
        if w is not None:
            txh = txh * w.reshape(cs)
    return _tsum(txh, None if tw is None else xhat.reshape(x.shape) * tw.reshape(cs),
                 None if tb is None else tb.reshape(cs))


@group_norm_op.def_batch
def _(op, vals, bd, params, size):
    """vmap: the batch joins the samples (dim 0); batched weights or biases (ensembles) scale and
    shift the normalized batch afterwards."""
    from ._batching import _materialize
    x, w, b = vals
    if not bd[0]:
        x = _materialize(x, size)
    s = tuple(x.shape)
    y = dispatch(op, (x.reshape((s[0] * s[1],) + s[2:]), None if bd[1] else w, None if bd[2] else b),
                 params).reshape(s)
    cs = (size, 1, s[2]) + (1,) * (len(s) - 3)
    if w is not None and bd[1]:
        y = y * w.reshape(cs)
    if b is not None and bd[2]:
        y = y + b.reshape(cs)
    return y, True


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-05):
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    N, C = input.shape[:2]
    y = group_norm(input.reshape(1, N * C, *input.shape[2:]), N * C, None, None, eps).reshape(input.shape)
    cs = _cshape(input)
    if weight is not None:
        y = y * weight.reshape(cs)
    if bias is not None:
        y = y + bias.reshape(cs)
    return y


# ----------------------------------------------------------------------------- embedding


def _check_indices(op, idx, n):
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got {dt.FROM_NP[idx.dtype].name} instead")
    if idx.size and (idx.max() >= n or idx.min() < 0):
        bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
        raise IndexError(f"{op}: index out of range in self (index {bad}, table of {n} rows)")


def _embedding_impl(xp, w, idx, *, padding_idx=None, scale_grad_by_freq=False):
    _check_indices("embedding", idx, w.shape[0])
    return xp.take(w, idx, axis=0)


def _add_rows_sorted(xp, gw, flat, g2, levels_max=8):
    """gw[flat[k]] += g2[k] for every k in k's order, as ``add.at`` sums them (bit for bit), in a few
    vectorised passes instead of add.at's per-row loop: the rows are grouped by how many earlier
    rows share their index (their rank), and each rank, whose indices are distinct, is added at
    once, ranks in order; the rows past ``levels_max`` ranks (an index repeated that often) go
    through add.at afterwards, in rank order. gw starts zero."""
    n = flat.size
    order = xp.argsort(flat, kind="stable")
    s = flat[order]
    new = xp.empty(n, bool)
    new[0] = True
    xp.not_equal(s[1:], s[:-1], out=new[1:])
    starts = xp.flatnonzero(new)
    rank = xp.arange(n)
    rank -= xp.repeat(starts, xp.diff(xp.append(starts, n)))
    by_rank = xp.argsort(rank, kind="stable")
    rows, src = s[by_rank], order[by_rank]
    levels = min(int(rank.max()) + 1, levels_max)
    ends = xp.searchsorted(rank[by_rank], xp.arange(1, levels + 1))
    lo = int(ends[0])
    gw[rows[:lo]] = g2.take(src[:lo], axis=0)  # (0 + g is g)
    for hi in ends[1:]:
        hi = int(hi)
        gw[rows[lo:hi]] += g2.take(src[lo:hi], axis=0)
        lo = hi
    if lo < n:
        xp.add.at(gw, rows[lo:], g2.take(src[lo:], axis=0))


def _embedding_bwd_impl(xp, g, idx, *, num_weights, padding_idx=None, scale_grad_by_freq=False):
    D_ = g.shape[-1]
    flat = idx.reshape(-1)
    gw = xp.zeros((num_weights, D_), g.dtype)
    g2 = g.reshape(-1, D_)
    if scale_grad_by_freq:
        counts = xp.bincount(flat, minlength=num_weights)
        g2 = g2 / counts[flat][:, None].astype(g.dtype)
    if flat.size > 16 and D_ >= 16 and g2.dtype.kind == "f" and g2.dtype.itemsize >= 4:
        _add_rows_sorted(xp, gw, flat, g2)
    else:
        xp.add.at(gw, flat, g2)
    if padding_idx is not None:  # an int, or a tuple of rows (vmap over stacked tables)
        gw[list(padding_idx) if isinstance(padding_idx, tuple) else padding_idx] = 0
    return gw


embedding_op = defop("embedding", _embedding_impl, save=("inputs",), family=NN, node_name="EmbeddingBackward0")
embedding_bwd_op = defop("embedding_backward", _embedding_bwd_impl, save=("inputs",), family=NN)


@embedding_op.def_vjp
def _(ctx, g):
    w, idx = ctx.inputs
    p = ctx.params
    return dispatch(embedding_bwd_op, (g, idx), {"num_weights": w.shape[0], "padding_idx": p.get("padding_idx"),
                                                  "scale_grad_by_freq": p.get("scale_grad_by_freq", False)}), None


@embedding_bwd_op.def_vjp
def _(ctx, v):
    g, idx = ctx.inputs
    p = ctx.params
    if p.get("padding_idx") is not None:
        keep = np.ones((v.shape[0], 1), v.dtype.np)
        pi = p["padding_idx"]
        keep[list(pi) if isinstance(pi, tuple) else pi] = 0
        from .._creation import tensor
        v = v * tensor(keep)
    r = dispatch(embedding_op, (v, idx), {})
    if p.get("scale_grad_by_freq"):
        from .._creation import tensor
        flat = idx._data.reshape(-1)
        counts = np.bincount(flat, minlength=v.shape[0])
        r = r / tensor(counts[idx._data].astype(v.dtype.np)[..., None])
    return r, None


@embedding_op.def_jvp
def _(ctx, tw, _ti=None):
    return dispatch(embedding_op, (tw, ctx.inputs[1]), ctx.params)


@embedding_bwd_op.def_jvp
def _(ctx, tg, _ti=None):
    return dispatch(embedding_bwd_op, (tg, ctx.inputs[1]), ctx.params)


def _padding_idx(padding_idx, n):
    if padding_idx is None:
        return None
    if not -n <= padding_idx < n:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + n if padding_idx < 0 else padding_idx


def _renorm_(weight, idx, max_norm, norm_type, valid=None):
    """PyTorch's embedding_renorm_: the rows of weight that idx uses (where ``valid``, when given), scaled
    in place to a norm of at most max_norm (no gradient)."""
    if weight._wr is not None or idx._wr is not None or valid is not None and valid._wr is not None:
        from .._creation import zeros    # (under a transform, vmap: the same with ember ops)
        from ..autograd.grad_mode import no_grad
        from .elementwise import where
        nw = weight.shape[0]
        with no_grad():
            if valid is not None:
                idx = where(valid, idx, nw)   # the slots outside the bags hit a row past the table
            hit = zeros(nw + 1, dtype=dt.bool_).scatter(0, idx.reshape(-1), True)[:nw]
            norms = weight.to(dt.float64).norm(norm_type, dim=1)
            scale = where(hit & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
            weight.mul_(scale.unsqueeze(1).to(weight.dtype))
        return
    rows = np.unique(idx._data[valid._data] if valid is not None else idx._data.reshape(-1))
    w = weight._data
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    w[rows] *= scale[:, None].astype(w.dtype)
    weight._bump()


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if weight.dim() != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got {U.fmt_shape(weight.shape)}")
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported in ember")
    padding_idx = _padding_idx(padding_idx, weight.shape[0])
    if not U.is_tensor(input):
        raise TypeError(f"embedding(): argument 'indices' must be Tensor, not {type(input).__name__}")
    if max_norm is not None:
        _check_indices("embedding", U.raw_values(input), weight.shape[0])
        _renorm_(weight, input, max_norm, norm_type)
    p = {}
    if padding_idx is not None:
        p["padding_idx"] = padding_idx
    if scale_grad_by_freq:
        p["scale_grad_by_freq"] = True
    return dispatch(embedding_op, (weight, input), p)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of embedding rows (offsets or 2-D input, per_sample_weights),
    computed as a padded (B, Lmax) index matrix over the weight plus one sentinel row.

    Differences from PyTorch: scale_grad_by_freq=True and sparse=True are refused with
    NotImplementedError."""
    from .._creation import tensor, zeros, full
    from .shape import cat
    if weight.is_complex():
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have one of the following scalar types: "
                           f"Half, BFloat16, Float, Double; but got {U.torch_scalar_name(weight._data)} instead "
                           f"(while checking arguments for embedding_bag)")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  f"on GitHub.")
    if weight.dim() != 2:
        raise ValueError(f"embedding_bag: weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not supported in ember")
    nw, Dm = weight.shape
    padding_idx = _padding_idx(padding_idx, nw)
    from .elementwise import where
    from .indexing import take
    from .._creation import arange
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences.")
        B, L = input.shape
        mat = input.to(dt.int64)
        valid = full(tuple(mat.shape), True, dtype=dt.bool_)
        psw = per_sample_weights
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        n = input.shape[0]
        off = offsets.reshape(-1).to(dt.int64)
        ro = U.raw_values(off)   # (under vmap: every batch row, for the checks and the bag length only)
        ro = ro.reshape(-1, off.shape[0]) if off.shape[0] else ro.reshape(1, 0)
        if off.shape[0] == 0 or (ro[:, 0] != 0).any():
            raise RuntimeError("embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the "
                               "mini-batch has to start from position 0.")
        ends_np = np.concatenate([ro[:, 1:], np.full((ro.shape[0], 1), n)], 1) if not include_last_offset \
            else ro[:, 1:]
        starts_np = ro if not include_last_offset else ro[:, :-1]
        if (ends_np < starts_np).any() or (ends_np.size and (ends_np[:, -1] > n).any()):
            raise RuntimeError("embedding_bag: offsets must be non-decreasing and within the input")
        L = int((ends_np - starts_np).max()) if ends_np.size else 0
        starts = off if not include_last_offset else off[:-1]
        ends = cat([off[1:], tensor([n])]) if not include_last_offset else off[1:]
        B = starts.shape[0]
        pos = arange(L)
        valid = pos < (ends - starts).unsqueeze(1)                      # (B, L)
        src = where(valid, starts.unsqueeze(1) + pos, 0)
        mat = take(input, src).to(dt.int64) if n else zeros(tuple(src.shape), dtype=dt.int64)
        psw = None
        if per_sample_weights is not None:
            psw = take(per_sample_weights.reshape(-1), src) * valid.to(per_sample_weights.dtype) if n else \
                zeros(tuple(src.shape), dtype=per_sample_weights.dtype)
    else:
        raise ValueError(f"embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    rm, rv = np.broadcast_arrays(U.raw_values(mat), U.raw_values(valid))
    _check_indices("embedding_bag", rm[rv], nw)
    if padding_idx is not None:
        valid = valid & (mat != padding_idx)
    if max_norm is not None:
        _renorm_(weight, mat, max_norm, norm_type, valid)
    mat = where(valid, mat, nw)          # the sentinel row: 0 (or -inf for max) for the slots outside a bag
    fill = -np.inf if mode == "max" else 0.0
    wext = cat([weight, full((1, Dm), fill, dtype=weight.dtype)], 0)
    emb = dispatch(embedding_op, (wext, mat), {})  # (B, L, D)
    if mode == "max":
        if L == 0:
            return zeros((B, Dm), dtype=weight.dtype)
        return emb.amax(1).masked_fill(~valid.any(1).unsqueeze(1), 0.0)   # an empty bag: 0
    if psw is not None:
        emb = emb * psw.unsqueeze(-1)
    r = emb.sum(1)
    if mode == "mean":
        r = r / valid.sum(1).clamp(min=1).to(weight.dtype).unsqueeze(1)
    return r


__all__ = ["conv1d", "conv2d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
           "adaptive_avg_pool2d", "adaptive_max_pool2d", "batch_norm", "layer_norm", "group_norm",
           "instance_norm", "linear", "embedding", "embedding_bag"]


# ----------------------------------------------------------------------------- vmap batching rules
# rule(op, vals, batched, params, size) -> (out, out_batched); a batched value carries the vmap
# dimension first. Images fold the vmap dimension into N; per-member weights (ensembles) fold it
# into the channels with groups multiplied by the batch size; embeddings offset the indices.


def _bm(v, b, size):
    """A batched view of v (unbatched values are broadcast)."""
    return v if b else v.unsqueeze(0).expand((size,) + tuple(v.shape))


def _fold_n(v):
    s = tuple(v.shape)
    return v.reshape((s[0] * s[1],) + s[2:])


def _unfold_n(v, size):
    s = tuple(v.shape)
    return v.reshape((size, s[0] // size) + s[1:])


def _to_channels(v, size):
    """(B, N, C, ...) -> (N, B*C, ...)."""
    s = tuple(v.shape)
    return v.movedim(0, 1).reshape((s[1], s[0] * s[2]) + s[3:])


def _from_channels(v, size):
    """(N, B*C, ...) -> (B, N, C, ...)."""
    s = tuple(v.shape)
    return v.reshape((s[0], size, s[1] // size) + s[2:]).movedim(1, 0)


def _conv_rule(op, vals, bd, params, size):
    x, w = vals[0], vals[1]
    bias = vals[2] if len(vals) > 2 else None
    bb = len(vals) > 2 and bd[2]
    if not bd[1] and not bb:
        return _unfold_n(dispatch(op, (_fold_n(x),) + tuple(vals[1:]), params), size), True
    xs = _to_channels(_bm(x, bd[0], size), size)
    ws = _fold_n(_bm(w, bd[1], size))
    p = dict(params, groups=params["groups"] * size)
    args = (xs, ws)
    if bias is not None:
        args += (_fold_n(_bm(bias, bb, size)),)
    return _from_channels(dispatch(op, args, p), size), True


def _conv_input_rule(op, vals, bd, params, size):
    g, w = vals
    if not bd[1]:
        return _unfold_n(dispatch(op, (_fold_n(g), w), params), size), True
    gs = _to_channels(_bm(g, bd[0], size), size)
    p = dict(params, groups=params["groups"] * size)
    return _from_channels(dispatch(op, (gs, _fold_n(w)), p), size), True


def _conv_weight_rule(op, vals, bd, params, size):
    x, g = vals
    xs = _to_channels(_bm(x, bd[0], size), size)
    gs = _to_channels(_bm(g, bd[1], size), size)
    p = dict(params, groups=params["groups"] * size)
    return _unfold_n(dispatch(op, (xs, gs), p), size), True


def _pool_rule(op, vals, bd, params, size):
    out = dispatch(op, (_fold_n(vals[0]),), params)
    if op.nout == 1:
        return _unfold_n(out, size), True
    return tuple(_unfold_n(o, size) for o in out), (True,) * op.nout


def _pool_bwd_rule(op, vals, bd, params, size):
    args = tuple(_fold_n(_bm(v, b, size)) for v, b in zip(vals, bd))
    p = dict(params, in_shape=(size * params["in_shape"][0],) + tuple(params["in_shape"][1:]))
    return _unfold_n(dispatch(op, args, p), size), True


def _channel_vec(v, b, size):
    return None if v is None else _fold_n(_bm(v, b, size))


def _bn_rule(op, vals, bd, params, size):
    x, w, b, rm, rv = vals
    if params["training"] and params.get("momentum") and ((rm is not None and not bd[3]) or
                                                          (rv is not None and not bd[4])):
        raise RuntimeError("vmap: batch_norm in training mode cannot update running statistics shared by "
                           "the vmapped members; pass running_mean=None and running_var=None (or use eval "
                           "mode), as with torch.func, or batch them (stack_module_state, ember.func.Ensemble)")
    if params["training"] and params.get("momentum"):
        for v in (rm, rv):  # per-member statistics are updated in place through a flat view
            if v is not None and not v.is_contiguous():
                raise RuntimeError("vmap: batch_norm needs contiguous batched running statistics")
    args = (_to_channels(_bm(x, bd[0], size), size),) + tuple(
        _channel_vec(v, bv, size) for v, bv in zip((w, b, rm, rv), bd[1:]))
    y, mean, invstd = dispatch(op, args, params)
    return (_from_channels(y, size), mean.reshape(size, -1), invstd.reshape(size, -1)), (True, True, True)


def _bn_bwd_rule(op, vals, bd, params, size):
    g, x, w, mean, invstd = vals
    args = (_to_channels(_bm(g, bd[0], size), size), _to_channels(_bm(x, bd[1], size), size),
            _channel_vec(w, bd[2], size), _channel_vec(mean, bd[3], size), _channel_vec(invstd, bd[4], size))
    gx, gw, gb = dispatch(op, args, params)
    return (_from_channels(gx, size), gw.reshape(size, -1), gb.reshape(size, -1)), (True, True, True)


def _offset_rows(idx, b, size, n):
    """Indices into B stacked tables of n rows: idx + k*n for member k."""
    from .._creation import arange
    idx = _bm(idx, b, size)
    return idx + arange(size, dtype=idx.dtype).reshape((size,) + (1,) * (idx.dim() - 1)) * n


def _offset_params(params, size, n):
    pi = params.get("padding_idx")
    if pi is None:
        return params
    pis = pi if isinstance(pi, tuple) else (pi,)
    return dict(params, padding_idx=tuple(p + k * n for k in range(size) for p in pis))


def _embedding_rule(op, vals, bd, params, size):
    w, idx = vals
    if not bd[0]:
        return dispatch(op, (w, idx), params), True
    n = w.shape[1]
    return dispatch(op, (_fold_n(w), _offset_rows(idx, bd[1], size, n)), _offset_params(params, size, n)), True


def _embedding_bwd_rule(op, vals, bd, params, size):
    g, idx = vals
    n = params["num_weights"]
    p = dict(_offset_params(params, size, n), num_weights=n * size)
    return _unfold_n(dispatch(op, (_bm(g, bd[0], size), _offset_rows(idx, bd[1], size, n)), p), size), True


for _op, _rule in ((conv2d_op, _conv_rule), (conv2d_input_op, _conv_input_rule),
                   (conv2d_weight_op, _conv_weight_rule), (max_pool2d_op, _pool_rule),
                   (max_pool2d_idx_op, _pool_rule), (avg_pool2d_op, _pool_rule),
                   (max_pool2d_bwd_op, _pool_bwd_rule), (avg_pool2d_bwd_op, _pool_bwd_rule),
                   (batch_norm_op, _bn_rule), (batch_norm_bwd_op, _bn_bwd_rule),
                   (embedding_op, _embedding_rule), (embedding_bwd_op, _embedding_bwd_rule)):
    _op.batch = _rule
