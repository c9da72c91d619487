"""op_db entries of the torch.linalg primitives (ember/ops/linalg_solve.py, linalg_spectral.py) and of
the composites built on them. Decompositions whose factors are determined only up to signs (eigh,
svd) are compared through sign-fixed factors, and inputs meant to be symmetric are symmetrized
inside the call, so that the same function is right for finite differences and for PyTorch."""
import numpy as np

import op_db
from op_db import add, fixed, S, U


def _wc(r, shape, shift=3.0):
    """Well-conditioned square matrices: uniform entries plus shift * I."""
    a = U(r, shape, -1.0, 1.0)
    return a + shift * np.eye(shape[-1])


def _tri(r, shape, upper):
    a = _wc(r, shape)
    return np.triu(a) if upper else np.tril(a)


def _spd(m, a):
    """A symmetric (Hermitian) positive-definite matrix made from a (differentiably)."""
    n = a.shape[-1]
    return a @ a.mH + n * m.eye(n, dtype=a.dtype)


def _factor(m, a, upper):
    """A Cholesky factor made from a: its triangle with a real positive diagonal (the abs, which is
    the identity on the real samples' diagonal of 3 + U(-1, 1))."""
    t = a.triu(1) if upper else a.tril(-1)
    return t + m.eye(*a.shape[-2:], dtype=a.abs().dtype) * a.abs()


def _sym(m, a):
    return a + a.mT


def _fix_cols(m, v, *others):
    """v's columns (and the matching columns/rows of others) with a positive first row: a gauge fix."""
    d = m.sign(v[..., :1, :])
    return (v * d,) + tuple(o * d for o in others)


def _pivots(r, shape):
    import scipy.linalg as sla
    a = r.uniform(-1, 1, shape)
    lu, piv = sla.lu_factor(a)
    return lu, (piv + 1).astype(np.int32)


# ----------------------------------------------------------------------------- inv, solve

add("linalg_inv_ex", "linalg_inv", fn=lambda m, a: m.linalg.inv(a),
    samples=fixed(lambda r: S((_wc(r, (3, 3)),)), lambda r: S((_wc(r, (2, 4, 4)),)), lambda r: S((_wc(r, (0, 2, 2)),)),
                  lambda r: S((_wc(r, (1, 1)),))))
add("linalg_inv_ex", "linalg_inv_ex", fn=lambda m, a: m.linalg.inv_ex(a),
    samples=fixed(lambda r: S((_wc(r, (2, 3, 3)),))))
add("linalg_inv_ex", "linalg_inv_torch_inverse", fn=lambda m, a: m.inverse(a), samples=fixed(lambda r: S((_wc(r, (3, 3)),))))
add("linalg_solve_ex", "linalg_solve", fn=lambda m, a, b, **k: m.linalg.solve(a, b, **k),
    samples=fixed(lambda r: S((_wc(r, (3, 3)), U(r, (3, 2)))),
                  lambda r: S((_wc(r, (3, 3)), U(r, (3,))), desc="vector"),
                  lambda r: S((_wc(r, (2, 3, 3)), U(r, (2, 3))), desc="batch of vectors"),
                  lambda r: S((_wc(r, (2, 1, 3, 3)), U(r, (4, 3, 2))), desc="broadcast"),
                  lambda r: S((_wc(r, (3, 3)), U(r, (2, 3))), {"left": False}, desc="left=False")))
add("linalg_solve_ex", "linalg_solve_ex", fn=lambda m, a, b: m.linalg.solve_ex(a, b),
    samples=fixed(lambda r: S((_wc(r, (2, 3, 3)), U(r, (2, 3, 1))))))
add("linalg_solve_ex", "linalg_tensorsolve", fn=lambda m, a, b: m.linalg.tensorsolve(a, b),
    samples=fixed(lambda r: S((_wc(r, (6, 6)).reshape(2, 3, 6), U(r, (2, 3))))))
add("linalg_inv_ex", "linalg_tensorinv", fn=lambda m, a: m.linalg.tensorinv(a, ind=2),
    samples=fixed(lambda r: S((_wc(r, (6, 6)).reshape(2, 3, 6),))))
add("linalg_solve_triangular", fn=lambda m, a, b, **k: m.linalg.solve_triangular(a, b, **k),
    samples=fixed(lambda r: S((_tri(r, (3, 3), True), U(r, (3, 2))), {"upper": True}),
                  lambda r: S((_tri(r, (2, 3, 3), False), U(r, (3, 4))), {"upper": False}),
                  lambda r: S((_tri(r, (3, 3), False), U(r, (2, 3, 2))), {"upper": False, "unitriangular": True}),
                  lambda r: S((_tri(r, (3, 3), True), U(r, (2, 3))), {"upper": True, "left": False})))
add("linalg_solve_triangular", "triangular_solve", fn=lambda m, b, a, **k: m.triangular_solve(b, a, **k)[0],
    samples=fixed(lambda r: S((U(r, (3, 2)), _tri(r, (3, 3), True))),
                  lambda r: S((U(r, (3, 2)), _tri(r, (3, 3), True)), {"transpose": True})))
# (PyTorch differentiates the factor as a full matrix, as if A = L L^H: the factor is made
# triangular inside the call, so that both conventions agree)
add("linalg_solve_triangular", "cholesky_solve", fn=lambda m, b, a: m.cholesky_solve(b, a.tril()),
    samples=fixed(lambda r: S((U(r, (3, 2)), _tri(r, (3, 3), False)))))
add("linalg_solve_triangular", "cholesky_inverse",
    fn=lambda m, a, **k: m.cholesky_inverse(_factor(m, a, k.get("upper", False)), **k),
    samples=fixed(lambda r: S((_tri(r, (3, 3), False),)), lambda r: S((_tri(r, (3, 3), True),), {"upper": True})))

# ----------------------------------------------------------------------------- det


def _rank_deficient(r, n):
    a = U(r, (n, n - 1))
    b = U(r, (n - 1, n))
    return a @ b


add("linalg_det", "linalg_det", fn=lambda m, a: m.linalg.det(a),
    samples=fixed(lambda r: S((_wc(r, (3, 3)),)), lambda r: S((_wc(r, (2, 2, 2)),)),
                  lambda r: S((U(r, (1, 1)),))))
# a rank-2 3x3 matrix: the gradient is the adjugate (nonzero), which ember gives (checked by finite
# differences); PyTorch's MKL LU on some CPUs (AVX2 here) finds an exactly zero det and gives a zero
# gradient, so this sample is not compared with PyTorch
add("linalg_det", "linalg_det_singular", fn=lambda m, a: m.linalg.det(a), oracle=False,
    samples=fixed(lambda r: S((_rank_deficient(r, 3),), desc="singular")))
add("linalg_det", "linalg_det_method", fn=lambda m, a: a.det(), samples=fixed(lambda r: S((_wc(r, (3, 3)),))))
add("linalg_slogdet", "linalg_slogdet", fn=lambda m, a: m.linalg.slogdet(a),
    samples=fixed(lambda r: S((_wc(r, (3, 3)),)), lambda r: S((U(r, (2, 3, 3)),))))
add("linalg_slogdet", "linalg_logdet", fn=lambda m, a: m.logdet(_spd(m, a)), samples=fixed(lambda r: S((U(r, (2, 3, 3)),))))

# ----------------------------------------------------------------------------- cholesky

add("linalg_cholesky_ex", "linalg_cholesky", fn=lambda m, a, **k: m.linalg.cholesky(_spd(m, a), **k),
    samples=fixed(lambda r: S((U(r, (2, 4, 4)),)), lambda r: S((U(r, (3, 3)),)),
                  lambda r: S((U(r, (3, 3)),), {"upper": True})))
add("linalg_cholesky_ex", "linalg_cholesky_ex", fn=lambda m, a: m.linalg.cholesky_ex(_spd(m, a)),
    samples=fixed(lambda r: S((U(r, (2, 3, 3)),))))

# ----------------------------------------------------------------------------- LU

add("linalg_lu_factor_ex", "linalg_lu_factor", fn=lambda m, a: m.linalg.lu_factor(a),
    samples=fixed(lambda r: S((U(r, (3, 3)),)), lambda r: S((U(r, (2, 4, 4)),)),
                  lambda r: S((U(r, (4, 2)),), desc="tall"), lambda r: S((U(r, (2, 4)),), desc="wide")))
add("linalg_lu_factor_ex", "linalg_lu_factor_ex", fn=lambda m, a: m.linalg.lu_factor_ex(a),
    samples=fixed(lambda r: S((U(r, (3, 3)),))))
add("linalg_lu_factor_ex", "linalg_lu", fn=lambda m, a: m.linalg.lu(a)[1:],
    samples=fixed(lambda r: S((U(r, (3, 3)),)), lambda r: S((U(r, (2, 4, 2)),)), lambda r: S((U(r, (2, 3)),))))
add("linalg_lu_factor_ex", "linalg_lu_solve", fn=lambda m, a, b, **k: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, **k),
    samples=fixed(lambda r: S((_wc(r, (3, 3)), U(r, (3, 2)))),
                  lambda r: S((_wc(r, (3, 3)), U(r, (2, 3))), {"left": False}),
                  lambda r: S((_wc(r, (2, 3, 3)), U(r, (3, 2))), {"adjoint": True})))
add("linalg_lu_factor_ex", "linalg_lu_P", fn=lambda m, a: m.linalg.lu(a).P, grad=False,
    samples=fixed(lambda r: S((U(r, (3, 3)),)), lambda r: S((U(r, (2, 4, 2)),))))
add("lu_pivots_to_permutation", "linalg_lu_unpack", fn=lambda m, lu, piv: m.lu_unpack(lu, piv)[1:],
    samples=fixed(lambda r: S(_pivots(r, (3, 3))), lambda r: S(_pivots(r, (4, 2))), lambda r: S(_pivots(r, (2, 4)))))

# ----------------------------------------------------------------------------- matrix functions

add("linalg_matrix_exp", "linalg_matrix_exp", fn=lambda m, a: m.linalg.matrix_exp(a),
    samples=fixed(lambda r: S((U(r, (3, 3), -0.5, 0.5),)), lambda r: S((U(r, (2, 2, 2)),)),
                  lambda r: S((U(r, (1, 1)),))))
add("linalg_pinv", "linalg_pinv", fn=lambda m, a, **k: m.linalg.pinv(a, **k),
    samples=fixed(lambda r: S((U(r, (4, 3)),)), lambda r: S((U(r, (2, 2, 3)),)), lambda r: S((_wc(r, (3, 3)),))))
add("linalg_pinv", "linalg_pinv_hermitian", fn=lambda m, a: m.linalg.pinv(_sym(m, a), hermitian=True),
    samples=fixed(lambda r: S((_wc(r, (2, 3, 3)),)), lambda r: S((_wc(r, (3, 3)),))))
add("linalg_lstsq", "linalg_lstsq_all", fn=lambda m, a, b, **k: m.linalg.lstsq(a, b, **k), grad=False,
    samples=fixed(lambda r: S((U(r, (2, 4, 3)), U(r, (2, 4, 1)))),
                  lambda r: S((U(r, (4, 3)), U(r, (4, 2))), {"driver": "gelsd"}),
                  lambda r: S((U(r, (4, 3)), U(r, (4, 2))), {"driver": "gels"})))
add("linalg_lstsq", "linalg_lstsq_residuals", fn=lambda m, a, b, **k: m.linalg.lstsq(a, b, **k)[:2],
    samples=fixed(lambda r: S((U(r, (5, 3)), U(r, (5, 2))), {"driver": "gelsd"}),
                  lambda r: S((U(r, (2, 5, 3)), U(r, (2, 5, 1))), {"driver": "gels"}),
                  lambda r: S((U(r, (4, 3)), U(r, (4, 2))), desc="gelsy: no residuals")))
add("linalg_lstsq", "linalg_lstsq", fn=lambda m, a, b, **k: m.linalg.lstsq(a, b, **k).solution,
    samples=fixed(lambda r: S((U(r, (4, 3)), U(r, (4, 2)))), lambda r: S((U(r, (2, 4, 3)), U(r, (2, 4, 1)))),
                  lambda r: S((U(r, (4, 3)), U(r, (4,))), desc="vector")))
add("linalg_lstsq", "linalg_lstsq_gelsd", fn=lambda m, a, b, **k: m.linalg.lstsq(a, b, **k).solution,
    samples=fixed(lambda r: S((U(r, (4, 3)), U(r, (4, 2))), {"driver": "gelsd"}),
                  lambda r: S((U(r, (4, 3)), U(r, (4, 2))), {"driver": "gelss"}),
                  lambda r: S((U(r, (4, 3)), U(r, (4, 2))), {"driver": "gels"})))

# ----------------------------------------------------------------------------- eigh, svd, qr


def _eigh_fixed(m, a, **k):
    w, v = m.linalg.eigh(_sym(m, a), **k)
    return (w,) + _fix_cols(m, v)


add("linalg_eigh", "linalg_eigh", fn=_eigh_fixed,
    samples=fixed(lambda r: S((U(r, (2, 4, 4)),)), lambda r: S((U(r, (3, 3)),)),
                  lambda r: S((U(r, (3, 3)),), {"UPLO": "U"})))
add("linalg_eigh", "linalg_eigvalsh", fn=lambda m, a: m.linalg.eigvalsh(_sym(m, a)),
    samples=fixed(lambda r: S((U(r, (2, 4, 4)),)), lambda r: S((U(r, (3, 3)),))))



def _eig_fixed(m, a):
    """eig with each eigenvector's phase fixed (its first component real and positive): the
    eigenvectors are unique only up to that phase, and this function of them is differentiable."""
    w, v = m.linalg.eig(a)
    v0 = v[..., :1, :]
    return w, v * (v0.conj() / v0.abs())


add("linalg_eig", "linalg_eig", fn=_eig_fixed,
    samples=fixed(lambda r: S((U(r, (3, 3)),)), lambda r: S((U(r, (2, 4, 4)),)),
                  lambda r: S((_wc(r, (1, 1)),)),
                  lambda r: S((U(r, (0, 2, 2)),), grad=False)))
add("linalg_eig", "linalg_eigvals", fn=lambda m, a: m.linalg.eigvals(a),
    samples=fixed(lambda r: S((U(r, (3, 3)),)), lambda r: S((U(r, (2, 4, 4)),))))

def _svd_fixed(m, a, **k):
    u, s, vh = m.linalg.svd(a, **k)
    k_ = s.shape[-1]
    d = m.sign(u[..., :1, :k_])
    return u[..., :, :k_] * d, s, vh[..., :k_, :] * d.mT


add("linalg_svd", "linalg_svd", fn=_svd_fixed,
    samples=fixed(lambda r: S((U(r, (2, 2, 4)),), {"full_matrices": False}),
                  lambda r: S((U(r, (3, 3)),), {"full_matrices": False}),
                  lambda r: S((U(r, (4, 2)),), {"full_matrices": False}),
                  lambda r: S((U(r, (3, 3)),))))
add("linalg_svd", "linalg_svd_full", fn=_svd_fixed,
    samples=fixed(lambda r: S((U(r, (2, 4, 2)),), {"full_matrices": True}, grad=False)))
add("linalg_svd", "linalg_svdvals", fn=lambda m, a: m.linalg.svdvals(a),
    samples=fixed(lambda r: S((U(r, (3, 3)),)), lambda r: S((U(r, (2, 4, 2)),))))
add("linalg_svd", "linalg_torch_svd", fn=lambda m, a: _fix_cols(m, *m.svd(a)[::2]) + (m.svd(a)[1],),
    samples=fixed(lambda r: S((U(r, (2, 4, 3)),))))
add("linalg_svd", "linalg_matrix_norm_svd", fn=lambda m, a, **k: m.linalg.matrix_norm(a, **k),
    samples=fixed(lambda r: S((U(r, (3, 4)),), {"ord": "nuc"}), lambda r: S((U(r, (2, 3, 3)),), {"ord": 2}),
                  lambda r: S((U(r, (3, 2)),), {"ord": -2}),
                  lambda r: S((U(r, (2, 3, 4)),), {"ord": "nuc", "dim": (0, 2), "keepdim": True})))
add("linalg_svd", "linalg_cond", fn=lambda m, a, **k: m.linalg.cond(a, **k),
    samples=fixed(lambda r: S((_wc(r, (3, 3)),)), lambda r: S((U(r, (3, 2)),), {"p": -2})))
# (PyTorch's own cond(p='fro') fails in backward: its oracle is the same formula spelled out)
add("linalg_inv_ex", "linalg_cond_inv", fn=lambda m, a, **k: m.linalg.cond(a, **k),
    torch_fn=lambda m, a, p: m.linalg.matrix_norm(a, p) * m.linalg.matrix_norm(m.linalg.inv(a), p),
    samples=fixed(lambda r: S((_wc(r, (3, 3)),), {"p": "fro"}), lambda r: S((_wc(r, (2, 3, 3)),), {"p": 1})))
add("linalg_qr", "linalg_qr", fn=lambda m, a, **k: m.linalg.qr(a, **k),
    samples=fixed(lambda r: S((U(r, (3, 3)),)), lambda r: S((U(r, (4, 2)),)), lambda r: S((U(r, (2, 2, 4)),)),
                  lambda r: S((U(r, (2, 3)),), {"mode": "complete"}),
                  lambda r: S((U(r, (4, 2)),), {"mode": "complete"}, grad=False),
                  lambda r: S((U(r, (4, 3)),), {"mode": "r"}, grad=False)))
add("linalg_qr", "linalg_torch_qr", fn=lambda m, a: m.qr(a), samples=fixed(lambda r: S((U(r, (4, 3)),))))
add("geqrf", "linalg_geqrf", fn=lambda m, a: m.geqrf(a), grad=False,
    samples=fixed(lambda r: S((U(r, (4, 3)),)), lambda r: S((U(r, (2, 2, 3)),))))
add("linalg_ldl_factor_ex", "linalg_ldl_factor", fn=lambda m, a: m.linalg.ldl_factor(_sym(m, a)), grad=False,
    samples=fixed(lambda r: S((U(r, (2, 4, 4)),)), lambda r: S((U(r, (3, 3)),))))


def _ldl_solve(m, a, b):
    a = _sym(m, a)
    ld, piv = m.linalg.ldl_factor(a)
    return m.linalg.ldl_solve(ld, piv, b)


add("linalg_ldl_solve", "linalg_ldl_solve", fn=_ldl_solve, grad=False,
    samples=fixed(lambda r: S((_wc(r, (2, 3, 3)), U(r, (2, 3, 1)))), lambda r: S((_wc(r, (3, 3)), U(r, (3, 2))))))

# ----------------------------------------------------------------------------- composites of registry ops

add("matmul", "linalg_householder_product", fn=lambda m, a, t: m.linalg.householder_product(a, t),
    samples=fixed(lambda r: S((U(r, (4, 3)), U(r, (2,)))), lambda r: S((U(r, (2, 3, 3)), U(r, (2, 3))))))
add("matmul", "ormqr", fn=lambda m, a, t, c, **k: m.ormqr(a, t, c, **k),
    samples=fixed(lambda r: S((U(r, (3, 2)), U(r, (2,)), U(r, (3, 2)))),
                  lambda r: S((U(r, (3, 2)), U(r, (2,)), U(r, (2, 3))), {"left": False, "transpose": True})))
add("matmul", "linalg_matrix_power", fn=lambda m, a, **k: m.linalg.matrix_power(a, **k),
    samples=fixed(lambda r: S((U(r, (3, 3)),), {"n": 3}), lambda r: S((U(r, (2, 2, 2)),), {"n": 6}),
                  lambda r: S((U(r, (2, 3, 3)),), {"n": 1})))
add("where", "linalg_matrix_power_0", fn=lambda m, a: m.linalg.matrix_power(a, 0),
    samples=fixed(lambda r: S((U(r, (2, 3, 3)),))))
add("linalg_inv_ex", "linalg_matrix_power_neg", fn=lambda m, a, **k: m.linalg.matrix_power(a, **k),
    samples=fixed(lambda r: S((_wc(r, (3, 3)),), {"n": -2})))
add("matmul", "linalg_multi_dot", fn=lambda m, *ts: m.linalg.multi_dot(list(ts)),
    samples=fixed(lambda r: S((U(r, (3,)), U(r, (3, 4)), U(r, (4, 2)), U(r, (2,)))),
                  lambda r: S((U(r, (2, 5)), U(r, (5, 3)), U(r, (3, 4))))))
add("mul", "linalg_vecdot", fn=lambda m, x, y, **k: m.linalg.vecdot(x, y, **k),
    samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (3,)))), lambda r: S((U(r, (3, 2)), U(r, (3, 2))), {"dim": 0})))
add("mul", "linalg_cross", fn=lambda m, x, y, **k: m.linalg.cross(x, y, **k),
    samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (1, 3)))), lambda r: S((U(r, (3, 2)), U(r, (3, 2))), {"dim": 0})))
add("cumprod", "linalg_vander", fn=lambda m, x, **k: m.linalg.vander(x, **k),
    samples=fixed(lambda r: S((U(r, (3,)),)), lambda r: S((U(r, (2, 3)),), {"N": 4})))

op_db.NON_DIFFERENTIABLE.extend(["geqrf", "linalg_ldl_factor_ex", "linalg_ldl_solve", "lu_pivots_to_permutation"])
