"""torch.linalg: decompositions, solvers, inverses, determinants and norms.

The factorizations are registry primitives (ember/ops/linalg_solve.py and linalg_spectral.py: LAPACK
through NumPy and SciPy, rules in ember ops); everything here composes them with other registry ops,
so it differentiates (reverse and forward mode, any order), batches under vmap and traces like any
composite. Inputs are batches of matrices in the last two dims. Singular or non-positive-definite
input raises ``LinAlgError`` (a RuntimeError, worded as PyTorch's); the ``_ex`` variants return
``info`` instead.
"""
import math
from collections import namedtuple

import numpy as np

from ._dispatch import dispatch
from .ops.linalg import matmul  # noqa: F401  (torch.linalg.matmul)
from .ops import reduce as _R
from .ops import _util as U
from .ops import linalg_solve as _LS
from .ops import linalg_spectral as _SP
from .ops.linalg_solve import LinAlgError

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "inv", "inv_ex", "solve", "solve_ex", "solve_triangular",
           "det", "slogdet", "qr", "svd", "svdvals", "eigh", "eigvalsh", "eig", "eigvals", "lstsq", "pinv",
           "matrix_rank", "matrix_power", "matrix_exp", "matrix_norm", "vector_norm", "norm", "cond", "cross",
           "vecdot", "multi_dot", "householder_product", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "tensorinv", "tensorsolve", "vander", "diagonal", "ldl_factor", "ldl_factor_ex", "ldl_solve",
           "matmul"]


def _rt(name, fields):
    cls = namedtuple(name, fields)
    cls.__module__ = "ember.return_types"
    return cls


_InvEx = _rt("linalg_inv_ex", ["inverse", "info"])
_SolveEx = _rt("linalg_solve_ex", ["result", "info"])
_CholEx = _rt("linalg_cholesky_ex", ["L", "info"])
_Slogdet = _rt("linalg_slogdet", ["sign", "logabsdet"])
_QR = _rt("linalg_qr", ["Q", "R"])
_SVD = _rt("linalg_svd", ["U", "S", "Vh"])
_Eigh = _rt("linalg_eigh", ["eigenvalues", "eigenvectors"])
_Eig = _rt("linalg_eig", ["eigenvalues", "eigenvectors"])
_Lstsq = _rt("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_LU = _rt("linalg_lu", ["P", "L", "U"])
_LUF = _rt("linalg_lu_factor", ["LU", "pivots"])
_LUFEx = _rt("linalg_lu_factor_ex", ["LU", "pivots", "info"])
_LDL = _rt("linalg_ldl_factor", ["LD", "pivots"])
_LDLEx = _rt("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
_TSVD = _rt("svd", ["U", "S", "V"])
_TQR = _rt("qr", ["Q", "R"])
_Geqrf = _rt("geqrf", ["a", "tau"])
_TriSolve = _rt("triangular_solve", ["solution", "cloned_coefficient"])
_LUUnpack = _rt("lu_unpack", ["P", "L", "U"])


def _out(r, out):
    return U.write_out(r, out)


def _need(name, A, n=2):
    if not U.is_tensor(A):
        raise TypeError(f"{name}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dim() < n:
        raise RuntimeError(f"{name}: The input tensor A must have at least {n} dimensions.")


# ----------------------------------------------------------------------------- inverses and solves


def inv_ex(A, *, check_errors=False, out=None):
    """inv without raising on singular input: returns (inverse, info)."""
    _need("linalg.inv_ex", A)
    r = dispatch(_LS.inv_op, (A,), {"check_errors": check_errors})
    return _out(_InvEx(*r), out)


def inv(A, *, out=None):
    """The inverse of a square matrix (or batch); LinAlgError for a singular one."""
    _need("linalg.inv", A)
    return _out(dispatch(_LS.inv_op, (A,), {"check_errors": True})[0], out)


def _vector_case(A, B):
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """solve without raising on singular input: returns (result, info)."""
    _need("linalg.solve", A)
    if not U.is_tensor(B):
        raise TypeError(f"linalg.solve(): argument 'B' must be Tensor, not {type(B).__name__}")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_LS.torch_dtype_name(A.dtype.np)} and B of type {_LS.torch_dtype_name(B.dtype.np)} "
                           f"instead")
    vec = _vector_case(A, B)
    a = A if left else A.mT
    b = B.unsqueeze(-1) if vec else (B if left else B.mT)
    if vec and B.shape[-1] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and {B.shape[-1]}x1)")
    x, info = dispatch(_LS.solve_op, (a, b), {"check_errors": check_errors})
    x = x.squeeze(-1) if vec else (x if left else x.mT)
    return _out(_SolveEx(x, info), out)


def solve(A, B, *, left=True, out=None):
    """The solution X of A X = B (or X A = B with left=False)."""
    return _out(solve_ex(A, B, left=left, check_errors=True)[0], out)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """The solution of a triangular system (upper, left, unitriangular)."""
    _need("linalg.solve_triangular", A)
    if B.dim() < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if B.dtype is not A.dtype and A.is_floating_point():
        B = B.to(A.dtype)  # (PyTorch computes in A's dtype)
    if left:
        x = _LS.solve_tri(A, B, upper, unitriangular)
    else:
        x = _LS.rsolve_tri(B, A, upper, unitriangular)
    return _out(x, out)


# ----------------------------------------------------------------------------- determinants


def det(A, *, out=None):
    """The determinant of a square matrix (or batch)."""
    _need("linalg.det", A)
    return _out(dispatch(_LS.det_op, (A,)), out)


def slogdet(A, *, out=None):
    """The sign and log of the absolute determinant."""
    _need("linalg.slogdet", A)
    return _out(_Slogdet(*dispatch(_LS.slogdet_op, (A,))), out)


def logdet(input):
    """log det(A): nan for a negative determinant, -inf for a zero one (torch.logdet); for complex
    input the principal complex logarithm log|det| + i arg(det)."""
    sign, la = slogdet(input)
    from .ops.elementwise import where
    if input.is_complex():  # (log of a unit number: i arg(det); a zero determinant: -inf + nan i, as PyTorch)
        return where(sign == 0, complex(-math.inf, math.nan), la + sign.log())
    return where(sign < 0, math.nan, la)


# ----------------------------------------------------------------------------- Cholesky


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """cholesky without raising on failure: returns (L, info), info > 0 where a matrix is not positive-definite."""
    _need("linalg.cholesky", A)
    p = {"check_errors": check_errors}
    if upper:
        p["upper"] = True
    return _out(_CholEx(*dispatch(_LS.chol_op, (A,), p)), out)


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor L (or U with upper=True) of a symmetric positive-definite matrix."""
    return _out(cholesky_ex(A, upper=upper, check_errors=True)[0], out)


def _same_dtype(name, b, a):
    if b.dtype is not a.dtype:
        raise RuntimeError(f"{name}: Expected b and A to have the same dtype, but found b of type "
                           f"{_LS.torch_dtype_name(b.dtype.np)} and A of type {_LS.torch_dtype_name(a.dtype.np)} "
                           f"instead.")


def _factor_check(name, L):
    if not (L.is_floating_point() or L.is_complex()):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_LS.torch_dtype_name(L.dtype.np)}")
    if L.dim() >= 2 and L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {L.shape[-2]} by "
                           f"{L.shape[-1]} matrices")


def cholesky_solve(B, L, upper=False, *, out=None):
    """torch.cholesky_solve: X with A X = B where A = L L^H (or U^H U).

    Differences from PyTorch: the derivative along
    the triangle LAPACK never reads is 0 (finite differences agree), PyTorch's is not."""
    _same_dtype("cholesky_solve", B, L)
    _factor_check("cholesky_solve", L)
    if B.dim() < 2 or L.dim() < 2:
        raise RuntimeError(f"cholesky_solve: b should have at least 2 dimensions, but has {B.dim()} dimensions "
                           f"instead" if B.dim() < 2 else
                           f"cholesky_solve: u should have at least 2 dimensions, but has {L.dim()} dimensions instead")
    if upper:
        y = _LS.solve_tri(L.mH, B, False)
        x = _LS.solve_tri(L, y, True)
    else:
        y = _LS.solve_tri(L, B, False)
        x = _LS.solve_tri(L.mH, y, True)
    return _out(x, out)


def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of A from its Cholesky factor.

    Differences from PyTorch: the derivative along the triangle LAPACK never reads is 0 (finite differences agree), PyTorch's is not."""
    _need("cholesky_inverse", L)
    _factor_check("cholesky_inverse", L)
    from ._creation import eye
    return _out(cholesky_solve(eye(L.shape[-1], dtype=L.dtype).expand(tuple(L.shape)), L, upper), out)


# ----------------------------------------------------------------------------- LU


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """lu_factor without raising on singular input: returns (LU, pivots, info)."""
    _need("linalg.lu_factor_ex", A)
    return _out(_LUFEx(*dispatch(_LS.lu_op, (A,), {"pivot": pivot, "check_errors": check_errors})), out)


def lu_factor(A, *, pivot=True, out=None):
    """The compact LU factorisation (LU, pivots), LAPACK's layout."""
    _need("linalg.lu_factor", A)
    lu_, piv, _ = dispatch(_LS.lu_op, (A,), {"pivot": pivot, "check_errors": True})
    return _out(_LUF(lu_, piv), out)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """Unpack lu_factor's output into P, L, U."""
    if LU_data.dim() < 2:
        raise RuntimeError("torch.lu_unpack: LU_data must have at least 2 dimensions")
    if LU_pivots.dtype.name != "int32":
        raise RuntimeError(f"torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                           f"dtype. Note: this function is intended to be used with the output produced by "
                           f"torch.linalg.lu_factor, got {LU_pivots.dtype}")
    from ._creation import empty
    p, l, u = _LS.lu_unpack_parts(LU_data, LU_pivots, unpack_pivots)
    if not unpack_pivots:
        p = empty(0, dtype=LU_data.dtype)
    if not unpack_data:
        l = empty(0, dtype=LU_data.dtype)
        u = empty(0, dtype=LU_data.dtype)
    return _out(_LUUnpack(p, l, u), out)


def lu(A, *, pivot=True, out=None):
    """The LU factorisation with partial pivoting as (P, L, U)."""
    _need("linalg.lu", A)
    lu_, piv, _ = dispatch(_LS.lu_op, (A,), {"pivot": pivot})
    return _out(_LU(*_LS.lu_unpack_parts(lu_, piv)), out)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (or X A = B, or with A^H) from A's packed LU factorization."""
    _need("linalg.lu_solve", LU)
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2]} by {LU.shape[-1]} matrices")
    if B.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if B.dtype is not LU.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_LS.torch_dtype_name(LU.dtype.np)} and B of type {_LS.torch_dtype_name(B.dtype.np)} "
                           f"instead")
    n = LU.shape[-1]
    if B.shape[-2 if left else -1] != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    p, l, u = _LS.lu_unpack_parts(LU, pivots)
    b = B if left else B.mH
    adj = adjoint if left else not adjoint
    # A = P L U; A X = B: X = U^{-1} L^{-1} P^T B; A^H X = B: X = P L^{-H} U^{-H} B
    if not adj:
        x = _LS.solve_tri(u, _LS.solve_tri(l, matmul(p.mT, b), False, True), True)
    else:
        x = matmul(p, _LS.solve_tri(l.mH, _LS.solve_tri(u.mH, b, False), True, True))
    return _out(x if left else x.mH, out)


# ----------------------------------------------------------------------------- orthogonal decompositions


def qr(A, mode="reduced", *, out=None):
    """The QR factorisation (mode 'reduced', 'complete' or 'r')."""
    _need("linalg.qr", A)
    return _out(_QR(*_SP.qr(A, mode)), out)


def _no_driver(name, driver):
    if driver is not None:
        raise RuntimeError(f"torch.linalg.{name}: keyword argument `driver=` is only supported on CUDA inputs "
                           f"with cuSOLVER backend.")


def svd(A, full_matrices=True, *, driver=None, out=None):
    """The singular value decomposition U, S, Vh (full_matrices); driver= raises RuntimeError for
    CPU input, as PyTorch's does."""
    _need("linalg.svd", A)
    _no_driver("svd", driver)
    return _out(_SVD(*_SP.svd(A, full_matrices)), out)


def svdvals(A, *, driver=None, out=None):
    """The singular values, in descending order."""
    _need("linalg.svdvals", A)
    _no_driver("svdvals", driver)
    return _out(_SP.svd(A, False)[1], out)


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors of a symmetric or Hermitian matrix (UPLO)."""
    _need("linalg.eigh", A)
    return _out(_Eigh(*_SP.eigh(A, UPLO)), out)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a symmetric or Hermitian matrix."""
    _need("linalg.eigvalsh", A)
    return _out(_SP.eigh(A, UPLO)[0], out)


def eig(A, *, out=None):
    """Eigenvalues and unit eigenvectors of general square matrices, always complex (complex64 for
    float32 input, complex128 for float64): LAPACK's geev, each eigenvector of unit norm with its
    largest component real, as PyTorch's."""
    _need("linalg.eig", A)
    return _out(_Eig(*_SP.eig(A)), out)


def eigvals(A, *, out=None):
    """Eigenvalues of a general square matrix."""
    _need("linalg.eigvals", A)
    return _out(_SP.eig(A)[0], out)


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H (LAPACK's orgqr), in ember ops."""
    _need("torch.linalg.householder_product", A)
    U.no_lowp("orgqr_cpu", A)
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < k:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"torch.linalg.householder_product: Expected tau to have one dimension less than "
                           f"input, but got tau.ndim equal to {tau.dim()} and input.ndim is equal to {A.dim()}")
    if A.dtype is not tau.dtype:
        raise RuntimeError(f"torch.linalg.householder_product: tau dtype {tau.dtype} does not match input dtype "
                           f"{A.dtype}")
    for t in (A, tau):
        if not (t.is_floating_point() or t.is_complex()):
            raise RuntimeError(f"torch.linalg.householder_product: Expected a floating point or complex tensor as "
                               f"input. Got {_LS.torch_dtype_name(t.dtype.np)}")
    from ._creation import eye
    from .ops.shape import tril
    v = tril(A[..., :, :k], -1) + eye(m, k, dtype=A.dtype)
    q = eye(m, n, dtype=A.dtype)
    if k == 0:  # (no reflector: the identity's columns, attached to the input's graph)
        q = _attached(q.expand(tuple(A.shape)), A)
    for i in range(k - 1, -1, -1):
        vi = v[..., :, i:i + 1]
        q = q - (tau[..., i:i + 1].unsqueeze(-1) * vi) * matmul(_LS._conj(vi).mT, q)
    return _out(q, out)


orgqr = householder_product


def geqrf(input, *, out=None):
    """The QR factorisation in LAPACK's compact form (a, tau)."""
    return _out(_Geqrf(*dispatch(_SP.geqrf_op, (input,))), out)


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """op(Q) @ other (left) or other @ op(Q), Q the full orthogonal factor of geqrf's output."""
    U.no_lowp("ormqr_cpu", input)
    for t in (input, tau, other):
        if not (t.is_floating_point() or t.is_complex()):
            raise RuntimeError(f"torch.ormqr: Expected a floating point or complex tensor as input. Got "
                               f"{_LS.torch_dtype_name(t.dtype.np)}")
    if not (input.dtype is tau.dtype is other.dtype):
        raise RuntimeError(f"torch.ormqr: Expected input, tau and other to have the same dtype, got "
                           f"{input.dtype}, {tau.dtype} and {other.dtype}")
    for nm, t in (("input", input), ("other", other)):
        if t.dim() < 2:
            raise RuntimeError(f"torch.ormqr: {nm} must have at least 2 dimensions, got {nm} of size "
                               f"{list(t.shape)}")
    if other.dim() != input.dim():
        raise RuntimeError(f"torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.dim()} and input.ndim is equal to {input.dim()}")
    m = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != m:
        raise RuntimeError(f"torch.ormqr: input.shape[-2] must be equal to other.shape[{-2 if left else -1}]")
    if tau.shape[-1] != min(m, input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{-2 if left else -1}], "
                           f"input.shape[-1])")
    from ._creation import zeros
    from .ops.shape import cat
    kk = input.shape[-1]
    a = input if kk >= m else cat([input, zeros(tuple(input.shape[:-1]) + (m - kk,), dtype=input.dtype)], -1)
    a = a[..., :, :m]
    t = tau if tau.shape[-1] >= m else cat([tau, zeros(tuple(tau.shape[:-1]) + (m - tau.shape[-1],),
                                                        dtype=tau.dtype)], -1)
    q = householder_product(a, t[..., :m])
    if transpose:
        q = q.mH
    return _out(matmul(q, other) if left else matmul(other, q), out)


# ----------------------------------------------------------------------------- least squares, pinv, rank


def lstsq(A, B, rcond=None, *, driver=None, out=None):
    """The least-squares solution of A X = B, with residuals, rank and singular values by driver."""
    _need("linalg.lstsq", A)
    if driver is None:
        driver = "gelsy"
    if driver not in _LS._DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vec = _vector_case(A, B)
    b = B.unsqueeze(-1) if vec else B
    p = {"driver": driver}
    if rcond is not None:
        p["rcond"] = rcond
    x, res, rank, sv = dispatch(_LS.lstsq_op, (A, b), p)
    if vec:
        x = x.squeeze(-1)  # (the residuals keep their last dim of 1, as PyTorch's)
    return _out(_Lstsq(x, res, rank, sv), out)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None, rcond=None):
    """The Moore-Penrose pseudo-inverse (atol, rtol, hermitian)."""
    _need("linalg.pinv", A)
    if rcond is not None:
        rtol = rcond
    p = {"hermitian": True} if hermitian else {}
    if U.is_tensor(atol) or U.is_tensor(rtol):
        # tensor tolerances (one per matrix of a batch) are operands, so that they batch under vmap
        from ._creation import tensor as _tensor
        rd = A.dtype.to_real() if A.is_complex() else A.dtype
        at = atol.to(rd) if U.is_tensor(atol) else _tensor(0.0 if atol is None else float(atol), dtype=rd)
        if rtol is None:
            return _out(dispatch(_LS.pinv_op, (A, at), p), out)
        rt = rtol.to(rd) if U.is_tensor(rtol) else _tensor(float(rtol), dtype=rd)
        return _out(dispatch(_LS.pinv_op, (A, at, rt), p), out)
    if atol is not None:
        p["atol"] = float(atol)
    if rtol is not None:
        p["rtol"] = float(rtol)
    return _out(dispatch(_LS.pinv_op, (A,), p), out)


def pinverse(input, rcond=1e-15):
    """The pseudo-inverse (torch.pinverse: rcond relative to the largest singular value)."""
    return pinv(input, rtol=rcond)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None, tol=None):
    """The number of singular values (the absolute eigenvalues when hermitian) above max(atol, rtol * s_max),
    in ember ops: tensor tolerances (one per matrix of a batch) batch under vmap."""
    _need("linalg.matrix_rank", A)
    if tol is not None:
        atol, rtol = tol, 0.0
    m, n = A.shape[-2:]
    from .ops.elementwise import maximum, where
    with _no_grad():
        s = eigvalsh(A).abs() if hermitian else svdvals(A)
        smax = _R.amax(s, -1, True) if s.shape[-1] else s.sum(-1, keepdim=True)
        default = float(np.finfo(s.dtype.np).eps) * max(m, n)
        at = None if atol is None else _tol_tensor(atol, s)
        if rtol is not None:
            rt = _tol_tensor(rtol, s)
        else:  # (PyTorch: rtol is 0 where a positive atol is given, eps * max(m, n) elsewhere)
            rt = default if at is None else where(at > 0, 0.0, default)
        thr = smax * rt
        if at is not None:
            thr = maximum(thr, at)
        r = (s > thr).sum(-1)
    return _out(r, out)


def _tol_tensor(t, like):
    """A tolerance (a number, or a tensor over the batch) as a tensor of ``like``'s dtype, with a
    trailing dim to broadcast against the values."""
    from ._creation import tensor as _tensor
    if not U.is_tensor(t):
        t = _tensor(float(t), dtype=like.dtype)
    return t.to(like.dtype).unsqueeze(-1)


def _no_grad():
    from .autograd import no_grad
    return no_grad()


# ----------------------------------------------------------------------------- matrix functions


def matrix_exp(A):
    """The matrix exponential.

    Differences from PyTorch: float32 and complex64 input is computed in float64 and complex128 and
    rounded once, so the result is more accurate than PyTorch's: on random 8x8 matrices with entries
    of standard deviation 3, its largest error is about 5e-8 of the largest entry where PyTorch's
    reaches about 1e-6 (the two differ by that much). float64 agrees with PyTorch's to about 1e-13 of
    the largest entry."""
    _need("linalg.matrix_exp", A)
    if A.dtype.is_floating_point and A.dtype.itemsize == 2:  # float16/bfloat16 (PyTorch computes them):
        return matrix_exp(A.float()).to(A.dtype)              # in float32, rounded once
    return dispatch(_LS.expm_op, (A,))


def matrix_power(A, n, *, out=None):
    """The n-th power of a square matrix (negative n: of its inverse)."""
    _need("linalg.matrix_power", A)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:  # the identity, still attached to A's graph (a zero gradient), as PyTorch's
        return _out(_attached(_eye_like(A), A), out)
    if n < 0:
        A = inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return _out(result, out)


def _eye_like(A):
    from ._creation import eye
    return eye(A.shape[-1], dtype=A.dtype).expand(tuple(A.shape))


def _attached(value, A):
    """``value`` (A's shape) as a function of A with a zero gradient: where() picks value everywhere."""
    from ._creation import ones
    from .ops.elementwise import where
    return where(ones(tuple(A.shape), dtype=U.dt.bool_), value, A)


# ----------------------------------------------------------------------------- norms


def _dims(dim, ndim, op):
    if dim is None:
        return None
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(U.wrap_dim(d, ndim, op) for d in dim)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
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
        return _out(nz.sum(dims, keepdim) if dims is not None else nz.sum(), out)
    return _out(_R.norm(x, float(ord) if ord not in (2, 1) else ord, dims, keepdim), out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norms over the two dims ``dim``: 'fro', 'nuc', 2, -2, 1, -1, inf and -inf."""
    if dtype is not None:
        A = A.to(dtype)
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    d0, d1 = _dims(dim, A.dim(), "linalg.matrix_norm")
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return _out(_R.norm(A, 2, (d0, d1), keepdim), out)
    if ord in ("nuc", 2, -2):
        if A.is_floating_point() and A.dtype.itemsize == 2:  # (float16/bfloat16: as PyTorch)
            raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                               f"{'Half' if A.dtype.name == 'float16' else 'BFloat16'}")
        if not (A.is_floating_point() or A.is_complex()):
            raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                               f"{_LS.torch_dtype_name(A.dtype.np)}")
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        if ord == "nuc" or s.shape[-1] == 0:  # (an empty matrix's norm is 0, as PyTorch's)
            r = s.sum(-1)
        else:
            r = _R.amax(s, -1) if ord == 2 else _R.amin(s, -1)
        if keepdim:
            r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
        return _out(r, out)
    if ord in (1, -1):      # the largest (smallest) absolute column sum
        sums, red = A.abs().sum(d0, keepdim=True), d1
    elif ord in (math.inf, -math.inf):  # the largest (smallest) absolute row sum
        sums, red = A.abs().sum(d1, keepdim=True), d0
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if sums.shape[red] == 0:
        r = sums.sum(red, keepdim=True)
    else:
        r = (_R.amax if ord > 0 else _R.amin)(sums, (red,), True)
    return _out(r if keepdim else r.squeeze(max(d0, d1)).squeeze(min(d0, d1)), out)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.norm: a vector norm over one dim (or all, flattened, when ord is None), a
    matrix norm over two."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    if A.dim() == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    if A.dim() == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                       f"Got {A.dim()}D.")


def cond(A, p=None, *, out=None):
    """The condition number in the norm ``p``: s_max / s_min for None/2 (and its inverse for -2);
    ||A||_p ||A^{-1}||_p otherwise (inf where A is singular)."""
    _need("linalg.cond", A)
    if p is None or p in (2, -2):
        s = svdvals(A)
        if s.shape[-1] == 0:
            from ._creation import zeros
            return _out(zeros(tuple(s.shape[:-1]), dtype=s.dtype), out)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
        return _out(r, out)
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    ai, info = inv_ex(A)
    from .ops.elementwise import where
    r = matrix_norm(A, p) * matrix_norm(where((info > 0).unsqueeze(-1).unsqueeze(-1), 0.0, ai), p)
    return _out(where(info > 0, math.inf, r), out)


# ----------------------------------------------------------------------------- products and helpers


def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along dim."""
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = U.wrap_dim(dim, input.dim(), "linalg.cross")
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"linalg.cross: expected scalar type {_LS.torch_dtype_name(input.dtype.np)} but found "
                           f"{_LS.torch_dtype_name(other.dtype.np)}")
    shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(other.shape)))
    from .ops.linalg import cross as _cross
    return _out(_cross(input.expand(shape), other.expand(shape), d), out)


def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) over ``dim`` (the conjugate of the first vector, as PyTorch's)."""
    def ok(t):
        return t.is_floating_point() or t.is_complex()
    if not ok(x) or not ok(y):
        bad = x if not ok(x) else y
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{_LS.torch_dtype_name(bad.dtype.np)}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_LS.torch_dtype_name(x.dtype.np)} and y of type {_LS.torch_dtype_name(y.dtype.np)} "
                           f"instead")
    return _out((_LS._conj(x) * y).sum(dim), out)


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (the first and last may be vectors), multiplied in the
    order that needs the fewest scalar multiplications."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first_vec, last_vec = ts[0].dim() == 1, ts[-1].dim() == 1
    for i, t in enumerate(ts):
        want = 1 if (i == 0 and first_vec) or (i == len(ts) - 1 and last_vec) else 2
        if t.dim() != want:
            raise RuntimeError(f"multi_dot(): the {'first and last' if i in (0, len(ts) - 1) else 'middle'} "
                               f"tensors must be 1D or 2D but got {t.dim()}D" if i in (0, len(ts) - 1) else
                               f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(len(ts) - 1):
        if ts[i].shape[-1] != ts[i + 1].shape[0]:
            raise RuntimeError(f"linalg.multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                               f"{list(ts[i + 1].shape)} cannot be multiplied")
    n = len(ts)
    dims = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for ln in range(1, n):
        for i in range(n - ln):
            j = i + ln
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def prod(i, j):
        if i == j:
            return ts[i]
        k = split[i][j]
        return matmul(prod(i, k), prod(k + 1, j))
    r = prod(0, n - 1)
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return _out(r, out)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of a tensor for tensordot over ind leading dims."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape = tuple(A.shape[ind:]) + tuple(A.shape[:ind])
    rows = int(np.prod(A.shape[:ind]))
    cols = int(np.prod(A.shape[ind:]))
    if rows != cols:
        raise RuntimeError(f"linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return _out(inv(A.reshape(rows, cols)).reshape(out_shape), out)


def tensorsolve(A, B, dims=None, *, out=None):
    """The X with tensordot(A, X, X.ndim) = B."""
    if dims is not None:
        dims = [U.wrap_dim(d, A.dim(), "linalg.tensorsolve") for d in dims]
        rest = [d for d in range(A.dim()) if d not in dims]
        A = A.permute(*(rest + dims))
    bn = B.dim()
    res_shape = tuple(A.shape[bn:])
    rows = int(np.prod(A.shape[:bn])) if bn else 1
    cols = int(np.prod(res_shape)) if res_shape else 1
    if rows != cols:
        raise RuntimeError(f"linalg.tensorsolve: Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return _out(solve(A.reshape(rows, cols), B.reshape(rows)).reshape(res_shape), out)


def vander(x, N=None):
    """Columns x^0, x^1, ..., x^(N-1) (increasing powers), through a product scan."""
    if x.dtype.is_floating_point and x.dtype.itemsize == 2:
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{'Half' if x.dtype.name == 'float16' else 'BFloat16'}")
    if x.dim() == 0:
        x = x.unsqueeze(0)
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("linalg.vander: N must be greater than 1.")
    from ._creation import ones
    from .ops.shape import cat
    if not (x.is_floating_point() or x.is_complex() or x.dtype.name in ("int64", "int32", "int16", "int8", "uint8")):
        raise RuntimeError(f"linalg.vander: Unsupported dtype {x.dtype}")
    xs = x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,))
    return cat([ones(tuple(x.shape) + (1,), dtype=x.dtype), xs.cumprod(-1)], -1)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals along the last two dims (offset), as a view."""
    return A.diagonal(offset, dim1, dim2)


# ----------------------------------------------------------------------------- LDL


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """ldl_factor without raising on failure: returns (LD, pivots, info)."""
    _need("torch.linalg.ldl_factor_ex", A)
    p = {"hermitian": hermitian, "check_errors": check_errors}
    return _out(_LDLEx(*dispatch(_SP.ldl_op, (A,), p)), out)


def ldl_factor(A, *, hermitian=False, out=None):
    """The LDL^T factorisation of a symmetric matrix (LD, pivots), LAPACK's sytrf layout."""
    ld, piv, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return _out(_LDL(ld, piv), out)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """Solve A X = B from ldl_factor's LD and pivots."""
    return _out(dispatch(_SP.ldl_solve_op, (LD, pivots, B), {"hermitian": hermitian}), out)


# ----------------------------------------------------------------------------- torch.* spellings


def _torch_svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: the SVD as (U, S, V) (some, compute_uv), deprecated in PyTorch for linalg.svd."""
    if not compute_uv:
        from ._creation import zeros
        s = svdvals(input)
        m, n = input.shape[-2:]
        b = tuple(input.shape[:-2])
        return _out(_TSVD(zeros(b + (m, m), dtype=input.dtype), s, zeros(b + (n, n), dtype=input.dtype)), out)
    u, s, vh = svd(input, full_matrices=not some)
    return _out(_TSVD(u, s, vh.mH), out)


def _torch_qr(input, some=True, *, out=None):
    """torch.qr: the QR factorisation (some), deprecated in PyTorch for linalg.qr."""
    return _out(_TQR(*qr(input, "reduced" if some else "complete")), out)


def _torch_cholesky(input, upper=False, *, out=None):
    """torch.cholesky: the Cholesky factor (upper), deprecated in PyTorch for linalg.cholesky."""
    return cholesky(input, upper=upper, out=out)


def _torch_lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu: the compact LU factorisation (and infos with get_infos)."""
    r = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return _out(tuple(r) if get_infos else (r[0], r[1]), out)


def _torch_lu_solve(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve: solve A X = b from the LU factorisation of A."""
    return lu_solve(LU_data, LU_pivots, b, out=out)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve: (solution, copy of A) for a triangular A, deprecated for linalg.solve_triangular."""
    _same_dtype("triangular_solve", b, A)
    a = A.mT if transpose else A
    x = _LS.solve_tri(a, b, upper != transpose, unitriangular)
    return _out(_TriSolve(x, A.clone()), out)


def symeig(*args, **kwargs):
    """Removed in PyTorch 1.9: raises RuntimeError with PyTorch's message (use linalg.eigh)."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. The default behavior has changed "
        "from using the upper triangular portion of the matrix by default to using the lower triangular "
        "portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced with:\nL = "
        "torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, "
        "eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')")


def _get_approximate_basis(A, q, niter, M=None):
    from ._creation import randn
    R = randn(A.shape[-1], q, dtype=A.dtype)
    X = matmul(A, R) if M is None else matmul(A, R) - matmul(M, R)
    Q = qr(X).Q
    for _ in range(niter):
        Z = matmul(A.mH, Q) if M is None else matmul(A.mH, Q) - matmul(M.mH, Q)
        Q = qr(Z).Q
        X = matmul(A, Q) if M is None else matmul(A, Q) - matmul(M, Q)
        Q = qr(X).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """A rank-q approximate SVD (U, S, V) by randomized subspace iteration (Halko et al., 2009)."""
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if m < n:
        u, s, v = svd_lowrank(A.mH, q, niter, None if M is None else M.mH)
        return v, s, u
    Q = _get_approximate_basis(A, q, niter, M)
    B = matmul(Q.mH, A) if M is None else matmul(Q.mH, A) - matmul(Q.mH, M)
    u, s, vh = svd(B, full_matrices=False)
    return matmul(Q, u), s, vh.mH


def pca_lowrank(A, q=None, center=True, niter=2):
    """Principal components of a low-rank matrix: (U, S, V) from a randomised SVD of the centred input."""
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not center:
        return svd_lowrank(A, q, niter)
    c = A.mean(-2, keepdim=True)
    return svd_lowrank(A - c, q, niter)


# torch.* functions and Tensor methods this module provides (bound by ember/__init__)
TORCH_FUNCTIONS = {
    "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inv, "pinverse": pinverse,
    "matrix_exp": matrix_exp, "matrix_power": matrix_power, "cholesky": _torch_cholesky,
    "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse, "lu": _torch_lu,
    "lu_solve": _torch_lu_solve, "lu_unpack": lu_unpack, "triangular_solve": triangular_solve,
    "svd": _torch_svd, "qr": _torch_qr, "geqrf": geqrf, "ormqr": ormqr, "orgqr": orgqr, "symeig": symeig,
    "svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank,
}


def _bind_methods():
    from ._tensor import Tensor
    for name in ("det", "logdet", "slogdet", "inverse", "pinverse", "matrix_exp", "matrix_power", "cholesky",
                 "cholesky_solve", "cholesky_inverse", "lu_solve", "triangular_solve", "svd", "qr", "geqrf",
                 "ormqr", "orgqr"):
        setattr(Tensor, name, TORCH_FUNCTIONS[name])
    Tensor.lu = lambda self, pivot=True, get_infos=False: _torch_lu(self, pivot, get_infos)


_bind_methods()
