"""Histograms: histc and histogram (registry primitives, not differentiable, as in PyTorch) and
histogramdd (NumPy's, on plain tensors)."""
import numpy as np

from .. import _dispatch as D
from .._dispatch import defop, dispatch
from . import _util as U
from . import _results


def _upper_bound(edges, x):
    """std::upper_bound per element (the first position whose edge is > x), also on unsorted edges,
    which PyTorch accepts (its bins are then whatever the binary search finds)."""
    lo = np.zeros(x.shape, np.int64)
    hi = np.full(x.shape, edges.shape[0], np.int64)
    while True:
        act = lo < hi
        if not act.any():
            return lo
        mid = (lo + hi) // 2
        le = edges[np.minimum(mid, edges.shape[0] - 1)] <= x
        lo = np.where(act & le, mid + 1, lo)
        hi = np.where(act & ~le, mid, hi)


def _bin_counts(pts, edges, weights, density, dtype):
    """The D-dimensional histogram of pts (N, D) over per-dimension edges: an element outside
    [first edge, last edge] of any dimension is skipped; the last bin is closed on the right."""
    n, k = pts.shape
    keep = np.ones(n, bool)
    flat = np.zeros(n, np.int64)
    nb = [e.shape[0] - 1 for e in edges]
    for i, e in enumerate(edges):
        x = pts[:, i]
        keep &= (x >= e[0]) & (x <= e[-1])
        pos = _upper_bound(e, x) - 1
        pos = np.where(pos == nb[i], nb[i] - 1, pos)
        flat = flat * nb[i] + np.clip(pos, 0, max(nb[i] - 1, 0))
    w = None if weights is None else weights.reshape(-1)[keep].astype(np.float64)
    size = int(np.prod(nb)) if nb else 1
    h = np.bincount(flat[keep], w, minlength=size)[:size].astype(np.float64).reshape(nb)
    if density:
        total = h.sum()
        vol = np.ones(nb)
        for i, e in enumerate(edges):
            shape = [1] * k
            shape[i] = nb[i]
            vol = vol * np.diff(e.astype(np.float64)).reshape(shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = h / total / vol
    return h.astype(dtype)


def _auto_range(x, lo, hi, widen):
    if lo is None:
        if x.size:
            lo, hi = float(np.min(x)), float(np.max(x))
        else:
            lo, hi = 0.0, 1.0 if widen == 0.5 else 0.0
    lo, hi = float(lo), float(hi)
    if lo == hi:
        lo, hi = lo - widen, hi + widen
    return lo, hi


def _range_of(a, lo, hi, name):
    if lo is None or hi is None or (lo == 0 and hi == 0 and name == "histc"):
        if a.size:
            lo, hi = float(np.min(a)), float(np.max(a))
        else:
            lo, hi = 0.0, 0.0
    lo, hi = float(lo), float(hi)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.{name}: range of [{lo}, {hi}] is not finite")
    if lo > hi:
        raise RuntimeError(f"torch.{name}: max must be larger than min (got min {lo}, max {hi})")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return lo, hi


def _histc(xp, a, bins=100, min=0, max=0, rows=False):
    if rows:  # under vmap: one histogram per leading index
        return np.stack([_histc(xp, r, bins, min, max) for r in a]) if a.shape[0] else \
            np.zeros((0, bins), a.dtype)
    if a.dtype == U.BF16:  # (float32 holds bfloat16 exactly)
        return _histc(xp, a.astype(np.float32), bins, min, max).astype(U.BF16)
    if a.dtype.kind == "c":  # (PyTorch's kernel: the range's aminmax when it is computed)
        U.no_complex("aminmax_cpu" if min == max == 0 else "histogram_cpu", a)
    if a.dtype.kind != "f":
        raise RuntimeError(f"torch.histc: input tensor and weight tensor must be floating point, got {a.dtype}")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError(f"torch.histc: max must be larger than min (got min {min}, max {max})")
    lo, hi = _range_of(a, min, max, "histc")
    flat = a.reshape(-1, 1)
    return _bin_counts(flat, [np.linspace(lo, hi, bins + 1)], None, False, a.dtype)


histc_op = defop("histc", _histc, differentiable=False)


@histc_op.def_batch
def _(op, vals, bd, params, size):
    return dispatch(op, (vals[0],), dict(params, rows=True)), True


def histc(input, bins=100, min=0, max=0, *, out=None):
    return U.write_out(dispatch(histc_op, (input,), {"bins": int(bins), "min": min, "max": max}), out)


def _histogram(xp, a, edges, weight, bins=None, range=None, density=False, rows=False):
    if rows:  # under vmap: every argument carries the batch first
        outs = [_histogram(xp, a[i], None if edges is None else edges[i], None if weight is None else weight[i],
                           bins, range, density) for i in builtins_range(a.shape[0])]
        return np.stack([o[0] for o in outs]), np.stack([o[1] for o in outs])
    if a.dtype.kind == "c":
        U.no_complex("histogramdd", a)
    if a.dtype == U.BF16:  # bfloat16 (with bfloat16 edges): binned in float32, which holds them exactly
        return U.lowp_f32(_histogram, xp, a, edges, weight, bins, range, density)
    if a.dtype.kind != "f":
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, "
                           f"floating point expected, got {a.dtype}")
    if weight is not None and weight.shape != a.shape:
        raise RuntimeError(f"torch.histogram: if weight tensor is provided it should have the same shape as "
                           f"the input tensor excluding its innermost dimension, got {list(weight.shape)} and "
                           f"{list(a.shape)}")
    if edges is None:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        lo, hi = _auto_range(a, None if range is None else range[0], None if range is None else range[1], 0.5)
        if lo > hi:
            raise RuntimeError(f"torch.histogram: min should not exceed max, but got min {lo} max {hi}")
        edges = np.linspace(lo, hi, bins + 1).astype(a.dtype)
    else:
        if edges.ndim != 1:
            raise RuntimeError(f"torch.histogram(): bins tensor should have one dimension, but got "
                               f"{edges.ndim} dimensions")
        edges = edges.astype(a.dtype)
    h = _bin_counts(a.reshape(-1, 1), [edges], weight, density, a.dtype)
    return h, edges


histogram_op = defop("histogram", _histogram, nout=2, differentiable=False)


@histogram_op.def_batch
def _(op, vals, bd, params, size):
    from ._batching import _materialize
    args = tuple(None if v is None else (v if b else _materialize(v, size)) for v, b in zip(vals, bd))
    return dispatch(op, args, dict(params, rows=True)), (True, True)


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    if not U.is_tensor(bins):  # (PyTorch's float16/bfloat16 kernel takes bin edges, not a bin count)
        U.no_lowp("histogramdd", input)
    if U.is_tensor(bins):
        r = dispatch(histogram_op, (input, bins, weight), {"density": density})
    else:
        p = {"bins": int(bins), "density": density}
        if range is not None:
            p["range"] = tuple(float(v) for v in range)
        r = dispatch(histogram_op, (input, None, weight), p)
    return _results.histogram(*r)


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """A D-dimensional histogram of the points in input's last dimension (N, D): NumPy's, on plain
    tensors (no autograd, as PyTorch)."""
    if not (isinstance(bins, (list, tuple)) and bins and all(U.is_tensor(b) for b in bins)):
        U.no_lowp("histogramdd", input)  # (float16/bfloat16: PyTorch's kernel takes bin edges only)
    U.check_plain("histogramdd", input, weight)
    a = input._data
    if a.dtype.kind == "c":
        U.no_complex("histogramdd", a)
    if a.dtype == U.BF16:  # (bfloat16 edges: binned in float32, which holds them exactly)
        r = histogramdd(input.float(), [b.float() for b in bins], range=range,
                        weight=None if weight is None else weight.float(), density=density)
        return _results.histogramdd(r[0].to(input.dtype), [e.to(input.dtype) for e in r[1]])
    if a.dtype.kind != "f":
        raise RuntimeError(f"torch.histogramdd: input tensor should be floating point, got {input.dtype}")
    if a.ndim < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension")
    k = a.shape[-1]
    pts = a.reshape(-1, k)
    if isinstance(bins, int):
        bins_np = [bins] * k
    elif U.is_tensor(bins):
        bins_np = [int(b) for b in bins.tolist()]
    else:
        bins_np = [b._data.astype(a.dtype) if U.is_tensor(b) else int(b) for b in bins]
    if len(bins_np) != k:
        raise RuntimeError(f"torch.histogramdd: expected {k} sequences of bin edges for each dimension, but "
                           f"got {len(bins_np)}")
    rng = None
    if range is not None:
        r = [float(v) for v in range]
        if len(r) != 2 * k:
            raise RuntimeError(f"torch.histogramdd: for a {k}-dimensional histogram range should have "
                               f"{2 * k} elements, but got {len(r)}")
        rng = [(r[2 * i], r[2 * i + 1]) for i in builtins_range(k)]
    edges = []
    for i, b in enumerate(bins_np):
        if isinstance(b, np.ndarray):
            edges.append(b)
            continue
        lo, hi = _auto_range(pts[:, i], None if rng is None else rng[i][0], None if rng is None else rng[i][1],
                             0.5)
        edges.append(np.linspace(lo, hi, b + 1).astype(a.dtype))
    w = None if weight is None else weight._data
    h = _bin_counts(pts, edges, w, density, a.dtype)
    return _results.histogramdd(D._new_tensor(h), [D._new_tensor(e) for e in edges])


builtins_range = range
