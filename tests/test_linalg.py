"""torch.linalg: values, gradients (gradcheck / gradgradcheck in float64, against PyTorch), batching,
transforms, and the errors for singular / non-positive-definite / malformed input worded as
PyTorch's. The registry-wide checks of every primitive (forward, backward, jvp, vmap) run from
tests/op_db_linalg.py; this file covers what those cannot: error texts, the _ex infos, gradients at
singular and degenerate points, the torch.* spellings and the ops built on the decompositions."""
import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def _np(t):
    return t.detach().numpy()


def _pair(torch, a, requires_grad=False):
    e = ember.tensor(a, dtype=ember.float64, requires_grad=requires_grad)
    t = torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad)
    return e, t


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _wc(*shape, seed=0):
    return _rand(*shape, seed=seed) + 3 * np.eye(shape[-1])


def _spd(*shape, seed=0):
    a = _rand(*shape, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    raise AssertionError("no error raised")


# ----------------------------------------------------------------------------- errors, as PyTorch words them


def test_linalg_error_class():
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    assert ember.linalg.LinAlgError.__name__ == "_LinAlgError"


@pytest.mark.parametrize("case", ["cholesky", "cholesky_batched", "inv", "inv_zero", "inv_batched", "solve",
                                  "lu_factor", "lu_factor_pivot", "inv_shape", "inv_int", "det_shape",
                                  "solve_shape", "symeig", "matrix_exp_shape", "svd_nan"])
def test_error_messages_match_torch(case, torch):
    nan = float("nan")
    calls = {
        "cholesky": lambda m: m.linalg.cholesky(m.tensor([[1., 2], [2, 1]])),
        "cholesky_batched": lambda m: m.linalg.cholesky(m.stack([m.eye(2), m.tensor([[1., 2], [2, 1]])])),
        "inv": lambda m: m.linalg.inv(m.tensor([[1., 2], [2, 4]])),
        "inv_zero": lambda m: m.linalg.inv(m.zeros(2, 2)),
        "inv_batched": lambda m: m.linalg.inv(m.stack([m.eye(2), m.tensor([[1., 2], [2, 4]])])),
        "solve": lambda m: m.linalg.solve(m.tensor([[1., 2], [2, 4]]), m.ones(2)),
        "lu_factor": lambda m: m.linalg.lu_factor(m.tensor([[1., 2], [2, 4]])),
        "lu_factor_pivot": lambda m: m.linalg.lu_factor(m.eye(2), pivot=False),
        "inv_shape": lambda m: m.linalg.inv(m.ones(2, 3)),
        "inv_int": lambda m: m.linalg.inv(m.ones(2, 2, dtype=m.int64)),
        "det_shape": lambda m: m.linalg.det(m.ones(2, 3)),
        "solve_shape": lambda m: m.linalg.solve(m.eye(2), m.ones(3)),
        "symeig": lambda m: m.symeig(m.eye(2)),
        "matrix_exp_shape": lambda m: m.linalg.matrix_exp(m.ones(2, 3)),
        "svd_nan": lambda m: m.linalg.svd(m.full((2, 2), nan)),
    }
    te = _err(lambda: calls[case](torch))
    ee = _err(lambda: calls[case](ember))
    assert isinstance(ee, RuntimeError)
    assert (type(te).__name__ == "_LinAlgError") == isinstance(ee, ember.linalg.LinAlgError), (te, ee)
    tmsg = str(te)
    emsg = str(ee)
    # PyTorch's C++ dtype names: ember adds its own in parentheses ("Long (int64)")
    assert emsg.replace(" (int64)", "") == tmsg or emsg.startswith(tmsg[:60]), f"\nember: {emsg}\ntorch: {tmsg}"


def test_cholesky_message_exact():
    e = _err(lambda: ember.linalg.cholesky(ember.tensor([[1., 2], [2, 1]])))
    assert str(e) == ("linalg.cholesky: The factorization could not be completed because the input is not "
                      "positive-definite (the leading minor of order 2 is not positive-definite).")


def test_ex_variants_return_info(torch):
    bad = [[1., 2], [2, 1]]
    sing = [[1., 2], [2, 4]]
    for name, arg, call in [
        ("cholesky_ex", bad, lambda m, a: m.linalg.cholesky_ex(a).info),
        ("inv_ex", sing, lambda m, a: m.linalg.inv_ex(a).info),
        ("solve_ex", sing, lambda m, a: m.linalg.solve_ex(a, m.ones(2, 1, dtype=a.dtype)).info),
        ("lu_factor_ex", sing, lambda m, a: m.linalg.lu_factor_ex(a).info),
        ("lu_factor_ex_batch", [sing, [[1., 0], [0, 1]]], lambda m, a: m.linalg.lu_factor_ex(a).info),
    ]:
        e, t = _pair(torch, arg)
        ei, ti = call(ember, e), call(torch, t)
        assert ei.dtype.name == "int32", name
        np.testing.assert_array_equal(ei.numpy(), ti.numpy(), err_msg=name)
    ok = ember.linalg.cholesky_ex(ember.tensor(_spd(2, 3, 3)))
    assert ok.info.tolist() == [0, 0]
    with pytest.raises(ember.linalg.LinAlgError, match="leading minor of order 2"):
        ember.linalg.cholesky_ex(ember.tensor(bad), check_errors=True)


def _phase_fixed(v):
    """Eigenvectors with their first component real and positive (they are unique up to a phase)."""
    v0 = v[..., :1, :]
    return v * (v0.conj() / abs(v0))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_eig_matches_torch(torch, dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 5, 5))
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal((3, 5, 5))
    a = a.astype(dtype)
    w, v = ember.linalg.eig(ember.from_numpy(a.copy()))
    tw, tv = torch.linalg.eig(torch.from_numpy(a.copy()))
    assert str(w.dtype) == str(tw.dtype).replace("torch", "ember") and w.dtype.is_complex
    assert str(v.dtype) == str(tv.dtype).replace("torch", "ember") and tuple(v.shape) == (3, 5, 5)
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-10
    np.testing.assert_allclose(w.numpy(), tw.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=-2), 1, rtol=tol)  # unit eigenvectors
    np.testing.assert_allclose(_phase_fixed(v.numpy()), _phase_fixed(tv.numpy()), rtol=tol, atol=tol)
    np.testing.assert_allclose(ember.linalg.eigvals(ember.from_numpy(a.copy())).numpy(), tw.numpy(), rtol=tol,
                               atol=tol)
    np.testing.assert_allclose(a.astype(np.complex128) @ v.numpy(), v.numpy() * w.numpy()[..., None, :],
                               atol=10 * tol)


def test_eig_errors_and_edge_cases(torch):
    for bad, kind in [(np.ones((2, 3)), "square"), (np.ones(3), "2 dimensions"),
                      (np.array([[1.0, np.nan], [0, 1]]), "infs or NaNs")]:
        with pytest.raises(RuntimeError, match=kind):
            ember.linalg.eig(ember.tensor(bad))
        with pytest.raises(RuntimeError, match=kind):
            torch.linalg.eig(torch.tensor(bad))
    with pytest.raises(NotImplementedError, match="Half"):
        ember.linalg.eig(ember.ones(2, 2, dtype=ember.float16))
    with pytest.raises(RuntimeError):
        ember.linalg.eig(ember.ones(2, 2, dtype=ember.int64))
    for shape in [(0, 3, 3), (2, 0, 0)]:
        w, v = ember.linalg.eig(ember.zeros(shape))
        tw, tv = torch.linalg.eig(torch.zeros(shape))
        assert tuple(w.shape) == tuple(tw.shape) and tuple(v.shape) == tuple(tv.shape)
        assert w.dtype is ember.complex64 and v.dtype is ember.complex64
    r = ember.linalg.eig(ember.eye(2))
    assert type(r).__name__ == "linalg_eig" and r.eigenvalues is r[0] and r.eigenvectors is r[1]


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_eig_gradients_match_torch(torch, dtype):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 4, 4))
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal((2, 4, 4))

    def loss(m, x):  # a phase-invariant function of the eigenvectors, and the eigenvalues
        w, v = m.linalg.eig(x)
        return (v.abs() ** 2 * m.arange(4.0, dtype=m.float64)).sum() + (w * w).real.sum() + \
            (_phase_fixed(v) ** 2).imag.sum() + (v[..., 0, :].abs() * w.abs()).sum()

    grads = []
    for m in (ember, torch):
        x = m.from_numpy(a.copy()).requires_grad_(True)
        loss(m, x).backward()
        grads.append(x.grad.numpy())
        assert str(x.grad.dtype).split(".")[-1] == dtype  # a real input's gradient is real
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-8, atol=1e-10)
    for m in (ember, torch):  # eigvals differentiates through the eigenvalues only
        x = m.from_numpy(a.copy()).requires_grad_(True)
        w = m.linalg.eigvals(x)
        (w.real * w.imag + w.abs()).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[2], grads[3], rtol=1e-8, atol=1e-10)
    x = ember.from_numpy(a[0].copy()).requires_grad_(True)
    assert gradcheck(lambda x: (ember.linalg.eigvals(x), _phase_fixed(ember.linalg.eig(x)[1])), (x,))
    assert gradgradcheck(lambda x: _phase_fixed(ember.linalg.eig(x)[1]).abs().sum(-1), (x,))


def test_eig_phase_dependent_loss_is_an_error(torch):
    a = np.array([[0.0, -2.0, 0.5], [1.0, 0.0, 0.0], [0.3, 0.0, 1.0]])  # (a complex pair of eigenvalues)
    for m in (torch, ember):
        x = m.from_numpy(a.copy()).requires_grad_(True)
        with pytest.raises(RuntimeError, match="specified up to multiplication by e\\^\\{i phi\\}"):
            m.linalg.eig(x)[1].sum().abs().backward()


def test_eig_forward_ad_and_vmap_match_torch(torch):
    rng = np.random.default_rng(4)
    a, t = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 4))

    def f(m):
        return lambda x: (lambda w, v: (w, _phase_fixed(v)))(*m.linalg.eig(x))
    _, et = ember.func.jvp(f(ember), (ember.from_numpy(a.copy()),), (ember.from_numpy(t.copy()),))
    _, tt = torch.func.jvp(f(torch), (torch.from_numpy(a.copy()),), (torch.from_numpy(t.copy()),))
    for x, y in zip(et, tt):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-8, atol=1e-10)
    vw, vv = ember.func.vmap(ember.linalg.eig)(ember.from_numpy(a.copy()))
    w, v = ember.linalg.eig(ember.from_numpy(a.copy()))
    np.testing.assert_array_equal(vw.numpy(), w.numpy())
    np.testing.assert_array_equal(vv.numpy(), v.numpy())


def test_qr_backward_errors():
    a = ember.randn(4, 2, dtype=ember.float64, requires_grad=True)
    q, r = ember.linalg.qr(a, mode="complete")
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"):
        q.sum().backward()
    _, r = ember.linalg.qr(a, mode="r")
    with pytest.raises(RuntimeError, match="mode='r'"):
        r.sum().backward()


def test_svd_driver_is_cuda_only(torch):
    te = _err(lambda: torch.linalg.svd(torch.eye(2), driver="gesvd"))
    ee = _err(lambda: ember.linalg.svd(ember.eye(2), driver="gesvd"))
    assert str(ee) == str(te)


# ----------------------------------------------------------------------------- values against PyTorch


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "logdet", "cholesky", "cholesky_upper", "qr", "qr_complete",
                                  "eigvalsh", "svdvals", "pinv", "pinv_atol", "pinv_hermitian", "matrix_rank",
                                  "matrix_rank_tol", "matrix_exp", "matrix_power", "matrix_power_neg", "cond",
                                  "cond_fro", "cond_singular_1", "nuc", "norm2", "norm_m2", "lu", "lu_factor",
                                  "lu_solve", "lu_solve_adjoint", "solve_left_false", "solve_triangular_unit",
                                  "cholesky_solve_upper", "cholesky_inverse", "householder_product", "ormqr",
                                  "geqrf", "tensorinv", "tensorsolve", "vander", "multi_dot", "vecdot", "cross",
                                  "diagonal", "lstsq_gelsd", "lstsq_gelss", "lstsq_gels", "lstsq_wide",
                                  "triangular_solve", "torch_svd", "torch_svd_nouv", "ldl"])
def test_values_match_torch(name, torch):
    A = _wc(2, 3, 3)
    R = _rand(2, 4, 3, seed=1)
    B = _rand(2, 3, 2, seed=2)
    S = _spd(2, 3, 3, seed=3)
    calls = {
        "inv": (lambda m, a: m.linalg.inv(a), A),
        "det": (lambda m, a: m.linalg.det(a), A),
        "slogdet": (lambda m, a: tuple(m.linalg.slogdet(a)), _rand(3, 3, 3)),
        "logdet": (lambda m, a: m.logdet(a), _rand(4, 3, 3)),
        "cholesky": (lambda m, a: m.linalg.cholesky(a), S),
        "cholesky_upper": (lambda m, a: m.linalg.cholesky(a, upper=True), S),
        "qr": (lambda m, a: tuple(m.linalg.qr(a)), R),
        "qr_complete": (lambda m, a: tuple(m.linalg.qr(a, mode="complete")), R),
        "eigvalsh": (lambda m, a: m.linalg.eigvalsh(a), S),
        "svdvals": (lambda m, a: m.linalg.svdvals(a), R),
        "pinv": (lambda m, a: m.linalg.pinv(a), R),
        "pinv_atol": (lambda m, a: m.linalg.pinv(a, atol=0.5), R),
        "pinv_hermitian": (lambda m, a: m.linalg.pinv(a, hermitian=True), S),
        "matrix_rank": (lambda m, a: m.linalg.matrix_rank(a), np.stack([_rand(4, 2) @ _rand(2, 3, seed=5), R[0]])),
        "matrix_rank_tol": (lambda m, a: m.linalg.matrix_rank(a, atol=1.0, rtol=0.1), R),
        "matrix_exp": (lambda m, a: m.linalg.matrix_exp(a), A * 0.3),
        "matrix_power": (lambda m, a: m.linalg.matrix_power(a, 5), A),
        "matrix_power_neg": (lambda m, a: m.linalg.matrix_power(a, -3), A),
        "cond": (lambda m, a: m.linalg.cond(a), R),
        "cond_fro": (lambda m, a: m.linalg.cond(a, "fro"), A),
        "cond_singular_1": (lambda m, a: m.linalg.cond(a, 1), np.stack([A[0], np.ones((3, 3))])),
        "nuc": (lambda m, a: m.linalg.matrix_norm(a, "nuc"), R),
        "norm2": (lambda m, a: m.linalg.norm(a[0], 2), R),
        "norm_m2": (lambda m, a: m.linalg.matrix_norm(a, -2, keepdim=True), R),
        "lu": (lambda m, a: tuple(m.linalg.lu(a)), R),
        "lu_factor": (lambda m, a: tuple(m.linalg.lu_factor(a)), _rand(2, 4, 4)),
        "lu_solve": (lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), A, B),
        "lu_solve_adjoint": (lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True), A, B),
        "solve_left_false": (lambda m, a, b: m.linalg.solve(a, b.mT, left=False), A, B),
        "solve_triangular_unit": (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True, unitriangular=True),
                                  A, B),
        "cholesky_solve_upper": (lambda m, a, b: m.cholesky_solve(b, m.linalg.cholesky(a, upper=True), upper=True),
                                 S, B),
        "cholesky_inverse": (lambda m, a: m.cholesky_inverse(m.linalg.cholesky(a)), S),
        "householder_product": (lambda m, a, t: m.linalg.householder_product(*m.geqrf(a)), R, None),
        "ormqr": (lambda m, a, b: m.ormqr(*m.geqrf(a), b, transpose=True), A, B),
        "geqrf": (lambda m, a: tuple(m.geqrf(a)), R),
        "tensorinv": (lambda m, a: m.linalg.tensorinv(a, ind=1), _wc(6, 6).reshape(6, 2, 3)),
        "tensorsolve": (lambda m, a, b: m.linalg.tensorsolve(a, b, dims=(0,)), _wc(6, 6).reshape(6, 2, 3),
                        _rand(2, 3)),
        "vander": (lambda m, a: m.linalg.vander(a, N=5), _rand(2, 3)),
        "multi_dot": (lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), _rand(5, 2), _rand(2, 7), _rand(7, 3)),
        "vecdot": (lambda m, a, b: m.linalg.vecdot(a, b, dim=-2), R, _rand(4, 3)),
        "cross": (lambda m, a, b: m.linalg.cross(a, b), _rand(2, 4, 3), _rand(1, 4, 3)),
        "diagonal": (lambda m, a: m.linalg.diagonal(a, offset=1), R),
        "lstsq_gelsd": (lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gelsd")), R, _rand(2, 4, 2)),
        "lstsq_gelss": (lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gelss")), R, _rand(2, 4, 2)),
        "lstsq_gels": (lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gels")), R, _rand(2, 4, 2)),
        "lstsq_wide": (lambda m, a, b: tuple(m.linalg.lstsq(a, b)), R.swapaxes(-1, -2), _rand(2, 3, 2)),
        "triangular_solve": (lambda m, b, a: tuple(m.triangular_solve(b, a, upper=False, transpose=True)), B, A),
        "torch_svd": (lambda m, a: (m.svd(a)[1], m.svd(a, some=False)[0].shape), R),
        "torch_svd_nouv": (lambda m, a: tuple(m.svd(a, compute_uv=False)), R),
        "ldl": (lambda m, a, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(a), b), A + A.swapaxes(-1, -2), B),
    }
    import warnings
    fn, *args = calls[name]
    args = [a for a in args if a is not None]
    if name == "householder_product":
        fn = lambda m, a: m.linalg.householder_product(*m.geqrf(a))  # noqa: E731
    eo = fn(ember, *[ember.tensor(a, dtype=ember.float64) for a in args])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to = fn(torch, *[torch.tensor(a, dtype=torch.float64) for a in args])
    eo = eo if isinstance(eo, tuple) else (eo,)
    to = to if isinstance(to, tuple) else (to,)
    assert len(eo) == len(to)
    for x, y in zip(eo, to):
        if isinstance(y, torch.Size):
            assert tuple(x) == tuple(y)
            continue
        assert tuple(x.shape) == tuple(y.shape), (name, tuple(x.shape), tuple(y.shape))
        assert x.dtype.name == str(y.dtype).split(".")[-1], (name, x.dtype, y.dtype)
        np.testing.assert_allclose(_np(x), y.detach().numpy(), rtol=1e-7, atol=1e-9, err_msg=name)


def test_batched_over_leading_dims():
    a = ember.tensor(_wc(2, 3, 4, 4))
    inv = ember.linalg.inv(a)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(inv[i, j].numpy(), np.linalg.inv(a[i, j].numpy()), rtol=1e-5, atol=1e-6)
    b = ember.tensor(_rand(3, 4, 2))  # broadcast against the batch
    x = ember.linalg.solve(a, b)
    assert tuple(x.shape) == (2, 3, 4, 2)
    np.testing.assert_allclose((a @ x).numpy(), np.broadcast_to(b.numpy(), (2, 3, 4, 2)), atol=1e-5)


def test_float32_in_float32_out():
    a = ember.tensor(_wc(3, 3), dtype=ember.float32)
    for f in (ember.linalg.inv, ember.linalg.det, ember.linalg.matrix_exp, ember.linalg.pinv,
              lambda x: ember.linalg.svd(x)[1], lambda x: ember.linalg.eigh(x + x.mT)[0], ember.linalg.cholesky):
        r = f(a @ a.mT if f is ember.linalg.cholesky else a)
        assert r.dtype is ember.float32


# ----------------------------------------------------------------------------- gradients


D = ember.float64


def _t(a, rg=True):
    return ember.tensor(a, dtype=D, requires_grad=rg)


@pytest.mark.parametrize("name", ["inv", "solve", "solve_triangular", "det", "slogdet", "cholesky", "lu_factor_tall",
                                  "lu_factor_wide", "qr", "qr_wide", "eigh", "svd", "svd_wide", "pinv", "lstsq",
                                  "matrix_exp", "cholesky_solve", "lu_solve", "householder_product"])
def test_gradcheck_and_gradgradcheck(name):
    sym = lambda a: a + a.mT  # noqa: E731
    spd = lambda a: a @ a.mT + 3 * ember.eye(3, dtype=D)  # noqa: E731

    def fixed(u, *rest):
        d = u[..., :1, :].sign().detach()
        return (u * d,) + tuple(r * d for r in rest)
    fns = {
        "inv": (lambda a: ember.linalg.inv(a), [_wc(2, 3, 3)]),
        "solve": (lambda a, b: ember.linalg.solve(a, b), [_wc(3, 3), _rand(2, 3, 2)]),
        "solve_triangular": (lambda a, b: ember.linalg.solve_triangular(a, b, upper=False, left=False),
                             [np.tril(_wc(3, 3)), _rand(2, 3)]),
        "det": (lambda a: ember.linalg.det(a), [_rand(2, 3, 3)]),
        "slogdet": (lambda a: ember.linalg.slogdet(a).logabsdet, [_wc(3, 3)]),
        "cholesky": (lambda a: ember.linalg.cholesky(spd(a)), [_rand(3, 3)]),
        "lu_factor_tall": (lambda a: ember.linalg.lu_factor(a).LU, [_rand(4, 3)]),
        "lu_factor_wide": (lambda a: ember.linalg.lu_factor(a).LU, [_rand(2, 4)]),
        "qr": (lambda a: tuple(ember.linalg.qr(a)), [_rand(4, 3)]),
        "qr_wide": (lambda a: tuple(ember.linalg.qr(a)), [_rand(2, 4)]),
        "eigh": (lambda a: (ember.linalg.eigh(sym(a))[0],) + fixed(ember.linalg.eigh(sym(a))[1]), [_rand(3, 3)]),
        "svd": (lambda a: (lambda u, s, vh: fixed(u, vh.mT) + (s,))(*ember.linalg.svd(a, full_matrices=False)),
                [_rand(4, 3)]),
        "svd_wide": (lambda a: (lambda u, s, vh: fixed(u, vh.mT) + (s,))(*ember.linalg.svd(a, full_matrices=False)),
                     [_rand(2, 4)]),
        "pinv": (lambda a: ember.linalg.pinv(a), [_rand(4, 3)]),
        "lstsq": (lambda a, b: ember.linalg.lstsq(a, b).solution, [_rand(4, 3), _rand(4, 2)]),
        "matrix_exp": (lambda a: ember.linalg.matrix_exp(a), [_rand(3, 3)]),
        "cholesky_solve": (lambda b, a: ember.cholesky_solve(b, ember.linalg.cholesky(spd(a))),
                           [_rand(3, 2), _rand(3, 3)]),
        "lu_solve": (lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b), [_wc(3, 3), _rand(3, 2)]),
        "householder_product": (lambda a, t: ember.linalg.householder_product(a, t), [_rand(4, 3), _rand(2)]),
    }
    fn, arrays = fns[name]
    inputs = [_t(a) for a in arrays]
    assert gradcheck(fn, inputs, check_forward_ad=True)
    assert gradgradcheck(fn, inputs)


def test_det_gradient_at_singular_matrices(torch):
    """det keeps its gradient (the cofactor matrix) at singular matrices: rank n-1 and n-2, as PyTorch."""
    rank1 = _rand(3, 2) @ _rand(2, 3, seed=1)
    rank2 = _rand(3, 1) @ _rand(1, 3, seed=2)
    a = np.stack([rank1, rank2, _wc(3, 3)])
    e, t = _pair(torch, a, True)
    ember.linalg.det(e).sum().backward()
    torch.linalg.det(t).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-9)
    # the cofactor of the rank-1 matrix is not zero
    assert np.abs(e.grad.numpy()[0]).max() > 1e-3
    # and the gradient is right by finite differences, to second order (a numerically singular
    # matrix, det ~ 1e-17, not exactly 0: the inverse-based formula would be off there)
    assert gradcheck(lambda x: ember.linalg.det(x), [_t(rank1)])
    e, t = _pair(torch, rank1, True)
    eg, = ember.autograd.grad(ember.linalg.det(e), e, create_graph=True)
    tg, = torch.autograd.grad(torch.linalg.det(t), t, create_graph=True)
    eh, = ember.autograd.grad((eg * eg).sum(), e)
    th, = torch.autograd.grad((tg * tg).sum(), t)
    np.testing.assert_allclose(eh.numpy(), th.numpy(), rtol=1e-6, atol=1e-9)


def test_spectral_values_gradient_at_repeated_values(torch):
    """svdvals / eigvalsh (and the norms on them) differentiate at repeated values (the identity,
    an orthogonal matrix) with the closed form, as PyTorch: no nan."""
    q = np.linalg.qr(_rand(4, 4))[0]
    for name, f in [("svdvals", lambda m, x: m.linalg.svdvals(x).sum()),
                    ("nuc", lambda m, x: m.linalg.matrix_norm(x, "nuc")),
                    ("eigvalsh", lambda m, x: (m.linalg.eigvalsh(x) ** 2).sum())]:
        for a in (np.eye(4), q):
            e, t = _pair(torch, a, True)
            f(ember, e).backward()
            f(torch, t).backward()
            assert np.isfinite(e.grad.numpy()).all(), name
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=name)
    # the spectral norm at exactly tied singular values: amax splits the gradient, as PyTorch's
    e, t = _pair(torch, np.eye(4), True)
    ember.linalg.matrix_norm(e, 2).backward()
    torch.linalg.matrix_norm(t, 2).backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["svd", "eigh", "qr", "cholesky", "lu", "inv", "solve", "lstsq", "pinv", "det",
                                  "matrix_exp"])
def test_backward_matches_torch(name, torch):
    """Gauge-invariant losses of the decompositions (the only ones whose gradient is defined)."""
    def svd_loss(m, a):
        u, s, vh = m.linalg.svd(a, full_matrices=False)
        return (u[..., :2] @ vh[..., :2, :]).square().sum() + (u * u.sum(-2, keepdim=True)).sum() * 0 + s.sum()

    def eigh_loss(m, a):
        w, v = m.linalg.eigh(a + a.mT)
        return ((v[..., :, :2] @ v[..., :, :2].mT) * a).sum() + (w * w).sum()
    fns = {
        "svd": (svd_loss, [_rand(2, 5, 3)]),
        "eigh": (eigh_loss, [_rand(2, 4, 4)]),
        "qr": (lambda m, a: sum(x.sin().sum() for x in m.linalg.qr(a)), [_rand(5, 3)]),
        "cholesky": (lambda m, a: m.linalg.cholesky(a @ a.mT + 3 * m.eye(3, dtype=a.dtype)).sin().sum(), [_rand(3, 3)]),
        "lu": (lambda m, a: sum(x.sin().sum() for x in m.linalg.lu(a)[1:]), [_rand(4, 3)]),
        "inv": (lambda m, a: m.linalg.inv(a).sin().sum(), [_wc(3, 3)]),
        "solve": (lambda m, a, b: m.linalg.solve(a, b).sin().sum(), [_wc(2, 3, 3), _rand(3)]),
        "lstsq": (lambda m, a, b: m.linalg.lstsq(a, b).solution.sin().sum(), [_rand(5, 3), _rand(5, 2)]),
        "pinv": (lambda m, a: m.linalg.pinv(a).sin().sum(), [_rand(3, 5)]),
        "det": (lambda m, a: m.linalg.det(a).sin().sum(), [_rand(2, 3, 3)]),
        "matrix_exp": (lambda m, a: m.linalg.matrix_exp(a).sin().sum(), [_rand(3, 3)]),
    }
    fn, arrays = fns[name]
    es = [ember.tensor(a, dtype=D, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    fn(ember, *es).backward()
    fn(torch, *ts).backward()
    for e, t in zip(es, ts):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-8, err_msg=name)


def test_transforms_compose():
    """jacrev/jacfwd/vmap/hessian through the decompositions (rules written in ember ops)."""
    from ember.func import jacfwd, jacrev, vmap, hessian
    a = _t(_wc(3, 3), rg=False)
    j1 = jacrev(ember.linalg.det)(a)
    j2 = jacfwd(ember.linalg.det)(a)
    np.testing.assert_allclose(j1.numpy(), j2.numpy(), rtol=1e-10)
    np.testing.assert_allclose(j1.numpy(), np.linalg.det(a.numpy()) * np.linalg.inv(a.numpy()).T, rtol=1e-10)
    batch = _t(_wc(4, 3, 3), rg=False)
    jb = vmap(jacrev(ember.linalg.det))(batch)
    for i in range(4):
        np.testing.assert_allclose(jb[i].numpy(), jacrev(ember.linalg.det)(batch[i]).numpy(), rtol=1e-10)
    h = hessian(lambda x: ember.linalg.slogdet(x).logabsdet)(a)
    inv = np.linalg.inv(a.numpy())
    # d2 log|det A| / dA_ij dA_kl = -inv[l, i] inv[j, k]
    np.testing.assert_allclose(h.numpy(), -np.einsum("li,jk->ijkl", inv, inv), rtol=1e-8, atol=1e-10)
    s = vmap(lambda x: ember.linalg.svdvals(x))(batch)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(batch.numpy(), compute_uv=False), rtol=1e-10)


# ----------------------------------------------------------------------------- users of the decompositions


def test_orthogonal_init_through_qr():
    w = ember.empty(5, 3)
    ember.nn.init.orthogonal_(w)
    np.testing.assert_allclose((w.mT @ w).numpy(), np.eye(3), atol=1e-5)
    w = ember.empty(3, 2, 4)
    ember.nn.init.orthogonal_(w, gain=2.0)
    f = w.reshape(3, 8)
    np.testing.assert_allclose((f @ f.mT).numpy(), 4 * np.eye(3), atol=1e-4)


def test_matrix_norm_nuc_and_torch_norm(torch):
    a = _rand(2, 3, 4)
    e, t = _pair(torch, a, True)
    ember.linalg.matrix_norm(e, "nuc").sum().backward()
    torch.linalg.matrix_norm(t, "nuc").sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7)
    np.testing.assert_allclose(ember.norm(e[0], "nuc").item(), torch.norm(t[0], "nuc").item(), rtol=1e-10)
    for ord in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf):
        np.testing.assert_allclose(ember.linalg.norm(e[0], ord).item(), torch.linalg.norm(t[0], ord).item(),
                                   rtol=1e-10, err_msg=str(ord))


def test_tensor_methods():
    a = ember.tensor(_wc(3, 3), dtype=D)
    np.testing.assert_allclose(a.det().item(), np.linalg.det(a.numpy()))
    np.testing.assert_allclose(a.inverse().numpy(), np.linalg.inv(a.numpy()))
    np.testing.assert_allclose(a.matrix_power(2).numpy(), a.numpy() @ a.numpy())
    lu, piv = a.lu()
    np.testing.assert_allclose(ember.lu_unpack(lu, piv)[0].numpy() @ ember.lu_unpack(lu, piv)[1].numpy()
                               @ ember.lu_unpack(lu, piv)[2].numpy(), a.numpy(), atol=1e-12)
    q, r = a.qr()
    np.testing.assert_allclose((q @ r).numpy(), a.numpy(), atol=1e-12)


def test_lowrank():
    a = ember.tensor(_rand(20, 4) @ _rand(4, 10, seed=1), dtype=D)
    u, s, v = ember.svd_lowrank(a, q=6)
    np.testing.assert_allclose((u * s.unsqueeze(-2) @ v.mT).numpy(), a.numpy(), atol=1e-8)
    np.testing.assert_allclose(s.numpy()[:4], np.linalg.svd(a.numpy(), compute_uv=False)[:4], rtol=1e-8)
    u, s, v = ember.pca_lowrank(a, q=4)
    c = a - a.mean(-2, keepdim=True)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(c.numpy(), compute_uv=False)[:4], rtol=1e-8)


def test_large_matrices_take_scipys_lapack(torch):
    """From 64 rows or columns on, cholesky/eigh/svd run SciPy's LAPACK matrix by matrix (NumPy's
    batched routines below): the same values, errors and gradients on both sides of the switch."""
    from ember.ops import linalg_solve as LS
    for n in (LS.BIG - 1, LS.BIG):
        a = _rand(2, n, n, seed=n)
        s = a @ a.swapaxes(-1, -2) + n * np.eye(n)
        e, t = _pair(torch, s, True)
        el, tl = ember.linalg.cholesky(e), torch.linalg.cholesky(t)
        np.testing.assert_allclose(_np(el), tl.detach().numpy(), rtol=1e-10, atol=1e-12)
        el.sin().sum().backward()
        tl.sin().sum().backward()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(_np(ember.linalg.cholesky(e, upper=True)),
                                   torch.linalg.cholesky(t, upper=True).detach().numpy(), rtol=1e-10, atol=1e-12)
        w, v = ember.linalg.eigh(e, UPLO="U")
        tw, tv = torch.linalg.eigh(t, UPLO="U")
        np.testing.assert_allclose(_np(w), tw.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(np.abs(_np(v)), np.abs(tv.detach().numpy()), atol=1e-8)
        r = _rand(2, n, n - 3, seed=1)
        er, tr_ = _pair(torch, r)
        for full in (False, True):
            u, sv, vh = ember.linalg.svd(er, full_matrices=full)
            tu, ts, tvh = torch.linalg.svd(tr_, full_matrices=full)
            assert tuple(u.shape) == tuple(tu.shape) and tuple(vh.shape) == tuple(tvh.shape)
            np.testing.assert_allclose(_np(sv), ts.numpy(), rtol=1e-10)
            np.testing.assert_allclose(_np(u[..., :n - 3] * sv.unsqueeze(-2) @ vh[..., :n - 3, :]), r, atol=1e-10)
        bad = s.copy()
        bad[1, 5, 5] = -1e6
        te = _err(lambda: torch.linalg.cholesky(torch.tensor(bad)))
        ee = _err(lambda: ember.linalg.cholesky(ember.tensor(bad)))
        assert str(ee) == str(te) and isinstance(ee, ember.linalg.LinAlgError)
        info = ember.linalg.cholesky_ex(ember.tensor(bad)).info
        assert info.tolist() == torch.linalg.cholesky_ex(torch.tensor(bad)).info.tolist()


def test_large_lu_and_qr_paths(torch):
    from ember.ops import linalg_solve as LS
    n = LS.BIG + 6
    a = _rand(2, n, n, seed=3) + 2 * np.eye(n)
    b = _rand(2, n, 3, seed=4)
    e, t = _pair(torch, a, True)
    eb, tb = _pair(torch, b)
    pairs = [(ember.linalg.det(e), torch.linalg.det(t)), (ember.linalg.slogdet(e)[1], torch.linalg.slogdet(t)[1]),
             (ember.linalg.inv(e), torch.linalg.inv(t)), (ember.linalg.solve(e, eb), torch.linalg.solve(t, tb)),
             (ember.linalg.qr(e[..., :-5])[1], torch.linalg.qr(t[..., :-5])[1])]
    for x, y in pairs:
        np.testing.assert_allclose(_np(x), y.detach().numpy(), rtol=1e-9, atol=1e-11)
    sum(x.sum() for x, _ in pairs[1:]).backward()
    sum(y.sum() for _, y in pairs[1:]).backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-9)
    s = a.copy()
    s[1, :, 3] = 0
    te = _err(lambda: torch.linalg.inv(torch.tensor(s)))
    ee = _err(lambda: ember.linalg.inv(ember.tensor(s)))
    assert str(ee) == str(te)
    assert ember.linalg.inv_ex(ember.tensor(s)).info.tolist() == [0, 4]
    assert ember.linalg.solve_ex(ember.tensor(s), ember.tensor(b)).info.tolist() == [0, 4]
    assert ember.linalg.det(ember.tensor(s))[1].item() == 0


# ----------------------------------------------------------------------------- complex input


def _crand(*shape, seed=0):
    r = np.random.default_rng(seed)
    return r.uniform(-1, 1, shape) + 1j * r.uniform(-1, 1, shape)


def _both(torch, fn, *arrays, grad=True):
    """fn(m, *tensors) in ember and torch: outputs and gradients of a real loss of the outputs."""
    res = []
    for m in (ember, torch):
        xs = [m.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
        out = fn(m, *xs)
        outs = out if isinstance(out, tuple) else (out,)
        vals = [o.detach().resolve_conj().numpy() for o in outs]
        gs = None
        if grad:
            loss = sum((m.view_as_real(o) if o.is_complex() else o).sin().sum() for o in outs
                       if o.dtype.is_floating_point or o.dtype.is_complex)
            gs = [g.resolve_conj().numpy() for g in m.autograd.grad(loss, xs)]
        res.append((vals, gs))
    return res


def _same(res, tol=1e-9):
    (ev, eg), (tv, tg) = res
    for a, b in zip(ev, tv):
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    for a, b in zip(eg or (), tg or ()):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["slogdet", "logdet", "logdet_hermitian", "cholesky", "cholesky_upper",
                                  "cholesky_inverse", "cholesky_inverse_upper", "vecdot", "vander",
                                  "householder_product", "ormqr", "matrix_norm_2", "matrix_norm_-2",
                                  "matrix_norm_nuc"])
def test_complex_input_matches_torch(torch, name):
    a = _crand(2, 3, 3)
    herm = a @ np.conj(np.swapaxes(a, -1, -2)) + 3 * np.eye(3)
    l_ = np.tril(a, -1) + np.eye(3) * (1 + np.abs(a))

    def chol_inv(m, x, upper=False):
        f = x.tril(-1) + m.diag_embed(x.diagonal(0, -2, -1).abs() + 1).to(x.dtype)
        return m.cholesky_inverse(f.mH if upper else f, upper=upper)
    cases = {
        "slogdet": (lambda m, x: tuple(m.linalg.slogdet(x)), [a]),
        "logdet": (lambda m, x: m.logdet(x), [a]),
        "logdet_hermitian": (lambda m, x: m.logdet(x @ x.mH + 3 * m.eye(3)), [a]),
        "cholesky": (lambda m, x: m.linalg.cholesky(x @ x.mH + 3 * m.eye(3)), [a]),
        "cholesky_upper": (lambda m, x: m.linalg.cholesky_ex(x @ x.mH + 3 * m.eye(3), upper=True)[0], [a]),
        "cholesky_inverse": (chol_inv, [a]),
        "cholesky_inverse_upper": (lambda m, x: chol_inv(m, x, True), [a]),
        "vecdot": (lambda m, x, y: m.linalg.vecdot(x, y, dim=-2), [a, _crand(3, 3, seed=1)]),
        "vander": (lambda m, x: m.linalg.vander(x, N=4), [a[0, 0]]),
        "householder_product": (lambda m, x, t: m.linalg.householder_product(x, t), [a, _crand(2, 2, seed=2)]),
        "ormqr": (lambda m, x, t, c: m.ormqr(x, t, c, transpose=True), [a, _crand(2, 3, seed=2), _crand(2, 3, 2)]),
        "matrix_norm_2": (lambda m, x: m.linalg.matrix_norm(x, 2), [a]),
        "matrix_norm_-2": (lambda m, x: m.linalg.matrix_norm(x, -2), [a]),
        "matrix_norm_nuc": (lambda m, x: m.linalg.matrix_norm(x, "nuc"), [a]),
    }
    fn, arrays = cases[name]
    _same(_both(torch, fn, *arrays))
    assert herm.shape == (2, 3, 3) and l_.shape == (2, 3, 3)
    xs = tuple(ember.from_numpy(x.copy()).requires_grad_(True) for x in arrays)
    assert gradcheck(lambda *x: fn(ember, *x), xs, check_forward_ad=True)


def test_complex_vecdot_conjugates_the_first_argument():
    x, y = ember.tensor([1j, 2.0]), ember.tensor([1j, 1.0 + 0j])
    assert ember.linalg.vecdot(x, y).item() == pytest.approx(3.0)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_complex_lstsq_matches_torch(torch, driver):
    a, b = _crand(2, 5, 3), _crand(2, 5, 2, seed=1)
    eo = ember.linalg.lstsq(ember.from_numpy(a.copy()), ember.from_numpy(b.copy()), driver=driver)
    to = torch.linalg.lstsq(torch.from_numpy(a.copy()), torch.from_numpy(b.copy()), driver=driver)
    for x, y in zip(eo, to):
        assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1] and tuple(x.shape) == tuple(y.shape)
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-9, atol=1e-9)
    if driver != "gelsy":  # the residuals are differentiable (PyTorch: for the drivers that compute them)
        _same(_both(torch, lambda m, x, y: tuple(m.linalg.lstsq(x, y, driver=driver)[:2]), a, b))
        xs = (ember.from_numpy(a.copy()).requires_grad_(True), ember.from_numpy(b.copy()).requires_grad_(True))
        assert gradcheck(lambda x, y: tuple(ember.linalg.lstsq(x, y, driver=driver)[:2]), xs, check_forward_ad=True)


def test_complex_logdet_of_a_singular_matrix_as_torch(torch):
    for m in ([[0, 0], [0, 0]], [[0, 1], [1, 0]], [[1j, 0], [0, 2]]):
        e = ember.logdet(ember.tensor(m, dtype=ember.complex128)).item()
        t = torch.logdet(torch.tensor(m, dtype=torch.complex128)).item()
        np.testing.assert_equal(e, t)


def test_complex_slogdet_sign_gradient(torch):
    """The sign of a complex determinant carries a gradient (d sign = sign i Im tr(A^{-1} dA))."""
    a = _crand(3, 3, seed=5)
    _same(_both(torch, lambda m, x: m.linalg.slogdet(x).sign, a))
    _, et = ember.func.jvp(lambda x: tuple(ember.linalg.slogdet(x)), (ember.from_numpy(a.copy()),),
                           (ember.from_numpy(_crand(3, 3, seed=6)),))
    _, tt = torch.func.jvp(lambda x: tuple(torch.linalg.slogdet(x)), (torch.from_numpy(a.copy()),),
                           (torch.from_numpy(_crand(3, 3, seed=6)),))
    for x, y in zip(et, tt):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- op_db findings


def test_svd_forward_ad_full_matrices_non_square_as_torch(torch):
    """Only the first k columns of U (rows of Vh) have a tangent; the completed ones get zeros."""
    a, t = _rand(3, 5), _rand(3, 5, seed=1)
    for shape in ((3, 5), (5, 3)):
        x, dx = a.reshape(shape), t.reshape(shape)
        _, et = ember.func.jvp(lambda y: tuple(ember.linalg.svd(y, full_matrices=True)), (ember.tensor(x),),
                               (ember.tensor(dx),))
        _, tt = torch.func.jvp(lambda y: tuple(torch.linalg.svd(y, full_matrices=True)), (torch.tensor(x),),
                               (torch.tensor(dx),))
        k = min(shape)
        np.testing.assert_allclose(et[1].numpy(), tt[1].numpy(), atol=1e-12)
        for e, tr in ((et[0], tt[0]), (et[2].mT, tt[2].mT)):  # columns of U and V, up to their signs
            e, tr = e.numpy(), tr.numpy()
            np.testing.assert_array_equal(e[:, k:], 0)
            np.testing.assert_array_equal(tr[:, k:], 0)
    _, et = ember.func.jvp(lambda y: tuple(ember.linalg.svd(y)), (ember.zeros(0, 3, dtype=ember.float64),),
                           (ember.zeros(0, 3, dtype=ember.float64),))
    assert [tuple(x.shape) for x in et] == [(0, 0), (0,), (3, 3)]


def test_matrix_rank_and_pinv_batch_tensor_tolerances_under_vmap(torch):
    a = _rand(3, 4, 4) @ np.diag([1.0, 0.5, 1e-3, 1e-9])
    tols = np.array([1e-12, 1e-2, 0.6])
    for name, f in (("matrix_rank", lambda m: lambda x, t: m.linalg.matrix_rank(x, atol=t)),
                    ("pinv_both", lambda m: lambda x, t: m.linalg.pinv(x, atol=t, rtol=t)),
                    ("matrix_rank_rtol", lambda m: lambda x, t: m.linalg.matrix_rank(x, rtol=t)),
                    ("pinv", lambda m: lambda x, t: m.linalg.pinv(x, rtol=t)),
                    ("pinv_atol", lambda m: lambda x, t: m.linalg.pinv(x, atol=t))):
        e = ember.func.vmap(f(ember))(ember.tensor(a), ember.tensor(tols)).numpy()
        loop = np.stack([f(ember)(ember.tensor(a[i]), ember.tensor(tols[i])).numpy() for i in range(3)])
        t = torch.func.vmap(f(torch))(torch.tensor(a), torch.tensor(tols)).numpy()
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9, err_msg=name)
        np.testing.assert_allclose(e, loop, rtol=1e-12, atol=1e-12, err_msg=name)
    # a batch of matrices with one tolerance per matrix, no vmap
    r = ember.linalg.matrix_rank(ember.tensor(a), atol=ember.tensor(tols))
    assert r.tolist() == torch.linalg.matrix_rank(torch.tensor(a), atol=torch.tensor(tols)).tolist()


def test_matrix_exp_float32_is_float32_exact():
    """float32 input computes in float64 and rounds once: every element right to float32 rounding,
    even those far below the matrix's norm (scaling and squaring in float32 loses digits there)."""
    a = np.random.default_rng(0).uniform(-3, 3, (4, 5, 5)).astype(np.float32)
    exact = ember.linalg.matrix_exp(ember.tensor(a.astype(np.float64))).numpy()
    e = ember.linalg.matrix_exp(ember.tensor(a)).numpy()
    assert e.dtype == np.float32
    np.testing.assert_allclose(e, exact, rtol=2 * np.finfo(np.float32).eps, atol=0)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 3)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_complex_svd_forward_mode_matches_pytorch(torch, shape, full_matrices):
    """Regression: complex svd's tangents left out the phase of each singular pair (U S Vh's tangent
    was not dA) and gave a complex dS; PyTorch splits i Im(diag(U^H dA V)) / s between U and V."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    t = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    outs = {}
    for lib in (ember, torch):
        o, dt = lib.func.jvp(lambda x: lib.linalg.svd(x, full_matrices=full_matrices), (lib.tensor(a),),
                             (lib.tensor(t),))
        _, dr = lib.func.jvp(lambda x: (lambda u, s, vh: u @ lib.diag_embed(s.to(x.dtype)) @ vh)(
            *lib.linalg.svd(x, full_matrices=False)), (lib.tensor(a),), (lib.tensor(t),))
        outs[lib] = [v.numpy() for v in (*o, *dt)] + [dr.numpy()]
    np.testing.assert_allclose(outs[ember][-1], t, atol=1e-12)   # the tangent of U S Vh is dA itself
    assert outs[ember][4].dtype == np.float64                       # dS is real
    for e, p in zip(outs[ember], outs[torch]):
        np.testing.assert_allclose(e, p, atol=1e-12)
