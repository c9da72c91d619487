"""op_db entries of issue 15's new primitives (pointwise numbers, histograms, selection, views,
scatters): loaded by tests/op_db.py's _load_family_files."""
import numpy as np

import op_db
from op_db import add, fixed, unary, binary, away, distinct, ints, S, U

# ----------------------------------------------------------------------------- pointwise numbers

add("acosh", fn=lambda m, x: m.acosh(x), samples=unary(lambda r, s: U(r, s, 1.2, 4.0)))
add("copysign", fn=lambda m, a, b: m.copysign(a, b),
    samples=binary(gen_a=lambda r, s: away(r, s), gen_b=lambda r, s: away(r, s)))
add("copysign", "copysign_scalar", fn=lambda m, a: m.copysign(a, -1.5), samples=unary(lambda r, s: away(r, s)))
add("gcd", fn=lambda m, a, b: m.gcd(a, b), grad=False,
    samples=fixed(lambda r: S((ints(r, (2, 3), -20, 20), ints(r, (3,), -20, 20))),
                  lambda r: S((ints(r, (4,), 0, 9, np.int32), ints(r, (4,), 0, 9, np.int32)))))
add("lcm", fn=lambda m, a, b: m.lcm(a, b), grad=False,
    samples=fixed(lambda r: S((ints(r, (2, 3), -20, 20), ints(r, (3,), -20, 20)))))
add("nextafter", fn=lambda m, a, b: m.nextafter(a, b), gradgrad=False,
    samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (3,)))), lambda r: S((np.zeros(3), np.array([1.0, -1.0, 0.0])), grad=False, desc="input == other (no finite difference)")))
add("frexp", fn=lambda m, x: m.frexp(x),
    samples=fixed(lambda r: S((away(r, (2, 3), -100, 100, bad=(0.0,) + tuple(float(2 ** k) * s for k in range(-3, 8)
                                                                              for s in (1, -1)), margin=0.05),)),
                  lambda r: S((away(r, (4,), bad=(0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0)),))))


# ----------------------------------------------------------------------------- histograms

add("histc", fn=lambda m, x, **kw: m.histc(x, **kw), grad=False,
    samples=fixed(lambda r: S((U(r, (20,)),), {"bins": 5}), lambda r: S((U(r, (3, 4)),), {"bins": 4, "min": -1, "max": 1}),
                  lambda r: S((np.ones(3),), {"bins": 4})))
add("histogram", fn=lambda m, x, *a, **kw: tuple(m.histogram(x, *a, **kw)), grad=False,
    samples=fixed(lambda r: S((U(r, (20,)), 5)), lambda r: S((U(r, (3, 4)), 4), {"range": (-1.0, 1.0), "density": True}),
                  lambda r: S((U(r, (10,)), np.array([-2.0, -0.5, 0.0, 2.0])), {"weight": None}),
                  lambda r: S((U(r, (6,)), 3), {"weight": np.arange(6.0)}) if False else
                  S((U(r, (6,)), np.array([-1.0, 0.0, 1.0])))))

# ----------------------------------------------------------------------------- scatter_reduce prod/amax/amin


def _sr_idx(r):
    return np.array([[0, 1, 0], [2, 0, 2]])


for _red in ("prod", "amax", "amin"):
    for _inc in (True, False):
        add("scatter_reduce", f"scatter_reduce_{_red}_{'self' if _inc else 'noself'}",
            fn=(lambda red, inc: lambda m, x, i, s: m.scatter_reduce(x, 1, i, s, red, include_self=inc))(_red, _inc),
            samples=fixed(lambda r: S((distinct(r, (2, 4)), _sr_idx(r), distinct(r, (2, 3), 2.5, 4.0))),
                          lambda r: S((away(r, (2, 4), margin=0.3), _sr_idx(r), away(r, (2, 3), margin=0.3)))),
            gradgrad=_red != "prod")
add("scatter_reduce", "scatter_reduce_prod_zeros", fn=lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "prod"),
    samples=fixed(lambda r: S((np.array([0.0, 2.0, 3.0]), np.array([0, 0, 1, 2]), np.array([0.5, 1.5, 0.0, 2.0])),
                              desc="zeros in a group")), grad=False)

# Tensor.detach() of a tensor a transform wraps runs the registry's detach
add("detach", fn=lambda m, x: m.func.vmap(lambda a: a.detach() * 2)(x), grad=False,
    samples=fixed(lambda r: S((U(r, (3, 4)),)), lambda r: S((U(r, (2,)),))))

op_db.NON_DIFFERENTIABLE.extend(["gcd", "lcm", "histc", "histogram", "detach"])

# ----------------------------------------------------------------------------- searchsorted (a primitive with a
# batching rule: each vmap row searches its own sorted sequence)


def _sorted(r, shape):
    return np.sort(U(r, shape), axis=-1)


add("searchsorted", fn=lambda m, s, v, **kw: m.searchsorted(s, v, **kw), grad=False,
    samples=fixed(lambda r: S((_sorted(r, (6,)), U(r, (2, 3)))),
                  lambda r: S((_sorted(r, (2, 5)), U(r, (2, 4))), {"right": True, "out_int32": True}),
                  lambda r: S((np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 0.5, 3.5])), {"side": "right"})))
add("searchsorted", "bucketize", fn=lambda m, v, b: m.bucketize(v, b), grad=False,
    samples=fixed(lambda r: S((U(r, (3, 2)), _sorted(r, (5,))))))
add("searchsorted", "searchsorted_scalar", fn=lambda m, s: m.searchsorted(s, 0.25), grad=False,
    samples=fixed(lambda r: S((_sorted(r, (7,)),))))
op_db.NON_DIFFERENTIABLE.append("searchsorted")

# ----------------------------------------------------------------------------- primitives with batching rules of
# their own (issue 15, round 3): cummax/cummin's index scan, signbit, isin, bincount, argwhere

add("cum_extreme_index", "cummax", fn=lambda m, x, d: m.cummax(x, d), gradgrad=False,
    samples=fixed(lambda r: S((U(r, (3, 4)), 1)), lambda r: S((np.array([1.0, 3.0, 2.0, 3.0, 0.5]), 0), grad=False,
                                                                desc="ties (the latest index, as PyTorch)")))
add("cum_extreme_index", "cummin", fn=lambda m, x, d: m.cummin(x, d), gradgrad=False,
    samples=fixed(lambda r: S((U(r, (3, 4)), 0)), lambda r: S((ints(r, (6,), 0, 3), 0), grad=False)))
add("signbit", fn=lambda m, x: m.signbit(x), grad=False,
    samples=fixed(lambda r: S((np.array([-0.0, 0.0, -1.5, 2.0, -np.inf, np.nan]),)), lambda r: S((ints(r, (3,), -2, 2),))))
add("isin", fn=lambda m, a, b, **k: m.isin(a, b, **k), grad=False,
    samples=fixed(lambda r: S((ints(r, (3, 4), 0, 6), ints(r, (5,), 0, 6))),
                  lambda r: S((ints(r, (4,), 0, 6), ints(r, (2, 2), 0, 6)), {"invert": True})))
add("bincount", fn=lambda m, x, *w, **k: m.bincount(x, *w, **k), grad=False,
    samples=fixed(lambda r: S((ints(r, (8,), 0, 5),)), lambda r: S((ints(r, (6,), 0, 4), U(r, (6,))), {"minlength": 7})))
add("argwhere", fn=lambda m, x: m.argwhere(x), grad=False,
    samples=fixed(lambda r: S((ints(r, (3, 4), 0, 2),)), lambda r: S((U(r, (5,)).round(),))))
op_db.NON_DIFFERENTIABLE.extend(["cum_extreme_index", "signbit", "isin", "bincount", "argwhere"])

# ----------------------------------------------------------------------------- samplers with tensor parameters
# normal(mean, std) under a fixed seed: PyTorch's draws and its zero gradients (not the reparametrised
# derivative, so no finite-difference check)
add("random_draws", "normal_tensor_params", fn=lambda m, mu, sd: (m.manual_seed(0), m.normal(mu, sd))[1],
    fd_tol=None, gradgrad=False,
    samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (2, 3), 0.5, 2.0))), lambda r: S((U(r, (3,)), U(r, (2, 3), 0.5, 2.0)))))
