"""Resampling: F.interpolate in every mode, F.grid_sample and F.affine_grid.

interpolate is separable: along each spatial dim the output is a weighted sum of a few input
positions ("taps": 2 for linear, 4 for cubic, the filter's support for antialiased
downsampling), computed once per call in NumPy and applied with index_select and a multiply, so
the gradient, forward mode and vmap are those of existing primitives. 'nearest' is the
upsample_nearest primitive of ops/nn.py; 'area' is adaptive average pooling.

grid_sample gathers the corner values of each sampling point from the flattened input planes
(gather) and weighs them with coefficients computed from the grid in ember ops, so it is
differentiable in both the input and the grid.
"""
import math

import numpy as np

from .. import _dispatch as D
from . import _util as U

_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


def _src_scale(n_in, n_out, align_corners, scale):
    """PyTorch's area_pixel_compute_scale."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _linear_taps(n_in, n_out, align_corners, scale):
    sc = _src_scale(n_in, n_out, align_corners, scale)
    i = np.arange(n_out, dtype=np.float64)
    src = i * sc if align_corners else np.maximum((i + 0.5) * sc - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    return np.stack([i0, i1], 1), np.stack([1.0 - lam, lam], 1)


def _cubic_taps(n_in, n_out, align_corners, scale, A=-0.75):
    sc = _src_scale(n_in, n_out, align_corners, scale)
    i = np.arange(n_out, dtype=np.float64)
    src = i * sc if align_corners else (i + 0.5) * sc - 0.5
    f = np.floor(src)
    t = src - f
    i0 = f.astype(np.int64)
    idx = np.clip(i0[:, None] + np.arange(-1, 3), 0, n_in - 1)

    def near(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    w = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1)
    return idx, w


def _aa_taps(n_in, n_out, align_corners, scale, cubic):
    """Antialiased (PIL-style) taps: the filter widened by the downscaling factor, normalised."""
    sc = _src_scale(n_in, n_out, align_corners, scale)
    size = 4 if cubic else 2
    support = size / 2 * sc if sc >= 1.0 else size / 2
    inv = 1.0 / sc if sc >= 1.0 else 1.0
    i = np.arange(n_out, dtype=np.float64)
    center = sc * (i + 0.5)
    xmin = np.maximum((center - support + 0.5).astype(np.int64), 0)
    xmax = np.minimum((center + support + 0.5).astype(np.int64), n_in)
    K = int(max((xmax - xmin).max(), 1))
    j = np.arange(K)
    x = (j[None, :] + xmin[:, None] - center[:, None] + 0.5) * inv
    ax = np.abs(x)
    if cubic:
        a = -0.5
        w = np.where(ax < 1, ((a + 2) * ax - (a + 3)) * ax * ax + 1,
                     np.where(ax < 2, ((ax - 5) * ax + 8) * ax * a - 4 * a, 0.0))
    else:
        w = np.maximum(1.0 - ax, 0.0)
    valid = j[None, :] < (xmax - xmin)[:, None]
    w = np.where(valid, w, 0.0)
    tot = w.sum(1, keepdims=True)
    w = w / np.where(tot == 0, 1.0, tot)
    idx = np.where(valid, xmin[:, None] + j[None, :], 0)
    return idx, w


_DENSE_MAX = 160  # input sizes up to this resample as one matmul with the dense weight matrix


def _apply_taps(x, dim, idx, w):
    """sum over taps t of x.index_select(dim, idx[:, t]) * w[:, t] (along ``dim``): for a short
    input dim as one matmul with the (n_out, n_in) weight matrix, otherwise tap by tap."""
    from .indexing import index_select
    n_out, T = idx.shape
    n_in = x.shape[dim]
    if n_in <= _DENSE_MAX:
        W = np.zeros((n_out, n_in))
        np.add.at(W, (np.repeat(np.arange(n_out), T), idx.reshape(-1)), w.reshape(-1))
        dt = x._data.dtype if not x._meta else x.dtype.np
        Wt = D._new_tensor(np.ascontiguousarray(W.T.astype(dt)))
        if dim == x.dim() - 1:
            return x @ Wt
        return (x.movedim(dim, -1) @ Wt).movedim(-1, dim)
    shape = [1] * x.dim()
    shape[dim] = n_out
    out = None
    dt = x._data.dtype if not x._meta else x.dtype.np
    for t in range(T):  # the few taps of the filter, each a whole-tensor gather
        col = idx[:, t]
        wt = w[:, t]
        if not wt.any():
            continue
        term = index_select(x, dim, D._new_tensor(np.ascontiguousarray(col))) * \
            D._new_tensor(wt.astype(dt).reshape(shape))
        out = term if out is None else out + term
    if out is None:
        out = index_select(x, dim, D._new_tensor(np.ascontiguousarray(idx[:, 0]))) * 0.0
    return out


def _sizes(input, size, scale_factor, recompute_scale_factor, nsp):
    if size is not None and scale_factor is not None:
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    in_sizes = list(input.shape[2:])
    if size is not None:
        if isinstance(size, (tuple, list)):
            if len(size) != nsp:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {in_sizes} and output size of {list(size)}. Please "
                                 f"provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 f"...,oK) format.")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * nsp
        return in_sizes, out, [None] * nsp
    if scale_factor is None:
        raise ValueError("interpolate: either size or scale_factor should be defined")
    if isinstance(scale_factor, (tuple, list)):
        if len(scale_factor) != nsp:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {in_sizes} and scale_factor of shape {list(scale_factor)}. "
                             f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, "
                             f"s2, ...,sK) format.")
        sf = [float(s) for s in scale_factor]
    else:
        sf = [float(scale_factor)] * nsp
    out = [int(math.floor(float(i) * s)) for i, s in zip(in_sizes, sf)]
    scales = [None] * nsp if recompute_scale_factor else sf
    return in_sizes, out, scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if not U.is_tensor(input):
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not {type(input).__name__}")
    if mode not in _MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nsp = input.dim() - 2
    if nsp not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if antialias and not (mode in ("bilinear", "bicubic") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor "
                         "as input")
    if mode in _LINEAR and _LINEAR[mode] != nsp:
        need = {1: "3D", 2: "4D", 3: "5D"}[_LINEAR[mode]]
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need} input")
    if mode == "bicubic" and nsp != 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but bicubic mode needs 4D input")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    in_sizes, out_sizes, scales = _sizes(input, size, scale_factor, recompute_scale_factor, nsp)
    if any(o <= 0 for o in out_sizes):
        raise RuntimeError(f"interpolate: Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(map(str, in_sizes))}) and output ({', '.join(map(str, out_sizes))})")
    if input.is_complex():  # PyTorch's CPU kernel that names itself in its error (observed per mode and dims)
        U.no_complex({"area": {1: "adaptive_avg_pool2d", 2: "adaptive_avg_pool2d", 3: "adaptive_avg_pool3d_cpu"}[nsp],
                      "bicubic": "compute_indices_weights_cubic",
                      "bilinear": "upsample_bilinear2d_channels_last"}.get(
            mode, "upsample_nearest2d_channels_last" if nsp == 2 and mode.startswith("nearest") else
            f"compute_indices_weights_{'nearest' if mode.startswith('nearest') else 'linear'}"), input)
    if mode != "nearest" and mode != "nearest-exact" and not input.dtype.is_floating_point:
        raise RuntimeError(f"interpolate (upsample_{mode}): \"{mode}\" mode not implemented for '{input.dtype.name}' (floating point "
                           f"input expected)")
    if mode != "nearest" and mode != "nearest-exact" and U.is_lowp(input._data):
        # float16/bfloat16: the weighted sums in float32, rounded once (PyTorch's opmath)
        return interpolate(input.float(), size, scale_factor, mode, align_corners, recompute_scale_factor,
                           antialias).to(input.dtype)
    if mode == "area":
        from ..nn import functional as F
        pool = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[nsp]
        return pool(input, out_sizes)
    if mode in ("nearest", "nearest-exact"):
        src = []
        for n_in, n_out, s in zip(in_sizes, out_sizes, scales):
            sc = np.float32(1.0 / s if s is not None and s > 0 else n_in / n_out)
            i = np.arange(n_out, dtype=np.float32)
            pos = np.floor((i + np.float32(0.5)) * sc) if mode == "nearest-exact" else np.floor(i * sc)
            src.append(np.minimum(pos.astype(np.int64), n_in - 1))
        from .nn import upsample_nearest
        return upsample_nearest(input, src)
    out = input
    for k, (n_in, n_out, s) in enumerate(zip(in_sizes, out_sizes, scales)):
        if antialias:
            idx, w = _aa_taps(n_in, n_out, align_corners, s, mode == "bicubic")
        elif mode == "bicubic":
            idx, w = _cubic_taps(n_in, n_out, align_corners, s)
        else:
            idx, w = _linear_taps(n_in, n_out, align_corners, s)
        out = _apply_taps(out, 2 + k, idx, w)
    return out.contiguous()


# ----------------------------------------------------------------------------- affine_grid, grid_sample


def _base_coords(n, align_corners, like):
    from .._creation import linspace
    if n <= 1:
        from .._creation import zeros
        return zeros((max(n, 0),), dtype=like.dtype)
    v = linspace(-1.0, 1.0, n, dtype=like.dtype)
    return v if align_corners else v * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine maps: (N, H, W, 2) for a 2-D size, (N, D, H, W, 3) for 3-D."""
    if align_corners is None:
        align_corners = False
    if not U.is_tensor(theta) or theta.dtype.np.kind != "f":
        raise ValueError(f"affine_grid: Expected theta to have floating point type, but got "
                         f"{getattr(theta, 'dtype', type(theta))}")
    size = [int(s) for s in size]
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{list(theta.shape)}.")
        spatial = size[2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{list(theta.shape)}.")
        spatial = size[2:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: Expected theta of batch size {size[0]} (size[0]), got {theta.shape[0]}")
    from .shape import stack
    from .._creation import ones
    nsp = len(spatial)
    axes = [_base_coords(n, align_corners, theta) for n in spatial]  # (D,) H, W
    # base[..., k]: x (the last dim's coordinate) first, then y (and z), then 1
    grids = []
    for k in range(nsp):
        a = axes[nsp - 1 - k]
        shape = [1] * nsp
        shape[nsp - 1 - k] = spatial[nsp - 1 - k]
        grids.append(a.reshape(shape).expand(tuple(spatial)))
    grids.append(ones(tuple(spatial), dtype=theta.dtype))
    base = stack(grids, -1).reshape(1, -1, nsp + 1)
    out = base @ theta.transpose(1, 2)
    return out.reshape([size[0]] + spatial + [nsp])


def _unnormalize(c, n, align_corners):
    if align_corners:
        return (c + 1) * ((n - 1) / 2)
    return ((c + 1) * n - 1) / 2


def _reflect(c, lo2, hi2):
    """Reflect c into [lo2/2, hi2/2] (PyTorch's reflect_coordinates), in ember ops."""
    from .elementwise import where, fmod, floor, abs as _abs
    if lo2 == hi2:
        return c * 0.0
    mn = lo2 / 2
    span = (hi2 - lo2) / 2
    x = _abs(c - mn)
    extra = fmod(x, span)
    flips = floor(x / span)
    even = fmod(flips, 2.0) == 0
    return where(even, extra + mn, span - extra + mn)


def _clip(c, n):
    """c clamped to [0, n - 1], its gradient zero at and beyond the bounds (PyTorch's
    clip_coordinates: a point on the border does not move with the grid)."""
    from .elementwise import clamp, where
    return where((c > 0) & (c < n - 1), c, clamp(c.detach(), 0, n - 1))


def _pad_coord(c, n, padding_mode, align_corners):
    if padding_mode == "border":
        return _clip(c, n)
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (n - 1)) if align_corners else _reflect(c, -1, 2 * n - 1)
        return _clip(c, n)
    return c


def _pad_index(i, n, padding_mode, align_corners):
    """Integer tap coordinates (an int64 tensor, no gradient) under the padding mode; for zeros
    padding also the validity mask (a float 0/1 tensor of ``dtype``). In ember ops, so that vmap
    sees them."""
    from .elementwise import clamp
    if padding_mode == "border":
        return clamp(i, 0, n - 1), None
    if padding_mode == "reflection":
        r = _reflect(i.double(), 0, 2 * (n - 1)) if align_corners else _reflect(i.double(), -1, 2 * n - 1)
        return clamp(r, 0, n - 1).long(), None
    ok = (i >= 0) & (i < n)
    return clamp(i, 0, n - 1), ok


def _gather_taps(input, flat_idx, weight, nsp):
    """input (N, C, *sp); flat_idx (N, *out) int64 tensor; weight (N, *out) tensor or None."""
    N, C = input.shape[:2]
    out_sp = tuple(flat_idx.shape[1:])
    n_out = int(np.prod(out_sp))
    idx = flat_idx.reshape(N, 1, n_out).expand((N, C, n_out))
    v = input.reshape(N, C, int(np.prod(tuple(input.shape[2:])))).gather(2, idx).reshape((N, C) + out_sp)
    return v if weight is None else v * weight.unsqueeze(1)


def _cubic_w(t, A=-0.75):
    """The four cubic convolution weights of fraction t (taps at -1, 0, 1, 2), in PyTorch's order of
    operations (so that float16/bfloat16 round where its kernels do)."""
    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    t2 = 1 - t
    return [far(t + 1), near(t), near(t2), far(t2 + 1)]


def _split_grid_grad(input):
    """float16/bfloat16: the grid's gradient by PyTorch's formula (see _grid_grad_terms)."""
    return input.dtype.itemsize == 2


def _bilinear(input, coords, sizes, strides, nsp):
    """Bilinear/trilinear sampling: the corners in PyTorch's order (x fastest), each weight the product
    of its per-axis distances (x first), the terms added one by one: in float16/bfloat16 every op
    rounds where PyTorch's kernels round. For these dtypes the grid's gradient is PyTorch's too: per
    axis the differences of the corner values first (see _grid_grad_terms)."""
    from .elementwise import floor
    base = [floor(c) for c in coords]
    far = [c - b for c, b in zip(coords, base)]          # ix - ix_west: the weight of the east corners
    near = [(b + 1) - c for c, b in zip(coords, base)]   # ix_east - ix: the weight of the west corners
    bases = [b.long() for b in base]
    corners = [cc[::-1] for cc in np.ndindex(*(2,) * nsp)]   # (x, y, z) offsets, x fastest
    lowp = _split_grid_grad(input)
    out = None
    vals = []
    for corner in corners:
        flat = 0
        w = None
        okall = None
        for k in range(nsp):
            i, ok = _pad_index(bases[k] + corner[k], sizes[k], "zeros", False)
            flat = flat + i * strides[k]
            wk = far[k] if corner[k] else near[k]
            w = wk if w is None else w * wk
            okall = ok if okall is None else okall & ok
        m = okall.to(input.dtype)
        if lowp:
            v = _gather_taps(input, flat, m, nsp)
            vals.append(v)
            term = v * w.detach().unsqueeze(1)
        else:
            term = _gather_taps(input, flat, w * m, nsp)
        out = term if out is None else out + term
    if lowp:
        for k, d in enumerate(_grid_grad_terms(vals, corners, near, far, nsp)):
            c = coords[k].unsqueeze(1)
            out = out + (c - c.detach()) * d
    return out


def _grid_grad_terms(vals, corners, near, far, nsp):
    """d out / d coordinate k for each axis, as PyTorch's float16/bfloat16 kernels compute them (2-d:
    (ne - nw) * s + (se - sw) * n, the differences first; 3-d: the eight signed corner terms in order).
    Axis k's term uses the coordinates before k as they are and those after k detached, so that
    out + sum_k (c_k - detach(c_k)) * term_k (0 in value) has the bilinear map's derivatives at every
    order while the first carries these roundings; the value term's weights are then detached."""
    dist = [[near[j].unsqueeze(1), far[j].unsqueeze(1)] for j in range(nsp)]
    terms = []
    for k in range(nsp):
        dk = [[d if j < k else d.detach() for d in dist[j]] for j in range(nsp)]
        if nsp == 2:
            o = 1 - k   # the other axis
            pairs = {}
            for v, corner in zip(vals, corners):
                pairs[(corner[o], corner[k])] = v
            t = None
            for side in (0, 1):  # x: north (s weight) then south (n weight); y: west (e) then east (w)
                diff = pairs[(side, 1)] - pairs[(side, 0)]
                part = diff * dk[o][side]
                t = part if t is None else t + part
        else:
            t = None
            for v, corner in zip(vals, corners):
                part = v
                for j in range(nsp):
                    if j != k:
                        part = part * dk[j][corner[j]]
                t = (part if corner[k] else -part) if t is None else (t + part if corner[k] else t - part)
        terms.append(t)
    return terms


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H, W) or (N, C, D, H, W) at grid (N, Ho, Wo, 2) / (N, Do, Ho, Wo, 3)
    coordinates in [-1, 1] (x first), with bilinear/nearest/bicubic interpolation."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        align_corners = False
    if input.dim() not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {U.fmt_shape(input.shape)} and grid with sizes "
                           f"{U.fmt_shape(grid.shape)}")
    nsp = input.dim() - 2
    if grid.dim() != input.dim() or grid.shape[-1] != nsp:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nsp} in last dimension and the same number "
                           f"of dimensions as input, but got grid with sizes {U.fmt_shape(grid.shape)} and input with "
                           f"sizes {U.fmt_shape(input.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {U.fmt_shape(input.shape)} and grid with sizes {U.fmt_shape(grid.shape)}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    if mode == "bicubic" and nsp != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.is_complex():
        U.no_complex("grid_sampler_2d_cpu_kernel_impl" if nsp == 2 else "grid_sampler3d_cpu", input)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"grid_sampler(): \"grid_sample\" not implemented for '{input.dtype.name}'")
    if any(s == 0 for s in input.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes "
                           f"{U.fmt_shape(input.shape)} with dimension {2 + list(input.shape[2:]).index(0)} being empty")
    sp = tuple(input.shape[2:])           # (D,) H, W
    sizes = sp[::-1]                      # per grid coordinate: W, H, (D)
    from .elementwise import floor, round as round_
    coords = []
    for k in range(nsp):
        c = _unnormalize(grid.select(-1, k), sizes[k], align_corners)
        coords.append(c if mode == "bicubic" else _pad_coord(c, sizes[k], padding_mode, align_corners))
    strides = [int(np.prod(sp[nsp - k:])) for k in range(nsp)]  # W: 1, H: W, D: H*W
    if mode == "nearest":
        flat = 0
        okall = None
        for k in range(nsp):
            i = round_(coords[k]).long()  # (half to even, as PyTorch's nearbyint)
            i, ok = _pad_index(i, sizes[k], "zeros" if padding_mode == "zeros" else "border", align_corners)
            flat = flat + i * strides[k]
            if ok is not None:
                okall = ok if okall is None else okall & ok
        w = None if okall is None else okall.to(input.dtype)
        return _gather_taps(input, flat, w, nsp)
    if mode == "bilinear":
        return _bilinear(input, coords, sizes, strides, nsp)
    # bicubic, separably as PyTorch: each of the 4 rows of taps interpolated along x, then the rows along y;
    # each tap's coordinate under the padding mode
    base = [floor(c) for c in coords]
    ws = [_cubic_w(c - b) for c, b in zip(coords, base)]
    bases = [b.long() for b in base]
    out = None
    for ty in range(4):
        iy, oky = _pad_index(bases[1] + ty - 1, sizes[1], padding_mode, align_corners)
        row = None
        for tx in range(4):
            ix, okx = _pad_index(bases[0] + tx - 1, sizes[0], padding_mode, align_corners)
            m = None if okx is None else (okx & oky).to(input.dtype)
            term = _gather_taps(input, iy * strides[1] + ix, m, nsp) * ws[0][tx].unsqueeze(1)
            row = term if row is None else row + term
        term = row * ws[1][ty].unsqueeze(1)
        out = term if out is None else out + term
    return out
