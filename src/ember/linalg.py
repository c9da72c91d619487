"""torch.linalg: the norms, composed of registry ops (so they differentiate, batch and trace like
any composite). Decompositions (svd, qr, eigh, inv, solve, det, ...) are not implemented yet:
asking for one is an AttributeError naming it, and the norms that need singular values
(ord 2, -2 and 'nuc' of a matrix) raise NotImplementedError."""
import math

from .ops.linalg import matmul  # noqa: F401  (torch.linalg.matmul)
from .ops import reduce as _R
from .ops import _util as U


def _dims(dim, ndim, op):
    if dim is None:
        return None
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(U.wrap_dim(d, ndim, op) for d in dim)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """||x||_ord over ``dim`` (every element when None), as torch.linalg.vector_norm."""
    if dtype is not None:
        x = x.to(dtype)
    if x.is_complex():  # the norm of the moduli (abs carries the complex gradient)
        x = x.abs()
    if not x.is_floating_point():
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {x.dtype.name.capitalize()}")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    dims = _dims(dim, x.dim(), "linalg.vector_norm")
    if dims is None and keepdim:
        dims = tuple(range(x.dim()))
    if ord == 0:  # the count of nonzeros, through ops with a (zero) gradient, as PyTorch's
        nz = x.sign().abs()
        return nz.sum(dims, keepdim) if dims is not None else nz.sum()
    return _R.norm(x, float(ord) if ord not in (2, 1) else ord, dims, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """Matrix norms over the two dims ``dim``: 'fro', 1, -1, inf and -inf."""
    if dtype is not None:
        A = A.to(dtype)
    if A.dim() < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    d0, d1 = _dims(dim, A.dim(), "linalg.matrix_norm")
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return _R.norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"linalg.matrix_norm(ord={ord!r}) needs singular values, which ember "
                                  f"does not compute yet")
    if ord in (1, -1):      # the largest (smallest) absolute column sum
        sums, red = A.abs().sum(d0, keepdim=True), d1
    elif ord in (math.inf, -math.inf):  # the largest (smallest) absolute row sum
        sums, red = A.abs().sum(d1, keepdim=True), d0
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    r = (_R.amax if ord > 0 else _R.amin)(sums, (red,), True)
    return r if keepdim else r.squeeze(max(d0, d1)).squeeze(min(d0, d1))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a vector norm over one dim (or all, flattened, when ord is None), a
    matrix norm over two."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.dim() == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.dim() == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                       f"Got {A.dim()}D.")


def __getattr__(name):
    raise AttributeError(f"ember.linalg.{name} is not implemented in ember (only the norms are)")
