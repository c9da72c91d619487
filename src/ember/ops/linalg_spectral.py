"""torch.linalg primitives of the orthogonal decompositions: eigh, svd, qr, and the non-differentiable
LAPACK factorizations geqrf and ldl_factor / ldl_solve.

The backward rules are the standard ones, written in ember ops (differentiable again, batchable);
like PyTorch's, eigh's and svd's are well defined only when the eigen/singular values are distinct
(the eigenvectors of a repeated eigenvalue are not unique): when only the values receive a gradient
(eigvalsh, svdvals, the norms built on them) the rule takes the exact closed form that has no such
caveat.
"""
import numpy as np

from .._dispatch import defop, dispatch
from ._batching import elementwise_rule
from .linalg_solve import (FAM, err, _lapack, _sla, big, _flat, LinAlgError, check_matrix, check_float, concrete,
                           rsolve_tri, _mm, _tril, _diag, _diag_embed, _eye, _where)


def _is_zero(g):
    """True when ``g`` is known to be all zeros (an output that received no gradient)."""
    v = concrete(g)
    return v is not None and not v.any()


def _offdiag_recip(d):
    """F[i, j] = 1 / (d[j] - d[i]) off the diagonal, 0 on it."""
    e = d.unsqueeze(-2) - d.unsqueeze(-1)
    eye = _eye(d.shape[-1], d) != 0
    return _where(eye, 0.0, 1.0 / _where(eye, 1.0, e))


# ----------------------------------------------------------------------------- eigh


def _eigh_impl(xp, a, UPLO="L"):
    check_matrix("linalg.eigh", a)
    if UPLO not in ("L", "U"):
        raise err(f"linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    real = a.real.dtype if a.dtype.kind == "c" else a.dtype
    if a.size == 0:
        return np.zeros(a.shape[:-1], real), a.copy()
    fin = np.isfinite(a).all((-2, -1))
    if not fin.all():  # PyTorch answers nan for non-finite input
        w = np.full(a.shape[:-1], np.nan, real)
        v = np.full(a.shape, np.nan, a.dtype)
        if fin.any():
            w[fin], v[fin] = _eigh_impl(xp, a[fin], UPLO)
        return w, v
    try:
        if big(a):
            w = np.empty(a.shape[:-1], real)
            v = np.empty(a.shape, a.dtype)
            fw, fv = w.reshape((-1, a.shape[-1])), v.reshape((-1,) + a.shape[-2:])
            for i, m in enumerate(_flat(a)):
                fw[i], fv[i] = _sla.eigh(m, lower=UPLO == "L", driver="evd", check_finite=False)
        else:
            w, v = np.linalg.eigh(a, UPLO)
    except np.linalg.LinAlgError:
        raise err(LinAlgError, "linalg.eigh: The algorithm failed to converge because the input matrix is "
                          "ill-conditioned or has too many repeated eigenvalues (error code: 1).") from None
    return w.astype(real, copy=False), v


eigh_op = defop("linalg_eigh", _eigh_impl, nout=2, save=("out",), family=FAM)


def eigh(a, UPLO="L"):
    return dispatch(eigh_op, (a,), {"UPLO": UPLO} if UPLO != "L" else {})


@eigh_op.def_vjp
def _(ctx, gl, gv):
    w, v = ctx.outs
    if _is_zero(gv):
        return _mm(v * gl.unsqueeze(-2), v.mH)
    x = _mm(v.mH, gv)
    x = (x - x.mH) * 0.5  # the skew-Hermitian part: the tangent space of the eigenvector basis
    x = x * _offdiag_recip(w) + _diag_embed(gl)
    return _mm(_mm(v, x), v.mH)


@eigh_op.def_jvp
def _(ctx, t):
    w, v = ctx.outs
    m = _mm(_mm(v.mH, t), v)
    dw = _diag(m)
    dv = _mm(v, m * _offdiag_recip(w))
    return dw, dv


eigh_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- eig (general matrices)


def _eig_impl(xp, a):
    if a.dtype.kind == "f" and a.dtype.itemsize < 4 or a.dtype.kind == "V":
        raise err(NotImplementedError, f'"linalg_eig_out_cpu" not implemented for '
                                       f'\'{"Half" if a.dtype.kind == "f" else "BFloat16"}\'')
    check_matrix("linalg.eig", a)
    cdt = np.result_type(a.dtype, np.complex64)  # complex64 for float32, complex128 for float64
    if a.size == 0:
        return np.zeros(a.shape[:-1], cdt), np.zeros(a.shape, cdt)
    if not np.isfinite(a).all():
        raise err("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    try:
        # LAPACK geev, as PyTorch's CPU build: each eigenvector of unit 2-norm with its largest
        # component real. NumPy's batched eig computes in double precision (a float32 matrix's real
        # eigenvectors could then come out with the other sign than PyTorch's sgeev gives): single
        # precision goes to SciPy's sgeev/cgeev matrix by matrix. NumPy returns real arrays when
        # every eigenvalue is real: always complex here.
        if a.dtype.itemsize == 8 and a.dtype.kind == "c" or a.dtype == np.float32:
            w = np.empty(a.shape[:-1], cdt)
            v = np.empty(a.shape, cdt)
            fw, fv = w.reshape((-1, a.shape[-1])), v.reshape((-1,) + a.shape[-2:])
            for i, m in enumerate(_flat(a)):
                fw[i], fv[i] = _sla.eig(m, check_finite=False)
        else:
            w, v = np.linalg.eig(a)
    except np.linalg.LinAlgError:
        raise err(LinAlgError, "linalg.eig: The algorithm failed to converge because the input matrix is "
                               "ill-conditioned or has too many repeated eigenvalues (error code: 1).") from None
    return w.astype(cdt, copy=False), v.astype(cdt, copy=False)


eig_op = defop("linalg_eig", _eig_impl, nout=2, save=("inputs", "out"), family=FAM)


def eig(a):
    return dispatch(eig_op, (a,))


def _eig_diff(w):
    """E[i, j] = w[j] - w[i] off the diagonal, 1 on it."""
    e = w.unsqueeze(-2) - w.unsqueeze(-1)
    return _where(_eye(w.shape[-1], w) != 0, 1.0, e)


def _eig_phase_check(vhgv):
    """The eigenvectors are unit vectors defined up to a phase each: a loss that depends on the
    phases (Im diag(V^H gV) != 0) has no gradient, and PyTorch refuses it."""
    d = concrete(_diag(vhgv))
    if d is not None and not np.allclose(d.imag, 0, rtol=1e-2, atol=1e-2):
        raise err("linalg_eig_backward: The eigenvectors in the complex case are specified up to multiplication "
                  "by e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined.")


@eig_op.def_vjp
def _(ctx, gw, gv):
    # A = V diag(w) V^{-1}, the columns of V of unit norm (the phase free): dw = diag(M),
    # dV = V (M / E - diag(Re diag(V^H V (M / E)))) with M = V^{-1} dA V; the adjoint of that:
    # gA = V^{-H} (diag(gw) + (V^H gV - V^H V diag(Re diag(V^H gV))) / conj(E), off the diagonal) V^H
    w, v = ctx.outs
    vh = v.mH
    if _is_zero(gv):
        inner = _diag_embed(gw)
    else:
        x = _mm(vh, gv)
        _eig_phase_check(x)
        x = x - _mm(vh, v * _diag(x).real.to(v.dtype).unsqueeze(-2))
        offd = _where(_eye(w.shape[-1], w) != 0, 0.0, x / _eig_diff(w).conj())
        inner = offd + _diag_embed(gw)
    ga = _solve(vh, _mm(inner, vh))
    return ga if ctx.inputs[0].dtype.is_complex else ga.real  # (real input: the real part, as PyTorch)


@eig_op.def_jvp
def _(ctx, t):
    w, v = ctx.outs
    if not t.dtype.is_complex:
        t = t.to(v.dtype)
    m = _solve(v, _mm(t, v))
    dw = _diag(m)
    x = _where(_eye(w.shape[-1], w) != 0, 0.0, m / _eig_diff(w))
    vx = _mm(v, x)
    dv = vx - v * (v.conj() * vx).sum(-2).real.to(v.dtype).unsqueeze(-2)
    return dw, dv


def _solve(a, b):
    from .linalg_solve import solve
    return solve(a, b)


eig_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- svd


def _svd_impl(xp, a, full_matrices=True):
    check_matrix("linalg.svd", a, square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    real = a.real.dtype if a.dtype.kind == "c" else a.dtype
    if a.size == 0:
        um, vn = (m, n) if full_matrices else (k, k)
        u = np.broadcast_to(np.eye(m, um, dtype=a.dtype), a.shape[:-2] + (m, um)).copy()
        vh = np.broadcast_to(np.eye(vn, n, dtype=a.dtype), a.shape[:-2] + (vn, n)).copy()
        return u, np.zeros(a.shape[:-2] + (k,), real), vh
    if not np.isfinite(a).all():
        raise err(LinAlgError, "linalg.svd: The algorithm failed to converge because the input matrix contained "
                          "non-finite values.")
    try:
        if big(a):
            res = [_sla.svd(mat, full_matrices=full_matrices, check_finite=False) for mat in _flat(a)]
            b = a.shape[:-2]
            u = np.stack([r[0] for r in res]).reshape(b + res[0][0].shape)
            s = np.stack([r[1] for r in res]).reshape(b + res[0][1].shape)
            vh = np.stack([r[2] for r in res]).reshape(b + res[0][2].shape)
        else:
            u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        raise err(LinAlgError, "linalg.svd: The algorithm failed to converge because the input matrix is "
                          "ill-conditioned or has too many repeated singular values (error code: 1).") from None
    return u, s.astype(real, copy=False), vh


svd_op = defop("linalg_svd", _svd_impl, nout=3, save=("out",), family=FAM)


def svd(a, full_matrices=True):
    return dispatch(svd_op, (a,), {"full_matrices": full_matrices})


@svd_op.def_vjp
def _(ctx, gu, gs, gvh):
    u, s, vh = ctx.outs
    m, n = u.shape[-2], vh.shape[-1]
    k = s.shape[-1]
    if ctx.params.get("full_matrices", True):  # only the first k columns of U (rows of Vh) are determined
        u, vh = u[..., :, :k], vh[..., :k, :]
        gu, gvh = gu[..., :, :k], gvh[..., :k, :]
    if _is_zero(gu) and _is_zero(gvh):
        return _mm(u * gs.unsqueeze(-2), vh)
    sc = s.to(u.dtype)
    uhgu = _mm(u.mH, gu)
    vhgv = _mm(vh, gvh.mH)
    f = _offdiag_recip(s * s).to(u.dtype)
    j = f * (uhgu - uhgu.mH)
    kk = f * (vhgv - vhgv.mH)
    inner = j * sc.unsqueeze(-2) + sc.unsqueeze(-1) * kk + _diag_embed(gs.to(u.dtype))
    if u.dtype.is_complex:  # the phase of each singular pair: Im(diag(U^H gU)) / (2 s), times i
        d = _diag(uhgu)
        inner = inner + _diag_embed((d - d.conj()) * 0.5 / sc)
    ga = _mm(_mm(u, inner), vh)
    if m > k:
        ga = ga + _mm((gu - _mm(u, uhgu)) / sc.unsqueeze(-2), vh)
    if n > k:
        ga = ga + _mm(u / sc.unsqueeze(-2), gvh - _mm(vhgv.mH, vh))
    return ga


@svd_op.def_jvp
def _(ctx, t):
    u, s, vh = ctx.outs
    m, n = u.shape[-2], vh.shape[-1]
    k = s.shape[-1]
    if k == 0:  # (an empty matrix: nothing varies)
        return u * 0, s * 0, vh * 0
    pad = ctx.params.get("full_matrices", True) and m != n
    if pad:  # only the first k columns of U (rows of Vh) are determined: the others get a zero tangent
        u, vh = u[..., :, :k], vh[..., :k, :]
    v = vh.mH
    sc = s.to(u.dtype)
    p = _mm(_mm(u.mH, t), v)
    ds = _diag(p)
    f = _offdiag_recip(s * s).to(u.dtype)
    ps = p * sc.unsqueeze(-2)
    sp = sc.unsqueeze(-1) * p
    du = _mm(u, f * (ps + ps.mH))  # Omega_U = F o (P S + S P^H)
    dv = _mm(v, f * (sp + sp.mH))  # Omega_V = F o (S P + P^H S)
    if u.dtype.is_complex:  # dS = Re(diag P); the phase of each pair, i Im(diag P) / s, split evenly
        ph = ((ds - ds.conj()) * 0.25 / sc).unsqueeze(-2)  # between U and V, as PyTorch's gauge
        du = du + u * ph
        dv = dv - v * ph
        ds = ds.real
    if m > k:
        du = du + (_mm(t, v) - _mm(u, p)) / sc.unsqueeze(-2)
    if n > k:
        dv = dv + (_mm(t.mH, u) - _mm(v, p.mH)) / sc.unsqueeze(-2)
    if pad:
        from .shape import cat
        dvh = dv.mH
        z = (du[..., :, :1] * 0).expand(tuple(du.shape[:-1]) + (m - k,))
        zr = (dvh[..., :1, :] * 0).expand(tuple(dvh.shape[:-2]) + (n - k, n))
        return cat([du, z], -1), ds, cat([dvh, zr], -2)
    return du, ds, dv.mH


svd_op.batch = elementwise_rule

# ----------------------------------------------------------------------------- qr


def _qr_impl(xp, a, mode="reduced"):
    check_matrix("linalg.qr", a, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise err(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           f"'r', or 'complete'")
    m, n = a.shape[-2:]
    if a.size == 0:
        k = min(m, n)
        qc = m if mode == "complete" else k
        q = np.broadcast_to(np.eye(m, qc, dtype=a.dtype), a.shape[:-2] + (m, qc)).copy()
        r = np.zeros(a.shape[:-2] + (qc, n), a.dtype)
        return (np.zeros((0,), a.dtype) if mode == "r" else q), r
    if big(a):  # SciPy's geqrf/orgqr matrix by matrix (faster than NumPy's on large ones)
        smode = "full" if mode == "complete" else "economic"
        res = [_sla.qr(mat, mode=smode, check_finite=False) for mat in _flat(a)]
        b = a.shape[:-2]
        r = np.stack([x[-1] for x in res]).reshape(b + res[0][-1].shape)
        if mode == "r":
            return np.zeros((0,), a.dtype), r
        return np.stack([x[0] for x in res]).reshape(b + res[0][0].shape), r
    if mode == "r":
        return np.zeros((0,), a.dtype), np.linalg.qr(a, mode="r")
    q, r = np.linalg.qr(a, mode=mode)
    return q, r


qr_op = defop("linalg_qr", _qr_impl, nout=2, save=("out",), family=FAM)


def qr(a, mode="reduced"):
    return dispatch(qr_op, (a,), {"mode": mode} if mode != "reduced" else {})


def _qr_check(ctx, q, r):
    mode = ctx.params.get("mode", "reduced")
    if mode == "r":
        raise err("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                           "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                           "linalg.qr.")
    if mode == "complete" and q.shape[-2] > r.shape[-1]:
        raise err("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")


def _qr_vjp_tall(q, r, gq, gr):
    """gA of A = Q R with A m x n, m >= n (R square)."""
    mm = _mm(r, gr.mH) - _mm(gq.mH, q)
    low = _tril(mm, -1)
    sym = low + low.mH + _diag_embed(_diag(mm).real if mm.dtype.is_complex else _diag(mm))
    b = gq + _mm(q, sym)
    return rsolve_tri(b, r.mH, False)


@qr_op.def_vjp
def _(ctx, gq, gr):
    q, r = ctx.outs
    _qr_check(ctx, q, r)
    m, n = q.shape[-2], r.shape[-1]
    if m >= n:
        return _qr_vjp_tall(q, r, gq, gr)
    from .shape import cat
    u, vv = r[..., :, :m], r[..., :, m:]
    gu, gv = gr[..., :, :m], gr[..., :, m:]
    y = _mm(q, vv)
    gx = _qr_vjp_tall(q, u, gq + _mm(y, gv.mH), gu)
    return cat([gx, _mm(q, gv)], -1)


def _qr_jvp_tall(q, r, t):
    c = rsolve_tri(_mm(q.mH, t), r, True)
    low = _tril(c, -1)
    up = c - low + low.mH  # C - Omega, upper triangular
    if c.dtype.is_complex:  # R's diagonal is real: Omega = Q^H dQ (skew-Hermitian) takes the imaginary part of C's
        d = _diag(c)
        up = up - _diag_embed(d - d.real)
    dr = _mm(up, r)
    dq = rsolve_tri(t, r, True) - _mm(q, up)
    return dq, dr


@qr_op.def_jvp
def _(ctx, t):
    q, r = ctx.outs
    _qr_check(ctx, q, r)
    m, n = q.shape[-2], r.shape[-1]
    if m >= n:
        return _qr_jvp_tall(q, r, t)
    from .shape import cat
    u, vv = r[..., :, :m], r[..., :, m:]
    dq, du = _qr_jvp_tall(q, u, t[..., :, :m])
    dv = _mm(q.mH, t[..., :, m:] - _mm(dq, vv))
    return dq, cat([du, dv], -1)


def _qr_batch(op, vals, bd, params, size):
    out, _ = elementwise_rule(op, vals, bd, params, size)
    return out, (params.get("mode") != "r", True)


qr_op.batch = _qr_batch

# ----------------------------------------------------------------------------- geqrf, ldl (LAPACK, no gradient)


def _geqrf_impl(xp, a):
    if a.ndim < 2:
        raise err("torch.geqrf: input must have at least 2 dimensions.")
    check_float("geqrf", a)
    m, n = a.shape[-2:]
    k = min(m, n)
    out = np.array(a, copy=True)
    tau = np.zeros(a.shape[:-2] + (k,), a.dtype)
    if a.size:
        f = _lapack.get_lapack_funcs("geqrf", (a,))
        fo, ft = out.reshape(-1, m, n), tau.reshape(-1, k)
        for i, mat in enumerate(a.reshape(-1, m, n)):
            qr_, t_, _, _ = f(mat)
            fo[i], ft[i] = qr_, t_
    return out, tau


geqrf_op = defop("geqrf", _geqrf_impl, nout=2, differentiable=False, family=FAM)
geqrf_op.batch = elementwise_rule


def _ldl_impl(xp, a, hermitian=False, check_errors=False):
    check_matrix("torch.linalg.ldl_factor_ex", a)
    n = a.shape[-1]
    ld = np.zeros(a.shape, a.dtype)
    piv = np.zeros(a.shape[:-1], np.int32)
    info = np.zeros(a.shape[:-2], np.int32)
    if a.size:
        f = _lapack.get_lapack_funcs("hetrf" if (hermitian and a.dtype.kind == "c") else "sytrf", (a,))
        fl, fp, fi = ld.reshape(-1, n, n), piv.reshape(-1, n), info.reshape(-1)
        for i, mat in enumerate(a.reshape(-1, n, n)):
            r, p, inf = f(mat, lower=1)
            fl[i], fp[i], fi[i] = np.tril(r), p, inf
    if check_errors and (info > 0).any():
        raise err(LinAlgError, f"torch.linalg.ldl_factor: The factorization could not be completed because the input "
                          f"is singular (D[{int(info[info > 0].flat[0])}] is zero).")
    return ld, piv, info


ldl_op = defop("linalg_ldl_factor_ex", _ldl_impl, nout=3, differentiable=False, family=FAM)
ldl_op.batch = elementwise_rule


def _ldl_solve_impl(xp, ld, piv, b, hermitian=False):
    check_matrix("torch.linalg.ldl_solve", ld, what="LD")
    if b.ndim < 2 or b.shape[-2] != ld.shape[-1]:
        raise err(f"torch.linalg.ldl_solve: Incompatible shapes of LD and B ({list(ld.shape)} and "
                           f"{list(b.shape)})")
    if b.dtype != ld.dtype:
        raise err(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, but got "
                           f"{ld.dtype} and {b.dtype}")
    n, k = b.shape[-2:]
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2], piv.shape[:-1])
    nb = int(np.prod(batch))
    lb = np.broadcast_to(ld, batch + (n, n)).reshape(nb, n, n)
    pb = np.broadcast_to(piv, batch + (n,)).reshape(nb, n)
    bb = np.broadcast_to(b, batch + (n, k)).reshape(nb, n, k)
    out = np.zeros((nb, n, k), b.dtype)
    if b.size and n:
        f = _lapack.get_lapack_funcs("hetrs" if (hermitian and b.dtype.kind == "c") else "sytrs", (ld,))
        for i in range(lb.shape[0]):
            out[i] = f(lb[i], pb[i], bb[i], lower=1)[0]
    return out.reshape(batch + (n, k))


ldl_solve_op = defop("linalg_ldl_solve", _ldl_solve_impl, differentiable=False, family=FAM)
def _ldl_solve_batch(op, vals, bd, params, size):
    """Pad the batched operands so that their batch dims line up (pivots have one dim less)."""
    from ._batching import _pad_to
    ld, piv, b = vals
    core = (2, 1, 2)
    nb = max((v.dim() - (1 if f else 0)) - c for v, f, c in zip(vals, bd, core))
    new = [(_pad_to(v, nb + c) if f else v) for v, f, c in zip(vals, bd, core)]
    return dispatch(op, tuple(new), params), True


ldl_solve_op.batch = _ldl_solve_batch
