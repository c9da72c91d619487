"""torch.linalg primitives built on LU and Cholesky factorizations: inv, solve, solve_triangular, det,
slogdet, cholesky, lu_factor (and the pivots' permutation), matrix_exp, pinv and lstsq.

Every impl calls NumPy's or SciPy's LAPACK routines; every rule is written in ember ops (so it is
differentiable again, and batchable). Matrices sit in the last two dims, any leading dims are a
batch; the two-operand ops broadcast their batch dims, so the elementwise batching rule (pad the
batched operands, let the others broadcast) serves every op here. Rules use conjugate transposes
(``.mH``) where the complex formula needs them, so that they stay right once complex dtypes exist.
"""
import numpy as np

from .._dispatch import defop, dispatch
from . import _util as U
from ._batching import elementwise_rule

FAM = "linalg_decomp"


class _Lazy:
    """scipy.linalg (and its lapack module), imported on first use: ember's import stays free of it."""
    def __init__(self, sub=None):
        self._sub = sub

    def __getattr__(self, name):
        import scipy.linalg
        from .. import _blas
        _blas.sync_scipy()  # SciPy's own OpenBLAS follows ember.set_num_threads
        mod = scipy.linalg if self._sub is None else getattr(scipy.linalg, self._sub)
        return getattr(mod, name)


_sla = _Lazy()
_lapack = _Lazy("lapack")


class LinAlgError(RuntimeError):
    """A linear-algebra routine met a singular or non-positive-definite input (torch.linalg.LinAlgError)."""


def err(cls, msg=None):
    """An error whose message is PyTorch's own (dispatch does not prefix it with the registry name)."""
    if msg is None:
        cls, msg = RuntimeError, cls
    e = cls(msg)
    e._ember_op = "linalg"
    return e


LinAlgError.__qualname__ = LinAlgError.__name__ = "_LinAlgError"
LinAlgError.__module__ = "ember._C"

def torch_dtype_name(npdt):
    """PyTorch's C++ name of a dtype with ember's in parentheses: 'Long (int64)'."""
    d = U.dt.FROM_NP.get(npdt)
    name = d.name if d is not None else str(npdt)
    return f"{U._TORCH_SCALAR[name]} ({name})" if name in U._TORCH_SCALAR else name


# PyTorch's CPU build has no float16/bfloat16 LAPACK kernels: its NotImplementedError names the kernel
_LOWP_KERNEL = {"linalg.cholesky": "cholesky_cpu", "linalg.solve_triangular": "triangular_solve_cpu",
                "geqrf": "geqrf_cpu", "linalg.qr": "geqrf_cpu", "linalg.lu_factor": "lu_cpu", "linalg.solve": "lu_cpu",
                "linalg.det": "lu_cpu", "linalg.svd": "linalg_svd_cpu", "linalg.eigh": "linalg_eigh_cpu",
                "torch.linalg.ldl_factor_ex": "ldl_factor_kernel_cpu", "torch.linalg.ldl_solve": "ldl_solve_kernel_cpu"}


def check_float(name, a):
    if a.dtype.kind not in "fc" or a.dtype.itemsize < 4:
        if name in _LOWP_KERNEL:
            U.no_lowp(_LOWP_KERNEL[name], a)
        if a.dtype.kind == "f" or (a.dtype.kind == "V" and a.dtype.itemsize == 2):
            raise err(f"{name}: Low precision dtypes not supported. Got {torch_dtype_name(a.dtype)}")
        raise err(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {torch_dtype_name(a.dtype)}")


def check_matrix(name, a, square=True, what="A"):
    if a.ndim < 2:
        raise err(f"{name}: The input tensor {what} must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise err(f"{name}: {what} must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    check_float(name, a)


def _batch_prefix(shape, flat_index):
    """PyTorch's '(Batch element i): ' for a batched input."""
    return f"(Batch element {flat_index}): " if len(shape) > 2 else ""


def _flat(a):
    return a.reshape((-1,) + a.shape[-2:])


def getrf_infos(a):
    """LAPACK getrf's info of each matrix of a batch (0: nonsingular, i: U[i-1, i-1] is zero)."""
    f = _lapack.get_lapack_funcs("getrf", (a,))
    return np.array([f(m)[2] for m in _flat(a)] if a.size else np.zeros(int(np.prod(a.shape[:-2])), int),
                    dtype=np.int32).reshape(a.shape[:-2])


def potrf_infos(a, upper):
    f = _lapack.get_lapack_funcs("potrf", (a,))
    return np.array([f(m, lower=not upper)[1] for m in _flat(a)], dtype=np.int32).reshape(a.shape[:-2])


def _first_bad(infos):
    flat = infos.reshape(-1)
    i = int(np.flatnonzero(flat > 0)[0])
    return i, int(flat[i])


def _conj(x):
    return x.conj() if x.dtype.is_complex else x


def _eye(n, like):
    from .._creation import eye
    return eye(n, dtype=like.dtype)


def _tril(x, k=0):
    from .shape import tril
    return tril(x, k)


def _triu(x, k=0):
    from .shape import triu
    return triu(x, k)


def _mm(a, b):
    from .linalg import matmul
    return matmul(a, b)


def _diag(x):
    return x.diagonal(0, -2, -1)


def _diag_embed(v):
    from .linalg import diag_embed
    return diag_embed(v)


def _where(c, a, b):
    from .elementwise import where
    return where(c, a, b)


def _zero_grad(g):
    """True when ``g`` is known to be all zeros (an output that received no gradient)."""
    v = concrete(g)
    return v is not None and not v.any()


def concrete(t):
    """The values of a plain (not vmap-wrapped) tensor, or None."""
    return t._data if t._wr is None else None


def _bt(x):
    """A batch's transpose of the last two dims, for arrays."""
    return np.swapaxes(x, -1, -2)


# ----------------------------------------------------------------------------- inv


def _inv_impl(xp, a, check_errors=False):
    check_matrix("linalg.inv", a)
    if big(a) and a.size:
        lu, piv, info = lu_each(a)
        if check_errors and (info > 0).any():
            i, k = _first_bad(info)
            raise err(LinAlgError, f"linalg.inv: {_batch_prefix(a.shape, i)}The diagonal element {k} is zero, the "
                      f"inversion could not be completed because the input matrix is singular.")
        f = _lapack.get_lapack_funcs("getri", (a,))
        out = np.full(a.shape, np.nan, a.dtype)
        fo, fl, fp, fi = out.reshape((-1,) + a.shape[-2:]), _flat(lu), piv.reshape(-1, a.shape[-1]), info.reshape(-1)
        for i in range(fo.shape[0]):
            if fi[i] == 0:
                fo[i] = f(fl[i], fp[i])[0]
        return out, info
    try:
        inv = np.linalg.inv(a)
        info = np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        info = getrf_infos(a)
        if check_errors:
            i, k = _first_bad(info)
            raise err(LinAlgError, f"linalg.inv: {_batch_prefix(a.shape, i)}The diagonal element {k} is zero, the "
                              f"inversion could not be completed because the input matrix is singular.") from None
        inv = np.full(a.shape, np.nan, a.dtype)
        ok = info == 0
        if ok.any():
            inv[ok] = np.linalg.inv(a[ok])
    return inv, info


inv_op = defop("linalg_inv_ex", _inv_impl, nout=2, diff_outputs=(0,), save=("out",), family=FAM,
               node_name="LinalgInvExBackward0")


def inv(a):
    return dispatch(inv_op, (a,), {"check_errors": False})[0]


@inv_op.def_vjp
def _(ctx, g, gi):
    x = ctx.outs[0].mH
    return -_mm(_mm(x, g), x)


@inv_op.def_jvp
def _(ctx, t):
    x = ctx.outs[0]
    return -_mm(_mm(x, t), x), None


inv_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- solve


def _solve_impl(xp, a, b, check_errors=False):
    check_matrix("linalg.solve", a)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise err(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({a.shape[-2]}x{a.shape[-1]} and {'x'.join(map(str, b.shape[-2:]))})")
    if b.dtype != a.dtype:
        raise err(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{torch_dtype_name(a.dtype)} and B of type {torch_dtype_name(b.dtype)} instead")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if big(a) and a.size and b.size:
        lu, piv, info = lu_each(a)
        info = np.broadcast_to(info, batch).copy()
        if check_errors and (info > 0).any():
            raise err(LinAlgError, "torch.linalg.solve: The solver failed because the input matrix is singular.")
        n, k = b.shape[-2:]
        f = _lapack.get_lapack_funcs("getrs", (a,))
        lub = np.broadcast_to(lu, batch + a.shape[-2:]).reshape(-1, n, n)
        pb = np.broadcast_to(piv, batch + (n,)).reshape(-1, n)
        bb = np.broadcast_to(b, batch + (n, k)).reshape(-1, n, k)
        x = np.full(batch + (n, k), np.nan, a.dtype)
        fx, fi = x.reshape(-1, n, k), info.reshape(-1)
        for i in range(fx.shape[0]):
            if fi[i] == 0:
                fx[i] = f(lub[i], pb[i], bb[i])[0]
        return x, info
    try:
        x = np.linalg.solve(a, b)
        info = np.zeros(batch, np.int32)
    except np.linalg.LinAlgError:
        info = np.broadcast_to(getrf_infos(a), batch).copy()
        if check_errors:
            raise err(LinAlgError, "torch.linalg.solve: The solver failed because the input matrix is singular.") from None
        ab = np.broadcast_to(a, batch + a.shape[-2:])
        bb = np.broadcast_to(b, batch + b.shape[-2:])
        x = np.full(batch + b.shape[-2:], np.nan, a.dtype)
        ok = info == 0
        if ok.any():
            x[ok] = np.linalg.solve(ab[ok], bb[ok])
    return x, info


solve_op = defop("linalg_solve_ex", _solve_impl, nout=2, diff_outputs=(0,), save=("inputs", "out"), bcast=True,
                 family=FAM, node_name="LinalgSolveExBackward0")


def solve(a, b):
    """A^{-1} B for matrices B (no error on singular A: the rules use it)."""
    return dispatch(solve_op, (a, b), {"check_errors": False})[0]


@solve_op.def_vjp
def _(ctx, g, gi):
    a, b = ctx.inputs
    x = ctx.outs[0]
    gb = solve(a.mH, g)
    ga = -_mm(gb, x.mH) if ctx.needs[0] else None
    return ga, (gb if ctx.needs[1] else None)


@solve_op.def_jvp
def _(ctx, ta, tb):
    a, b = ctx.inputs
    x = ctx.outs[0]
    r = tb
    if ta is not None:
        s = -_mm(ta, x)
        r = s if r is None else r + s
    return solve(a, r), None


solve_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- solve_triangular


def _solve_tri_impl(xp, a, b, upper, unitriangular=False):
    check_matrix("linalg.solve_triangular", a)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise err(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({a.shape[-2]}x{a.shape[-1]} and {'x'.join(map(str, b.shape[-2:]))})")
    if b.dtype != a.dtype:
        raise err(f"linalg.solve_triangular: Expected A and B to have the same dtype, but found A of "
                           f"type {torch_dtype_name(a.dtype)} and B of type {torch_dtype_name(b.dtype)} instead")
    if a.size == 0 or b.size == 0:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return np.zeros(batch + b.shape[-2:], a.dtype)
    if a.ndim == 2 and b.ndim == 2:
        return _trsm(a, b, upper, unitriangular)
    if big(a):
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        ab = np.broadcast_to(a, batch + a.shape[-2:]).reshape((-1,) + a.shape[-2:])
        bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
        out = np.empty(batch + b.shape[-2:], a.dtype)
        fo = out.reshape((-1,) + b.shape[-2:])
        for i in range(fo.shape[0]):
            fo[i] = _trsm(ab[i], bb[i], upper, unitriangular)
        return out
    try:
        return _sla.solve_triangular(a, b, lower=not upper, unit_diagonal=unitriangular, check_finite=False)
    except np.linalg.LinAlgError:  # a zero on the diagonal: BLAS's trsm gives the infs and nans PyTorch gives
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        ab = np.broadcast_to(a, batch + a.shape[-2:]).reshape((-1,) + a.shape[-2:])
        bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
        f = _sla.get_blas_funcs("trsm", (a, b))
        with np.errstate(all="ignore"):
            x = [f(1.0, m, r, lower=not upper, diag=int(unitriangular)) for m, r in zip(ab, bb)]
        return np.asarray(x, a.dtype).reshape(batch + b.shape[-2:])


def _trsm(a, b, upper, unit):
    """A^{-1} B for one triangular A (BLAS trsm, no copy of A, one of B). trsm wants column-major
    operands: a row-major B is the column-major B^T, so the solve runs as X^T A^T = B^T from the
    right, A^T being A's own memory read as column-major (transposed once more by trans_a when A
    is column-major itself); X^T comes back column-major, that is X row-major. (OpenBLAS's
    right-side trsm is also several times faster than its left-side one at these sizes.) A zero on
    the diagonal gives the infs and nans PyTorch gives, no error."""
    f = _sla.get_blas_funcs("trsm", (a, b))
    if not b.flags.c_contiguous:
        b = np.ascontiguousarray(b)
    if a.flags.f_contiguous and not a.flags.c_contiguous:
        m, lower, trans = a, not upper, 1       # op(A) = A^T
    else:
        m, lower, trans = np.ascontiguousarray(a).T, upper, 0  # A^T's memory, read as is
    with np.errstate(all="ignore"):
        y = f(1.0, m, b.T, side=1, lower=lower, trans_a=trans, diag=int(unit))
    return y.T


solve_tri_op = defop("linalg_solve_triangular", _solve_tri_impl, save=("inputs", "out"), bcast=True, family=FAM)


def solve_tri(a, b, upper, unitriangular=False):
    p = {"upper": upper}
    if unitriangular:
        p["unitriangular"] = True
    return dispatch(solve_tri_op, (a, b), p)


def rsolve_tri(b, a, upper, unitriangular=False):
    """B A^{-1} for a triangular A (the left=False solve): (A^{-H} B^H)^H."""
    return solve_tri(a.mH, b.mH, not upper, unitriangular).mH


def _tri_part(x, upper, unit):
    if upper:
        return _triu(x, 1 if unit else 0)
    return _tril(x, -1 if unit else 0)


@solve_tri_op.def_vjp
def _(ctx, g):
    a, b = ctx.inputs
    p = ctx.params
    upper, unit = p["upper"], p.get("unitriangular", False)
    gb = solve_tri(a.mH, g, not upper, unit)
    ga = _tri_part(-_mm(gb, ctx.out.mH), upper, unit) if ctx.needs[0] else None
    return ga, (gb if ctx.needs[1] else None)


@solve_tri_op.def_jvp
def _(ctx, ta, tb):
    a, b = ctx.inputs
    p = ctx.params
    upper, unit = p["upper"], p.get("unitriangular", False)
    r = tb
    if ta is not None:
        s = -_mm(_tri_part(ta, upper, unit), ctx.out)
        r = s if r is None else r + s
    return solve_tri(a, r, upper, unit)


solve_tri_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- det, slogdet


def _det_impl(xp, a):
    check_matrix("linalg.det", a)
    if big(a) and a.size:
        sign, logabs = _lu_sign_logabs(*lu_each(a)[:2])
        return np.asarray(sign * np.exp(logabs), a.dtype)
    return np.asarray(np.linalg.det(a), a.dtype)


det_op = defop("linalg_det", _det_impl, save=("inputs", "out"), family=FAM)


def det_grad(a, d):
    """d det(A) / dA (the cofactor matrix, conjugated for the complex gradient), batched: det * A^{-H}
    where A is invertible, and through the SVD where it is singular (adj(A) = det(U) det(Vh) V diag(prod of
    the other singular values) U^H), so that det keeps its gradient at singular matrices."""
    from .linalg_spectral import svd
    from .._creation import from_numpy
    av = concrete(a)
    n = a.shape[-1]
    dd = _conj(d).unsqueeze(-1).unsqueeze(-1)
    mask = near_singular(av) if av is not None else None
    if mask is not None and not mask.any():
        return dd * inv(a).mH
    sing = (from_numpy(mask) if mask is not None else d == 0).unsqueeze(-1).unsqueeze(-1)
    if mask is not None and mask.all():
        regular = None
    else:
        safe = _where(sing, _eye(n, a), a)
        regular = dd * inv(safe).mH
    u, s, vh = svd(a, False)
    sign = _conj(dispatch(det_op, (u.detach(),)) * dispatch(det_op, (vh.detach(),)))
    from .reduce import prod
    others = prod(_where(_eye(n, a) != 0, 1.0, s.unsqueeze(-2).expand(tuple(s.shape[:-1]) + (n, n))), -1)
    adj_h = sign.unsqueeze(-1).unsqueeze(-1) * _mm(u * others.unsqueeze(-2), vh)
    if regular is None:
        return adj_h
    return _where(sing, adj_h, regular)


def near_singular(a):
    """Per matrix of a batch: True where an LU pivot is within n * eps of the largest (numerically
    singular: det's gradient then goes through the SVD, which stays accurate there)."""
    if a.size == 0:
        return np.zeros(a.shape[:-2], bool)
    f = _lapack.get_lapack_funcs("getrf", (a,))
    n = a.shape[-1]
    eps = np.finfo(a.dtype).eps * n
    out = []
    for m in _flat(a):
        d = np.abs(np.diagonal(f(m)[0]))
        top = d.max()
        out.append(bool(top == 0 or d.min() <= eps * top))
    return np.array(out, bool).reshape(a.shape[:-2])


@det_op.def_vjp
def _(ctx, g):
    a = ctx.inputs[0]
    return g.unsqueeze(-1).unsqueeze(-1) * det_grad(a, ctx.out)


@det_op.def_jvp
def _(ctx, t):
    a = ctx.inputs[0]
    return (_conj(det_grad(a, ctx.out)) * t).sum((-2, -1))


det_op.batch = elementwise_rule


def _slogdet_impl(xp, a):
    check_matrix("linalg.slogdet", a)
    if big(a) and a.size:
        s, l = _lu_sign_logabs(*lu_each(a)[:2])
    else:
        s, l = np.linalg.slogdet(a)
    return np.asarray(s, a.dtype), np.asarray(l, a.real.dtype if a.dtype.kind == "c" else a.dtype)


# (the sign is an output of the node, as in PyTorch, with a zero gradient for real input)
slogdet_op = defop("linalg_slogdet", _slogdet_impl, nout=2, save=("inputs", "out"), family=FAM)


def _slogdet_c(gs, gl, sign):
    """The gradient's scalar factor: with tau = tr(A^{-1} dA), d logabsdet = Re(tau) and
    d sign = sign * i Im(tau), so a real loss changes by Re(conj(c) tau), c = gl + i Im(gs conj(sign))
    (gl alone for real input, whose sign has a zero derivative)."""
    if not sign.dtype.is_complex or _zero_grad(gs):
        return gl
    return gl + (gs * sign.conj()).imag * 1j


@slogdet_op.def_vjp
def _(ctx, gs, gl):
    a = ctx.inputs[0]
    c = _slogdet_c(gs, gl, ctx.outs[0])
    return c.unsqueeze(-1).unsqueeze(-1) * inv(a).mH


@slogdet_op.def_jvp
def _(ctx, t):
    a = ctx.inputs[0]
    tau = (inv(a).mT * t).sum((-2, -1))
    if not tau.dtype.is_complex:
        return None, tau
    return ctx.outs[0] * (tau.imag * 1j), tau.real


slogdet_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- cholesky


# from this order on, matrices go to SciPy's LAPACK one by one (its blocked routines run several times
# faster than NumPy's on large matrices); NumPy's batched gufuncs win on many small ones
BIG = 64


def big(a):
    return a.shape[-1] >= BIG or a.shape[-2] >= BIG


def lu_each(a):
    """getrf of each matrix of a batch: (LU, 0-based pivots, info) arrays."""
    f = _lapack.get_lapack_funcs("getrf", (a,))
    m, n = a.shape[-2:]
    lu = np.empty(a.shape, a.dtype)
    piv = np.empty(a.shape[:-2] + (min(m, n),), np.int32)
    info = np.zeros(a.shape[:-2], np.int32)
    fl, fp, fi = lu.reshape((-1, m, n)), piv.reshape((-1, min(m, n))), info.reshape(-1)
    for i, mat in enumerate(_flat(a)):
        fl[i], fp[i], fi[i] = f(mat)
    return lu, piv, info


def _lu_sign_logabs(lu, piv):
    d = np.diagonal(lu, 0, -2, -1)
    swaps = (piv != np.arange(piv.shape[-1])).sum(-1)
    sign = np.where(swaps % 2, -1.0, 1.0) * np.prod(np.sign(d), -1)
    with np.errstate(divide="ignore"):
        logabs = np.log(np.abs(d)).sum(-1)
    return sign, logabs


def _chol_big(a, upper):
    """potrf matrix by matrix. LAPACK wants column-major input: a row-major matrix is its own
    transpose in column-major, so potrf factors A^T with the other triangle (U^H U = A^T gives
    A = L L^H with L = U^T, the same for complex Hermitian input) and the factor's transpose is
    row-major again: no transposing copies."""
    f = _lapack.get_lapack_funcs("potrf", (a,))
    info = np.zeros(a.shape[:-2], np.int32)
    if a.ndim == 2:
        c, inf = f(np.ascontiguousarray(a).T, lower=upper, clean=1)
        info[()] = inf
        return c.T, info
    out = np.empty(a.shape, a.dtype)
    fo, fi = out.reshape((-1,) + a.shape[-2:]), info.reshape(-1)
    for i, m in enumerate(_flat(a)):
        c, inf = f(np.ascontiguousarray(m).T, lower=upper, clean=1)
        fo[i], fi[i] = c.T, inf
    return out, info


def _chol_impl(xp, a, upper=False, check_errors=False):
    check_matrix("linalg.cholesky", a)
    info = np.zeros(a.shape[:-2], np.int32)
    if big(a) and a.size:
        out, info = _chol_big(a, upper)
        if (info > 0).any():
            if check_errors:
                i, k = _first_bad(info)
                raise err(LinAlgError, f"linalg.cholesky: {_batch_prefix(a.shape, i)}The factorization could not be "
                          f"completed because the input is not positive-definite (the leading minor of order {k} "
                          f"is not positive-definite).")
            out[info > 0] = np.nan
        return out, info
    try:
        out = np.linalg.cholesky(a, upper=upper)
    except np.linalg.LinAlgError:
        info = potrf_infos(a, upper)
        if check_errors:
            i, k = _first_bad(info)
            raise err(LinAlgError, f"linalg.cholesky: {_batch_prefix(a.shape, i)}The factorization could not be "
                              f"completed because the input is not positive-definite (the leading minor of "
                              f"order {k} is not positive-definite).") from None
        out = np.full(a.shape, np.nan, a.dtype)
        ok = info == 0
        if ok.any():
            out[ok] = np.linalg.cholesky(a[ok], upper=upper)
    return out, info


chol_op = defop("linalg_cholesky_ex", _chol_impl, nout=2, diff_outputs=(0,), save=("out",), family=FAM,
                node_name="LinalgCholeskyExBackward0")


def _phi_t(p):
    """The lower triangle with a halved diagonal."""
    return _tril(p, -1) + _diag_embed(_diag(p) * 0.5)


@chol_op.def_vjp
def _(ctx, g, gi):
    upper = ctx.params.get("upper", False)
    l = ctx.outs[0]
    if upper:
        l, g = l.mH, g.mH
    # A = L L^H: gA = L^{-H} sym(Phi(L^H gL)) L^{-1}, symmetric as the input is
    p = _mm(l.mH, g)
    s = _tril(p)
    s = (s + _tril(p, -1).mH) * 0.5
    x = solve_tri(l.mH, s, True)
    return rsolve_tri(x, l, False)


@chol_op.def_jvp
def _(ctx, t):
    upper = ctx.params.get("upper", False)
    l = ctx.outs[0]
    if upper:
        l = l.mH
    # dL = L Phi(L^{-1} dA L^{-H})
    m = rsolve_tri(solve_tri(l, t, False), l.mH, True)
    dl = _mm(l, _phi_t(m))
    return (dl.mH if upper else dl), None


chol_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- LU


def _lu_impl(xp, a, pivot=True, check_errors=False):
    if a.ndim < 2:
        raise err("linalg.lu_factor: The input tensor A must have at least 2 dimensions.")
    check_float("linalg.lu_factor", a)
    if not pivot:
        raise err("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    lu = np.empty(a.shape, a.dtype)
    piv = np.empty(batch + (k,), np.int32)
    info = np.zeros(batch, np.int32)
    if a.size:
        f = _lapack.get_lapack_funcs("getrf", (a,))
        fl, fp, fi = lu.reshape((-1, m, n)), piv.reshape(-1, k), info.reshape(-1)
        for i, mat in enumerate(a.reshape((-1, m, n))):
            r, p, inf = f(mat)
            fl[i], fp[i], fi[i] = r, p + 1, inf
    else:
        piv[...] = np.arange(1, k + 1, dtype=np.int32)
    if check_errors and (info > 0).any():
        i, j = _first_bad(info)
        raise err(f"torch.linalg.lu_factor: {_batch_prefix(a.shape, i)}U[{j},{j}] is zero and using it on "
                           f"lu_solve would result in a division by zero. If you still want to perform the "
                           f"factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return lu, piv, info


lu_op = defop("linalg_lu_factor_ex", _lu_impl, nout=3, diff_outputs=(0,), save=("out",), family=FAM,
              node_name="LinalgLuFactorExBackward0")


def _perm_impl(xp, piv, m, dtype):
    """P (m x m, of ``dtype``) with A = P L U, from LAPACK's 1-based row interchanges."""
    batch = piv.shape[:-1]
    k = piv.shape[-1]
    nb = int(np.prod(batch))
    perm = np.broadcast_to(np.arange(m), batch + (m,)).copy()
    fp, fr = perm.reshape(nb, m), piv.reshape(nb, k).astype(np.int64) - 1
    if fr.size and (fr.min() < 0 or fr.max() >= m):
        raise err(f"lu_unpack: pivots must be in [1, {m}], got values in [{fr.min() + 1}, {fr.max() + 1}]")
    rows = np.arange(fp.shape[0])
    for i in range(k):
        j = fr[:, i]
        a_, b_ = fp[rows, i].copy(), fp[rows, j].copy()
        fp[rows, i], fp[rows, j] = b_, a_
    pt = np.zeros(batch + (m, m), dtype)  # P^T: row i of P^T A is row perm[i] of A
    np.put_along_axis(pt, perm[..., :, None], 1, axis=-1)
    return _bt(pt)


perm_op = defop("lu_pivots_to_permutation", _perm_impl, differentiable=False, family=FAM)
perm_op.batch = elementwise_rule


def lu_unpack_parts(lu, piv, need_p=True):
    """(P, L, U) of a packed LU, in ember ops (L and U differentiable)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    l = _tril(lu[..., :, :k], -1) + _eye(m, lu)[:, :k]
    u = _triu(lu[..., :k, :])
    p = dispatch(perm_op, (piv,), {"m": m, "dtype": lu.dtype.np}) if need_p else None
    return p, l, u


def _lu_sq_vjp(l, u, gl, gu):
    """gA of A = L U (square, no pivoting) from gL and gU."""
    gm = _tril(_mm(l.mH, gl), -1) + _triu(_mm(gu, u.mH))
    x = solve_tri(l.mH, gm, True, True)
    return rsolve_tri(x, u.mH, False)


@lu_op.def_vjp
def _(ctx, glu, gp, gi):
    lu, piv = ctx.outs[0], ctx.outs[1]
    m, n = lu.shape[-2:]
    k = min(m, n)
    p, l, u = lu_unpack_parts(lu, piv)
    gl = _tril(glu[..., :, :k], -1)
    gu = _triu(glu[..., :k, :])
    if m == n:
        return _mm(p, _lu_sq_vjp(l, u, gl, gu))
    from .shape import cat
    if m < n:
        u1, u2 = u[..., :, :m], u[..., :, m:]
        gu1, gu2 = gu[..., :, :m], gu[..., :, m:]
        gl = gl - _tril(solve_tri(l.mH, _mm(gu2, u2.mH), True, True), -1)
        ga1 = _lu_sq_vjp(l, u1, gl, gu1)
        ga2 = solve_tri(l.mH, gu2, True, True)
        return _mm(p, cat([ga1, ga2], -1))
    l1, l2 = l[..., :n, :], l[..., n:, :]
    gl1, gl2 = gl[..., :n, :], gl[..., n:, :]
    gu = gu - _triu(rsolve_tri(_mm(l2.mH, gl2), u.mH, False))
    gb1 = _lu_sq_vjp(l1, u, gl1, gu)
    gb2 = rsolve_tri(gl2, u.mH, False)
    return _mm(p, cat([gb1, gb2], -2))


@lu_op.def_jvp
def _(ctx, t):
    lu, piv = ctx.outs[0], ctx.outs[1]
    m, n = lu.shape[-2:]
    p, l, u = lu_unpack_parts(lu, piv)
    pt = _mm(p.mT, t)
    from .shape import cat
    if m == n:
        mm = rsolve_tri(solve_tri(l, pt, False, True), u, True)
        return _mm(l, _tril(mm, -1)) + _mm(_triu(mm), u), None, None
    if m < n:
        u1, u2 = u[..., :, :m], u[..., :, m:]
        mm = rsolve_tri(solve_tri(l, pt[..., :, :m], False, True), u1, True)
        dl = _mm(l, _tril(mm, -1))
        du1 = _mm(_triu(mm), u1)
        du2 = solve_tri(l, pt[..., :, m:] - _mm(dl, u2), False, True)
        return cat([dl + du1, du2], -1), None, None
    l1, l2 = l[..., :n, :], l[..., n:, :]
    mm = rsolve_tri(solve_tri(l1, pt[..., :n, :], False, True), u, True)
    dl1 = _mm(l1, _tril(mm, -1))
    du = _mm(_triu(mm), u)
    dl2 = rsolve_tri(pt[..., n:, :] - _mm(l2, du), u, True)
    return cat([dl1 + du, dl2], -2), None, None


lu_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- matrix_exp


def _expm_impl(xp, a):
    check_matrix("linalg.matrix_exp", a)
    if a.size == 0:
        return a.copy()
    # single precision computes in double and rounds once: the scaling-and-squaring steps amplify
    # float32 rounding (an element 1e-3 of the matrix's norm can lose three digits, PyTorch's own
    # float32 result included); double keeps every element right to float32's precision
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    return np.asarray(_sla.expm(a.astype(wide, copy=False)), a.dtype)


expm_op = defop("linalg_matrix_exp", _expm_impl, save=("inputs",), family=FAM, node_name="LinalgMatrixExpBackward0")


def _expm_block(a, e):
    """The upper-right block of exp([[A, E], [0, A]]): the Frechet derivative of exp at A along E."""
    from .shape import cat
    n = a.shape[-1]
    z = a * 0
    big = cat([cat([a, e], -1), cat([z, a], -1)], -2)
    return dispatch(expm_op, (big,))[..., :n, n:]


@expm_op.def_vjp
def _(ctx, g):
    a = ctx.inputs[0]
    return _expm_block(a.mH, g)


@expm_op.def_jvp
def _(ctx, t):
    return _expm_block(ctx.inputs[0], t)


expm_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- pinv


def _tol(s, m, n, atol, rtol, dtype):
    """max(atol, rtol * s_max) per matrix (atol/rtol: floats, or arrays over the batch)."""
    default = np.finfo(dtype).eps * max(m, n)
    if rtol is None:  # (0 where a positive atol is given, per matrix)
        rtol = default if atol is None else np.where(np.asarray(atol) > 0, 0.0, default)
    atol = 0.0 if atol is None else atol
    atol = np.asarray(atol, s.dtype)[..., None]
    rtol = np.asarray(rtol, s.dtype)[..., None]
    smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    return np.maximum(atol, rtol * smax)


def _pinv_impl(xp, a, atol=None, rtol=None, hermitian=False):
    if a.ndim < 2:
        raise err("linalg.pinv: The input tensor A must have at least 2 dimensions.")
    check_float("linalg.pinv", a)
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    if hermitian:
        w, v = np.linalg.eigh(a)
        aw = np.abs(w)
        order = np.argsort(-aw, -1)
        tol = _tol(np.take_along_axis(aw, order, -1), m, n, atol, rtol, a.dtype)
        with np.errstate(divide="ignore"):
            winv = np.where(aw > tol, 1.0 / np.where(aw > tol, w, 1), 0).astype(a.dtype)
        return np.matmul(v * winv[..., None, :], _bt(v).conj())
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    tol = _tol(s, m, n, atol, rtol, a.dtype)
    with np.errstate(divide="ignore"):
        sinv = np.where(s > tol, 1.0 / np.where(s > tol, s, 1), 0).astype(a.dtype)
    return np.matmul(_bt(vh).conj() * sinv[..., None, :], _bt(u).conj())


pinv_op = defop("linalg_pinv", _pinv_impl, save=("inputs", "out"), family=FAM)


def pinv_vjp(a, x, g):
    """gA of X = pinv(A) (A of full rank), from gX."""
    m, n = a.shape[-2:]
    ga = -_mm(_mm(x.mH, g), x.mH)
    ax = _mm(a, x)
    xa = _mm(x, a)
    ga = ga + _mm(_mm(_eye(m, a) - ax, g.mH), _mm(x, x.mH))
    ga = ga + _mm(_mm(x.mH, x), _mm(g.mH, _eye(n, a) - xa))
    return ga


def pinv_jvp(a, x, t):
    m, n = a.shape[-2:]
    dx = -_mm(_mm(x, t), x)
    dx = dx + _mm(_mm(x, x.mH), _mm(t.mH, _eye(m, a) - _mm(a, x)))
    dx = dx + _mm(_eye(n, a) - _mm(x, a), _mm(t.mH, _mm(x.mH, x)))
    return dx


@pinv_op.def_vjp
def _(ctx, g):
    ga = pinv_vjp(ctx.inputs[0], ctx.out, g)
    n = len(ctx.inputs)  # (tensor tolerances, when given, are operands without a gradient)
    return ga if n == 1 else (ga,) + (None,) * (n - 1)


@pinv_op.def_jvp
def _(ctx, t, *tols):
    return pinv_jvp(ctx.inputs[0], ctx.out, t)


def _pinv_batch(op, vals, bd, params, size):
    """A (matrices in its last two dims) and the tolerance tensors (one value per matrix) with their
    batch dims lined up."""
    from ._batching import _pad_to
    core = (2, 0, 0)[:len(vals)]
    nb = max((v.dim() - (1 if f else 0)) - c for v, f, c in zip(vals, bd, core))
    new = [(_pad_to(v, nb + c) if f else v) for v, f, c in zip(vals, bd, core)]
    return dispatch(op, tuple(new), params), True


pinv_op.batch = _pinv_batch

# ----------------------------------------------------------------------------- lstsq

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq_impl(xp, a, b, rcond=None, driver="gelsy"):
    check_matrix("linalg.lstsq", a, square=False)
    if b.ndim < 2 or b.shape[-2] != a.shape[-2]:
        raise err(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) (A is "
                           f"{list(a.shape)}, B is {list(b.shape)})")
    if b.dtype != a.dtype:
        raise err(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {torch_dtype_name(a.dtype)} and other's dtype {torch_dtype_name(b.dtype)}")
    m, n = a.shape[-2:]
    k = b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    nb = int(np.prod(batch))
    ab = np.broadcast_to(a, batch + (m, n)).reshape(nb, m, n)
    bb = np.broadcast_to(b, batch + (m, k)).reshape(nb, m, k)
    real = a.real.dtype if a.dtype.kind == "c" else a.dtype  # (residuals and singular values are real)
    x = np.zeros((nb, n, k), a.dtype)
    ranks = np.zeros(nb, np.int64)
    svals = np.zeros((nb, min(m, n)), real)
    cond = rcond if rcond is not None else np.finfo(real).eps * max(m, n)
    for i in range(nb):
        if a.size == 0 or b.size == 0:
            break
        if driver == "gels":
            f = _lapack.get_lapack_funcs("gels", (ab[i],))
            rhs = np.zeros((max(m, n), k), a.dtype)
            rhs[:m] = bb[i]
            _, sol, info = f(ab[i], rhs)
            if info > 0:
                raise err(LinAlgError, "torch.linalg.lstsq: The least squares solution could not be computed "
                                  "because the input matrix does not have full rank (error code: "
                                  f"{info}).")
            x[i] = sol[:n]
        else:
            sol, _, rk, sv = _sla.lstsq(ab[i], bb[i], cond=cond, lapack_driver=driver, check_finite=False)
            x[i] = sol
            ranks[i] = rk
            if sv is not None and driver in ("gelsd", "gelss"):
                svals[i] = sv
    x = x.reshape(batch + (n, k))
    full = driver != "gelsy" and m > n and (driver == "gels" or (ranks == n).all())
    if full:
        r = np.matmul(np.broadcast_to(a, batch + (m, n)), x) - np.broadcast_to(b, batch + (m, k))
        res = (np.abs(r) ** 2).sum(-2).astype(real)
    else:
        res = np.zeros((0,), real)
    rank = ranks.reshape(batch) if driver != "gels" else np.zeros((0,), np.int64)
    sv = svals.reshape(batch + (min(m, n),)) if driver in ("gelsd", "gelss") else np.zeros((0,), real)
    return x, res, rank, sv


lstsq_op = defop("linalg_lstsq", _lstsq_impl, nout=4, diff_outputs=(0, 1), save=("inputs", "out"), bcast=True,
                 family=FAM)


@lstsq_op.def_vjp
def _(ctx, g, gr, grank, gs):
    # the solution is pinv(A) B (for A of full rank, as PyTorch differentiates it); the residuals
    # ||A x_j - b_j||^2 at the optimum x_j have the gradients 2 r_j x_j^H (A) and -2 r_j (b_j)
    a, b = ctx.inputs
    x = dispatch(pinv_op, (a,))
    gb = _mm(x.mH, g) if ctx.needs[1] else None
    ga = pinv_vjp(a, x, _mm(g, b.mH)) if ctx.needs[0] else None
    if gr.numel() and not _zero(gr):
        sol = ctx.outs[0]
        r2 = (_mm(a, sol) - b) * (2 * gr.unsqueeze(-2))
        if ga is not None:
            ga = ga + _mm(r2, sol.mH)
        if gb is not None:
            gb = gb - r2
    return ga, gb


def _zero(g):
    v = concrete(g)
    return v is not None and not v.any()


@lstsq_op.def_jvp
def _(ctx, ta, tb):
    a, b = ctx.inputs
    x = dispatch(pinv_op, (a,))
    r = None
    if ta is not None:
        r = _mm(pinv_jvp(a, x, ta), b)
    if tb is not None:
        s = _mm(x, tb)
        r = s if r is None else r + s
    dres = None
    if ctx.outs[1].numel():
        sol = ctx.outs[0]
        d = 0
        if ta is not None:
            d = _mm(ta, sol)
        if tb is not None:
            d = d - tb
        res = _mm(a, sol) - b  # d ||r||^2 = 2 Re(conj(r) dr), dr = dA x - dB (A^H r = 0 at the optimum)
        dres = (2 * (_conj(res) * d).real).sum(-2) if res.dtype.is_complex else (2 * res * d).sum(-2)
    return r, dres, None, None


def _lstsq_batch(op, vals, bd, params, size):
    out, flags = elementwise_rule(op, vals, bd, params, size)
    # residuals and singular values are empty (unbatched) for the drivers that do not compute them
    return out, tuple(i == 0 or tuple(o.shape) != (0,) for i, o in enumerate(out))


lstsq_op.batch = _lstsq_batch
