"""Numerical integration and differentiation composed of registry ops: trapezoid (trapz),
cumulative_trapezoid and gradient (NumPy's second-order scheme, uniform or given coordinates)."""
from . import _util as U
from . import shape as _S


def _float(t):
    if t.is_floating_point() or t.is_complex():
        return t
    from .. import get_default_dtype
    return t.to(get_default_dtype())


def _pairs(y, d):
    n = y.shape[d]
    return _S.narrow(y, d, 1, n - 1), _S.narrow(y, d, 0, n - 1)


def _dx_along(x, y, d, name):
    """Spacing between consecutive sample points, shaped to broadcast against y's pairs."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point, got x of size "
                               f"{x.shape[0]} and y of size {y.shape[d]} along dim {d}")
        dx = x[1:] - x[:-1]
        shape = [1] * y.dim()
        shape[d] = dx.shape[0]
        return _S.reshape(dx, tuple(shape))
    xd = d - y.dim() + x.dim() if x.dim() < y.dim() else d
    hi, lo = _pairs(x, xd)
    return hi - lo


def _trap(y, x, dx, dim, name, cumulative):
    if x is not None and dx is not None:
        raise RuntimeError(f"{name}: received both x and dx; pass only one of them")
    if y.dim() == 0:
        raise IndexError(f"{name}: Dimension out of range (expected to be in range of [-1, 0], but got {dim})")
    d = U.wrap_dim(dim, y.dim(), name)
    n = y.shape[d]
    if n == 0 and not cumulative:
        return _float(y).sum(d) * 0
    hi, lo = _pairs(y, d) if n else (y, y)
    s = hi + lo
    if x is not None and U.is_tensor(x):
        s = s * _dx_along(x, y, d, name)
        h = 0.5
    else:
        h = 0.5 * (1.0 if dx is None else dx) if x is None else 0.5 * x
    if cumulative:
        return _float(s).cumsum(d) * h
    return _float(s).sum(d) * h


def trapezoid(y, x=None, *, dx=None, dim=-1):
    return _trap(y, x, dx, dim, "trapezoid", False)


def trapz(y, x=None, *, dx=None, dim=-1):
    return _trap(y, x, dx, dim, "trapz", False)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    return _trap(y, x, dx, dim, "cumulative_trapezoid", True)


def _grad_uniform(f, d, h, edge_order):
    n = f.shape[d]
    nar = _S.narrow
    mid = (nar(f, d, 2, n - 2) - nar(f, d, 0, n - 2)) / (2.0 * h)
    if edge_order == 1:
        first = (nar(f, d, 1, 1) - nar(f, d, 0, 1)) / h
        last = (nar(f, d, n - 1, 1) - nar(f, d, n - 2, 1)) / h
    else:
        first = (-1.5 * nar(f, d, 0, 1) + 2.0 * nar(f, d, 1, 1) - 0.5 * nar(f, d, 2, 1)) / h
        last = (0.5 * nar(f, d, n - 3, 1) - 2.0 * nar(f, d, n - 2, 1) + 1.5 * nar(f, d, n - 1, 1)) / h
    return _S.cat([first, mid, last], d)


def _grad_coords(f, d, x, edge_order):
    n = f.shape[d]
    nar = _S.narrow
    shape = [1] * f.dim()

    def col(v):
        s = list(shape)
        s[d] = v.shape[0]
        return _S.reshape(v, tuple(s))
    x = _float(x)
    dx = x[1:] - x[:-1]
    dx1, dx2 = col(dx[:-1]), col(dx[1:])
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    mid = a * nar(f, d, 0, n - 2) + b * nar(f, d, 1, n - 2) + c * nar(f, d, 2, n - 2)
    if edge_order == 1:
        first = (nar(f, d, 1, 1) - nar(f, d, 0, 1)) / col(dx[:1])
        last = (nar(f, d, n - 1, 1) - nar(f, d, n - 2, 1)) / col(dx[-1:])
    else:
        e1, e2 = col(dx[:1]), col(dx[1:2])
        first = (-(2.0 * e1 + e2) / (e1 * (e1 + e2)) * nar(f, d, 0, 1) + (e1 + e2) / (e1 * e2) * nar(f, d, 1, 1)
                 - e1 / (e2 * (e1 + e2)) * nar(f, d, 2, 1))
        e1, e2 = col(dx[-2:-1]), col(dx[-1:])
        last = (e2 / (e1 * (e1 + e2)) * nar(f, d, n - 3, 1) - (e2 + e1) / (e1 * e2) * nar(f, d, n - 2, 1)
                + (2.0 * e2 + e1) / (e2 * (e1 + e2)) * nar(f, d, n - 1, 1))
    return _S.cat([first, mid, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates of the partial derivatives of input along the given dims (all by default): central
    differences inside, one-sided of order edge_order at the ends; spacing a number, one number per
    dim, or one coordinate tensor per dim."""
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order}")
    if dim is None:
        dims = list(range(input.dim()))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = [U.wrap_dim(x, input.dim(), "gradient") for x in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError("torch.gradient: dim must not contain repeated entries")
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                               f"dim arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        sp = list(spacing)
    else:
        sp = [spacing] * len(dims)
    f = _float(input)
    out = []
    for d, h in zip(dims, sp):
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(f"torch.gradient expected each dimension size to be at least edge_order+1 "
                               f"(input shape {list(input.shape)}, dim {d}, edge_order {edge_order})")
        if U.is_tensor(h) and h.dim() == 1:
            if h.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and the "
                                   f"coordinates of dim {d} to have {input.shape[d]} entries, got {h.shape[0]}")
            out.append(_grad_coords(f, d, h, edge_order))
        else:
            hv = h.item() if U.is_tensor(h) else h
            out.append(_grad_uniform(f, d, float(hv), edge_order))
    return tuple(out)
