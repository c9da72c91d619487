"""op_db entries of the special-function family (src/ember/ops/special.py): torch.special and its
torch.* aliases. Inputs stay inside each function's domain and away from its poles."""
import numpy as np

import op_db
from op_db import add, fixed, unary, binary, S, U, away, ints, UNARY_SHAPES, BINARY_SHAPES


def _pos(r, s):
    return U(r, s, 0.3, 3.0)


def _gamma_dom(r, s):
    """Positive values and a few negative non-integers (the gamma family's poles are 0, -1, ...)."""
    x = U(r, s, 0.2, 3.5)
    if x.size:
        flat = x.reshape(-1)
        flat[::3] = -away(r, flat[::3].shape, 0.1, 2.9, bad=(1.0, 2.0, 3.0), margin=0.15)
    return x


def _special(m):
    return m.special


def _sp(name):
    return lambda m, *a, **k: getattr(m.special, name)(*a, **k)


# torch.* names (ops whose aliases live in both namespaces)
add("erfc", fn=lambda m, x: m.erfc(x), samples=unary(U))
add("erfc", "special_erfc", fn=_sp("erfc"), samples=unary(U, shapes=[(4,)]))
add("erfc", "erfc_method", fn=lambda m, x: x.erfc(), samples=unary(U, shapes=[(3,)]))
add("lgamma", fn=lambda m, x: m.lgamma(x), samples=unary(_gamma_dom))
add("lgamma", "special_gammaln", fn=_sp("gammaln"), samples=unary(_gamma_dom, shapes=[(5,)]))
add("lgamma", "mvlgamma", fn=lambda m, x: m.mvlgamma(x, 3), samples=unary(lambda r, s: U(r, s, 1.2, 4.0)))
add("lgamma", "special_multigammaln", fn=lambda m, x: m.special.multigammaln(x, 2),
    samples=unary(lambda r, s: U(r, s, 0.7, 4.0), shapes=[(2, 3)]))
add("digamma", fn=lambda m, x: m.digamma(x), samples=unary(_gamma_dom), fd_tol=1e-4)
add("digamma", "special_psi", fn=_sp("psi"), samples=unary(_gamma_dom, shapes=[(4,)]), fd_tol=1e-4)
add("polygamma", fn=lambda m, x: m.polygamma(1, x), samples=unary(_pos), fd_tol=1e-4)
add("polygamma", "polygamma_2", fn=lambda m, x: m.special.polygamma(2, x),
    samples=unary(lambda r, s: U(r, s, 0.5, 3.0), shapes=[(5,), (2, 3)]), fd_tol=1e-4)
add("polygamma", "polygamma_0", fn=lambda m, x: m.polygamma(0, x), samples=unary(_pos, shapes=[(4,)]),
    fd_tol=1e-4)
add("polygamma", "polygamma_method", fn=lambda m, x: x.polygamma(3), samples=unary(_pos, shapes=[(3,)]),
    fd_tol=1e-3, rtol=1e-6)
add("i0", fn=lambda m, x: m.i0(x), samples=unary(U))
add("i0", "special_i0", fn=_sp("i0"), samples=unary(U, shapes=[(4,)]))
add("sinc", fn=lambda m, x: m.sinc(x), samples=unary(U))
# at 0 (forward only here: PyTorch's rule gives slope 0 there and a flat second derivative;
# tests/test_special.py compares the gradient at 0 with PyTorch's)
add("sinc", "sinc_zero", fn=lambda m, x: m.sinc(x),
    samples=fixed(lambda r: S((np.array([0.0, 0.5, -1.5, 2.0]),), grad=False)))
add("igamma", fn=lambda m, a, x: m.igamma(a, x),
    samples=fixed(*[(lambda sa, sb: lambda r: S((_pos(r, sa), _pos(r, sb)), nondiff=(0,)))(sa, sb)
                    for sa, sb in BINARY_SHAPES]), fd_tol=1e-4)
add("igamma", "special_gammainc", fn=_sp("gammainc"),
    samples=fixed(lambda r: S((_pos(r, (2, 3)), _pos(r, (2, 3))), nondiff=(0,)),
                  lambda r: S((_pos(r, (1,)), _pos(r, (3,))), nondiff=(0,))),
    fd_tol=1e-4)
add("igammac", fn=lambda m, a, x: m.igammac(a, x),
    samples=fixed(lambda r: S((_pos(r, (2, 3)), _pos(r, (3,))), nondiff=(0,)),
                  lambda r: S((_pos(r, (0, 3)), _pos(r, (3,))), nondiff=(0,))), fd_tol=1e-4)
add("igammac", "special_gammaincc", fn=_sp("gammaincc"),
    samples=fixed(lambda r: S((_pos(r, (4,)), _pos(r, (4,))), nondiff=(0,))), fd_tol=1e-4)

# torch.special only
add("special_erfcx", fn=_sp("erfcx"), samples=unary(lambda r, s: U(r, s, -2, 4)))
add("special_i0e", fn=_sp("i0e"), samples=unary(lambda r, s: away(r, s, -3, 3)))
add("special_i1", fn=_sp("i1"), samples=unary(lambda r, s: U(r, s, -3, 3)))
add("special_i1", "special_i1_zero", fn=_sp("i1"), samples=fixed(lambda r: S((np.array([0.0, 1.0]),))))
add("special_i1e", fn=_sp("i1e"), samples=unary(lambda r, s: away(r, s, -3, 3)))
add("special_ndtr", fn=_sp("ndtr"), samples=unary(lambda r, s: U(r, s, -3, 3)))
add("special_ndtri", fn=_sp("ndtri"), samples=unary(lambda r, s: U(r, s, 0.05, 0.95)), fd_tol=1e-4)
add("special_log_ndtr", fn=_sp("log_ndtr"), samples=unary(lambda r, s: U(r, s, -4, 3)))
add("special_entr", fn=_sp("entr"), samples=unary(_pos))
add("special_entr", "special_entr_edges", fn=_sp("entr"), grad=False,
    samples=fixed(lambda r: S((np.array([0.0, -1.0, 0.5, np.inf, np.nan]),))))
add("special_zeta", fn=_sp("zeta"),
    samples=fixed(lambda r: S((U(r, (2, 3), 1.5, 4.0), _pos(r, (2, 3))), nondiff=(0,)),
                  lambda r: S((U(r, (3,), 1.5, 4.0), _pos(r, (2, 1))), nondiff=(0,)),
                  lambda r: S((np.array(2.0), _pos(r, (4,))), nondiff=(0,))), fd_tol=1e-4)
add("special_xlog1py", fn=_sp("xlog1py"),
    samples=binary(U, lambda r, s: U(r, s, -0.5, 2.0), scalars=(1.5,)))
add("special_xlog1py", "special_xlog1py_zero", fn=_sp("xlog1py"), grad=False,
    samples=fixed(lambda r: S((np.array([0.0, 0.0, 0.0, 1.0]), np.array([-2.0, np.nan, 1.0, -1.0])))))

_NONDIFF = {
    "bessel_j0": U, "bessel_j1": U, "bessel_y0": _pos, "bessel_y1": _pos,
    "modified_bessel_i0": U, "modified_bessel_i1": U, "modified_bessel_k0": _pos,
    "modified_bessel_k1": _pos, "scaled_modified_bessel_k0": _pos, "scaled_modified_bessel_k1": _pos,
    "spherical_bessel_j0": U, "airy_ai": lambda r, s: U(r, s, -4, 3),
}
for _n, _g in _NONDIFF.items():
    # (PyTorch's airy_ai is off by up to 2e-7 near x = -1.5; SciPy's agrees with mpmath to 1e-16)
    add("special_" + _n, fn=_sp(_n), samples=unary(_g), grad=False,
        **(dict(rtol=1e-5, atol=1e-6) if _n == "airy_ai" else {}))
    op_db.NON_DIFFERENTIABLE.append("special_" + _n)

_POLY = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
         "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
         "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")


def _poly_samples(shifted):
    lo, hi = (0.0, 1.0) if shifted else (-1.0, 1.0)
    return fixed(lambda r: S((U(r, (2, 3), lo, hi), ints(r, (2, 3), -1, 7))),
                 lambda r: S((U(r, (4,), lo - 0.5, hi + 0.5), ints(r, (2, 1), 0, 6))),
                 lambda r: S((U(r, (5,), lo, hi), 3)),
                 lambda r: S((U(r, (3,), lo, hi), np.array([2.7, 0.0, 5.2]))))


for _n in _POLY:
    add("special_" + _n, fn=_sp(_n), samples=_poly_samples(_n.startswith("shifted")), grad=False,
        rtol=1e-6, atol=1e-6)
    op_db.NON_DIFFERENTIABLE.append("special_" + _n)
