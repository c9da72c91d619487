"""ember.distributions against torch.distributions: log_prob, entropy, mean, mode, variance,
cdf/icdf and the gradients of log_prob for the same parameters; rsample gradients (pathwise,
statistically and against PyTorch's own pathwise gamma derivative); sample moments with
tolerances from the sample size; KL divergences; constraints, transforms, validation errors."""
import math

import numpy as np
import pytest

import ember
import ember.distributions as ED

R = np.random.default_rng(0)


def _pos(*s, lo=0.5, hi=2.0):
    return R.uniform(lo, hi, s)


def _probs(*s):
    p = R.uniform(0.2, 1.0, s)
    return p / p.sum(-1, keepdims=True)


# name -> (positional params as numpy float64 arrays or numbers, keyword params, has cdf/icdf)
SPECS = {
    "Normal": ((R.normal(size=3), _pos(3)), {}, True),
    "LogNormal": ((R.normal(size=3), _pos(3)), {}, True),
    "Uniform": ((np.array([-1.0, 0.0, 0.5]), np.array([0.5, 2.0, 3.0])), {}, True),
    "Exponential": ((_pos(3),), {}, True),
    "Laplace": ((R.normal(size=3), _pos(3)), {}, True),
    "Cauchy": ((R.normal(size=3), _pos(3)), {}, True),
    "Gamma": ((_pos(3), _pos(3)), {}, False),
    "Chi2": ((_pos(3, lo=1, hi=4),), {}, False),
    "Beta": ((_pos(3), _pos(3)), {}, False),
    "Dirichlet": ((_pos(2, 4),), {}, False),
    "StudentT": ((_pos(3, lo=2.5, hi=5), R.normal(size=3), _pos(3)), {}, False),
    "HalfNormal": ((_pos(3),), {}, True),
    "HalfCauchy": ((_pos(3),), {}, True),
    "Gumbel": ((R.normal(size=3), _pos(3)), {}, False),
    "Weibull": ((_pos(3), _pos(3, lo=1.0, hi=3.0)), {}, False),
    "Pareto": ((_pos(3), _pos(3, lo=2.5, hi=4.0)), {}, False),
    "VonMises": ((R.normal(size=3), _pos(3)), {}, False),
    "Bernoulli": ((), {"probs": R.uniform(0.1, 0.9, 4)}, False),
    "Bernoulli_logits": ((), {"logits": R.normal(size=4)}, False),
    "Binomial": ((10,), {"probs": R.uniform(0.1, 0.9, 3)}, False),
    "Binomial_logits": ((6,), {"logits": R.normal(size=3)}, False),
    "Categorical": ((), {"probs": _probs(2, 5)}, False),
    "Categorical_logits": ((), {"logits": R.normal(size=(3, 4))}, False),
    "OneHotCategorical": ((), {"probs": _probs(2, 4)}, False),
    "Multinomial": ((7,), {"probs": _probs(2, 4)}, False),
    "Poisson": ((_pos(3, lo=0.5, hi=6),), {}, False),
    "Geometric": ((), {"probs": R.uniform(0.2, 0.9, 3)}, False),
    "NegativeBinomial": ((_pos(3, lo=1, hi=5),), {"probs": R.uniform(0.2, 0.8, 3)}, False),
    "ContinuousBernoulli": ((), {"probs": np.array([0.2, 0.4995, 0.7, 0.9])}, True),
    "RelaxedBernoulli": ((np.array(0.7),), {"probs": R.uniform(0.2, 0.8, 3)}, False),
    "RelaxedOneHotCategorical": ((np.array(0.8),), {"probs": _probs(2, 3)}, False),
}

# (property, families where PyTorch's property is undefined or raises)
NO_ENTROPY = {"Gumbel_", "Weibull_", "RelaxedBernoulli", "RelaxedOneHotCategorical", "LogNormal_"}
NO_MODE = {"RelaxedBernoulli", "RelaxedOneHotCategorical", "ContinuousBernoulli", "Multinomial"}
NO_MOMENTS = {"RelaxedBernoulli", "RelaxedOneHotCategorical"}


def _cls(name):
    return name.split("_")[0]


def _make(lib, name, requires_grad=False):
    args, kw, _ = SPECS[name]
    mod = ED if lib == "ember" else __import__("torch").distributions
    tmod = ember if lib == "ember" else __import__("torch")

    def conv(v):
        if isinstance(v, np.ndarray):
            t = tmod.tensor(v, dtype=tmod.float64)
            return t.requires_grad_() if requires_grad else t
        return v
    cargs = [conv(a) for a in args]
    ckw = {k: conv(v) for k, v in kw.items()}
    return getattr(mod, _cls(name))(*cargs, **ckw), cargs + list(ckw.values())


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b, rtol=1e-9, atol=1e-10, msg=""):
    if msg.startswith("VonMises"):  # PyTorch's log I0 is a polynomial fit, good to ~1e-7; SciPy's i0e is exact
        rtol, atol = max(rtol, 1e-6), max(atol, 1e-6)
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol, equal_nan=True, err_msg=msg)


def _values(td, name, torch):
    torch.manual_seed(0)
    v = td.sample((5,))
    if name == "VonMises":
        v = torch.remainder(v + math.pi, 2 * math.pi) - math.pi
    return v


@pytest.mark.parametrize("name", sorted(SPECS))
def test_log_prob_and_properties_match_torch(name, torch):
    ed, _ = _make("ember", name)
    td, _ = _make("torch", name)
    assert tuple(ed.batch_shape) == tuple(td.batch_shape)
    assert tuple(ed.event_shape) == tuple(td.event_shape)
    assert ed.has_rsample == td.has_rsample, name
    v = _values(td, name, torch)
    _close(ed.log_prob(ember.tensor(v.numpy())), td.log_prob(v), msg=f"{name} log_prob")
    if name not in NO_MOMENTS:
        for prop in ("mean", "variance", "stddev"):
            _close(getattr(ed, prop), getattr(td, prop), msg=f"{name} {prop}")
    if name not in NO_MODE:
        _close(ed.mode, td.mode, msg=f"{name} mode")
    try:
        te = td.entropy()
    except NotImplementedError:
        te = None
    if te is not None:
        # (PyTorch's Multinomial entropy takes lgamma(total_count + 1) in float32)
        _close(ed.entropy(), te, rtol=1e-6 if name == "Multinomial" else 1e-8, msg=f"{name} entropy")
    assert tuple(ed.sample((2,)).shape) == tuple(td.sample((2,)).shape)
    if SPECS[name][2]:
        _close(ed.cdf(ember.tensor(v.numpy())), td.cdf(v), msg=f"{name} cdf")
        u = torch.tensor(R.uniform(0.05, 0.95, tuple(td.batch_shape)), dtype=torch.float64)
        _close(ed.icdf(ember.tensor(u.numpy())), td.icdf(u), msg=f"{name} icdf")


@pytest.mark.parametrize("name", sorted(n for n in SPECS if n not in ("Binomial", "Binomial_logits", "Multinomial")))
def test_log_prob_gradients_match_torch(name, torch):
    ed, eparams = _make("ember", name, requires_grad=True)
    td, tparams = _make("torch", name, requires_grad=True)
    v = _values(td, name, torch).detach()
    cot = R.standard_normal(tuple(td.log_prob(v).shape))
    eparams = [p for p in eparams if isinstance(p, ember.Tensor)]
    tparams = [p for p in tparams if isinstance(p, torch.Tensor)]
    eg = ember.autograd.grad((ed.log_prob(ember.tensor(v.numpy())) * ember.tensor(cot)).sum(), eparams,
                             allow_unused=True)
    tg = torch.autograd.grad((td.log_prob(v) * torch.tensor(cot)).sum(), tparams, allow_unused=True)
    for a, b in zip(eg, tg):
        if b is None:
            assert a is None or not np.any(_np(a))
            continue
        _close(a, b, rtol=1e-8, atol=1e-10, msg=name)


def test_log_prob_gradcheck():
    loc = ember.tensor([0.3, -1.0], dtype=ember.float64, requires_grad=True)
    scale = ember.tensor([1.2, 0.7], dtype=ember.float64, requires_grad=True)
    x = ember.tensor([0.5, 0.1], dtype=ember.float64)
    assert ember.autograd.gradcheck(lambda m, s: ED.StudentT(3.0, m, s).log_prob(x), (loc, scale))
    a = ember.tensor([0.8, 2.5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda c: ED.Gamma(c, 1.5).log_prob(x.abs() + 0.2), (a,))
    assert ember.autograd.gradcheck(lambda c: ED.Gamma(c, 1.5).entropy(), (a,))


# ----------------------------------------------------------------------------- sampling

MOMENT_N = 20000


@pytest.mark.parametrize("name", sorted(n for n in SPECS if n not in NO_MOMENTS  # (no finite mean:)
                                        and n not in ("Cauchy", "HalfCauchy", "VonMises", "Categorical",
                                                      "Categorical_logits")))
def test_sample_moments(name, torch):
    ember.manual_seed(1)
    ed, _ = _make("ember", name)
    x = _np(ed.sample((MOMENT_N,))).astype(np.float64)
    mean, var = _np(ed.mean), _np(ed.variance)
    # the sample mean's sd is sqrt(var / n); 5 sd (a false alarm about once in 2 million)
    assert np.all(np.abs(x.mean(0) - mean) <= 5 * np.sqrt(var / MOMENT_N) + 1e-12), name
    # the sample variance's sd ~ sqrt((m4 - var^2) / n); bounded with the empirical 4th moment
    m4 = ((x - mean) ** 4).mean(0)
    assert np.all(np.abs(x.var(0) - var) <= 6 * np.sqrt(np.maximum(m4 - var ** 2, 0) / MOMENT_N) + 1e-9), name
    assert bool(ed.support.check(ember.tensor(x)).all()), name


def test_von_mises_and_cauchy_samples_by_their_cdf_quantiles():
    ember.manual_seed(2)
    d = ED.VonMises(ember.tensor([0.5], dtype=ember.float64), ember.tensor([2.0], dtype=ember.float64))
    x = _np(d.sample((MOMENT_N,)))[:, 0]
    # circular mean and mean resultant length I1(k)/I0(k)
    from scipy.special import i0e, i1e
    np.testing.assert_allclose(np.angle(np.exp(1j * x).mean()), 0.5, atol=0.03)
    np.testing.assert_allclose(np.abs(np.exp(1j * x).mean()), i1e(2.0) / i0e(2.0), atol=0.02)
    c = ED.Cauchy(ember.tensor([1.0], dtype=ember.float64), ember.tensor([2.0], dtype=ember.float64))
    y = _np(c.sample((MOMENT_N,)))[:, 0]
    np.testing.assert_allclose(np.median(y), 1.0, atol=0.1)
    np.testing.assert_allclose(np.quantile(y, 0.75) - np.quantile(y, 0.25), 4.0, rtol=0.06)


def test_standard_gamma_pathwise_gradient_matches_torch(torch):
    from ember.distributions._gamma_sampling import standard_gamma_grad
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 10.0, 80.0, 500.0])
    torch.manual_seed(0)
    for _ in range(3):
        ta = torch.tensor(alpha)
        x = torch._standard_gamma(ta)
        want = torch._standard_gamma_grad(ta, x).numpy()
        got = standard_gamma_grad(x.numpy(), alpha)
        # (PyTorch's derivative is a fitted approximation, off by up to ~1e-3 relative at tiny alpha)
        np.testing.assert_allclose(got, want, rtol=5e-3, err_msg=str(x))


def test_standard_gamma_derivative_against_mpmath():
    """ember's dx/dalpha agrees with the exact implicit derivative to 1e-9 (PyTorch's to ~1e-4)."""
    mpmath = pytest.importorskip("mpmath")
    from ember.distributions._gamma_sampling import standard_gamma_grad
    mpmath.mp.dps = 30
    for a, x in [(1e-3, 0.25), (0.05, 1e-12), (0.05, 0.78), (1.0, 1.25), (3.0, 9.0), (50.0, 45.0), (50.0, 80.0)]:
        P = lambda aa: mpmath.gammainc(aa, 0, x, regularized=True)  # noqa: E731
        pdf = mpmath.mpf(x) ** (a - 1) * mpmath.exp(-x) / mpmath.gamma(a)
        ref = float(-mpmath.diff(P, mpmath.mpf(a)) / pdf)
        np.testing.assert_allclose(standard_gamma_grad(np.array([x]), np.array([a]))[0], ref, rtol=1e-9)


def test_gamma_rsample_gradient_is_the_implicit_derivative():
    from scipy.special import gammainc
    ember.manual_seed(3)
    a = ember.tensor([0.7, 3.0], dtype=ember.float64, requires_grad=True)
    x = ED.Gamma(a, 1.0).rsample()
    x.sum().backward()
    xv, av = _np(x), _np(a)
    # d x / d a keeps the CDF fixed: F(x + dx; a + da) = F(x; a)
    h = 1e-6
    for i in range(2):
        dF_da = (gammainc(av[i] + h, xv[i]) - gammainc(av[i] - h, xv[i])) / (2 * h)
        dF_dx = (gammainc(av[i], xv[i] + h) - gammainc(av[i], xv[i] - h)) / (2 * h)
        np.testing.assert_allclose(_np(a.grad)[i], -dF_da / dF_dx, rtol=1e-5)


@pytest.mark.parametrize("name,fn,grad_of_mean", [
    ("Normal", lambda p: ED.Normal(p, 1.5), lambda p: np.ones_like(p)),
    ("Gamma", lambda p: ED.Gamma(p, 2.0), lambda p: np.full_like(p, 0.5)),
    ("Beta", lambda p: ED.Beta(p, ember.tensor([2.0, 2.0], dtype=ember.float64)),
     lambda p: 2.0 / (p + 2.0) ** 2),
    ("Dirichlet0", lambda p: ED.Dirichlet(ember.stack([p, p * 0 + 1.5], -1)), lambda p: 1.5 / (p + 1.5) ** 2),
    ("Exponential", lambda p: ED.Exponential(p), lambda p: -1 / p ** 2),
    ("Laplace", lambda p: ED.Laplace(p, 1.0), lambda p: np.ones_like(p)),
    ("StudentT", lambda p: ED.StudentT(5.0, p, 1.0), lambda p: np.ones_like(p)),
    ("LogNormal", lambda p: ED.LogNormal(p, 0.5), lambda p: np.exp(p + 0.125)),
])
def test_rsample_gradients_estimate_the_gradient_of_the_mean(name, fn, grad_of_mean):
    """d/dp E[x] estimated by the pathwise gradient of the sample mean agrees with the exact
    derivative of the mean within 5 standard errors (the per-sample gradients' spread)."""
    ember.manual_seed(4)
    p0 = np.array([0.8, 2.0])
    n = 4000
    grads = []
    for _ in range(4):
        p = ember.tensor(p0, dtype=ember.float64, requires_grad=True)
        d = fn(p)
        x = d.rsample((n,))
        x = x[..., 0] if name == "Dirichlet0" else x
        x.mean(0).sum().backward()
        grads.append(_np(p.grad))
    grads = np.array(grads)
    est = grads.mean(0)
    se = grads.std(0, ddof=1) / 2 + 1e-3 * np.abs(grad_of_mean(p0))
    assert np.all(np.abs(est - grad_of_mean(p0)) <= 5 * se + 0.02 * np.abs(grad_of_mean(p0))), (est, grad_of_mean(p0))


# ----------------------------------------------------------------------------- kl

KL_PAIRS = [
    ("Normal", "Normal"), ("Bernoulli", "Bernoulli"), ("Beta", "Beta"), ("Categorical", "Categorical"),
    ("Dirichlet", "Dirichlet"), ("Exponential", "Exponential"), ("Gamma", "Gamma"), ("Gumbel", "Gumbel"),
    ("Laplace", "Laplace"), ("Poisson", "Poisson"), ("Geometric", "Geometric"), ("HalfNormal", "HalfNormal"),
    ("OneHotCategorical", "OneHotCategorical"), ("Pareto", "Pareto"), ("LogNormal", "LogNormal"),
    ("Uniform", "Uniform"), ("Cauchy", "Cauchy"), ("ContinuousBernoulli", "ContinuousBernoulli"),
    ("Exponential", "Gamma"), ("Gamma", "Exponential"), ("Uniform", "Normal"), ("Normal", "Laplace"),
    ("Laplace", "Normal"), ("Exponential", "Normal"), ("Binomial", "Binomial"),
]


def _other(name):
    args, kw, c = SPECS[name]
    R2 = np.random.default_rng(9)
    f = (lambda a: a * R2.uniform(0.8, 1.25, a.shape) if isinstance(a, np.ndarray) else a)
    if name == "Uniform":
        return (args[0] - 0.5, args[1] + 0.5), kw
    if name in ("Categorical", "OneHotCategorical"):
        p = f(kw["probs"])
        return args, {"probs": p / p.sum(-1, keepdims=True)}
    kw2 = {k: (np.clip(f(v), 0.05, 0.95) if k == "probs" else f(v)) for k, v in kw.items()}
    return tuple(f(a) for a in args), kw2


@pytest.mark.parametrize("pn,qn", KL_PAIRS)
def test_kl_divergence_matches_torch(pn, qn, torch):
    def mk(lib, name, alt, rg):
        args, kw = _other(name) if alt else SPECS[name][:2]
        if pn != qn:  # families of different shapes: use shape-(3,) parameters of their own
            args = tuple(a[:3] if isinstance(a, np.ndarray) else a for a in args)
        mod = ED if lib == "ember" else torch.distributions
        t = ember if lib == "ember" else torch
        conv = (lambda v: t.tensor(v, dtype=t.float64, requires_grad=rg) if isinstance(v, np.ndarray) else v)
        params = [conv(a) for a in args] + [conv(v) for v in kw.values()]
        return getattr(mod, name)(*params[:len(args)], **dict(zip(kw, params[len(args):]))), params
    ep, epp = mk("ember", pn, False, True)
    eq, _ = mk("ember", qn, True, False)
    tp, tpp = mk("torch", pn, False, True)
    tq, _ = mk("torch", qn, True, False)
    ek, tk = ED.kl_divergence(ep, eq), torch.distributions.kl_divergence(tp, tq)
    _close(ek, tk, rtol=1e-8, msg=f"KL({pn} || {qn})")
    ew = [p for p in epp if isinstance(p, ember.Tensor)]
    tw = [p for p in tpp if isinstance(p, torch.Tensor)]
    eg = ember.autograd.grad(ek.sum(), ew, allow_unused=True)
    tg = torch.autograd.grad(tk.sum(), tw, allow_unused=True)
    for a, b in zip(eg, tg):
        if b is not None:
            _close(a, b, rtol=1e-7, atol=1e-10, msg=f"grad KL({pn} || {qn})")


def test_kl_registry_dispatch_and_errors():
    class MyNormal(ED.Normal):
        pass
    p, q = MyNormal(0.0, 1.0), ED.Normal(1.0, 2.0)
    np.testing.assert_allclose(_np(ED.kl_divergence(p, q)), math.log(2) + (1 + 1) / 8 - 0.5)

    @ED.register_kl(MyNormal, ED.Normal)
    def _kl(p, q):
        return ember.tensor(42.0)
    assert ED.kl_divergence(p, q).item() == 42.0
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Beta and q type Poisson"):
        ED.kl_divergence(ED.Beta(1.0, 2.0), ED.Poisson(1.0))


# ----------------------------------------------------------------------------- structure and errors


def test_validation_errors_match_torch(torch):
    with pytest.raises(ValueError, match="Expected parameter scale .* to satisfy the constraint GreaterThan"):
        ED.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
    with pytest.raises(ValueError):
        torch.distributions.Normal(torch.tensor([0.0]), torch.tensor([-1.0]))
    with pytest.raises(ValueError, match="Expected value argument .* to be within the support \\(GreaterThanEq"):
        ED.Exponential(ember.tensor([1.0])).log_prob(ember.tensor([-1.0]))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        ED.Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
        ED.Bernoulli()
    ED.Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)
    ED.Distribution.set_default_validate_args(False)
    try:
        ED.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
    finally:
        ED.Distribution.set_default_validate_args(True)


def test_expand_independent_and_shapes(torch):
    d = ED.Normal(ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64))
    e = d.expand((2, 3))
    assert tuple(e.batch_shape) == (2, 3)
    assert tuple(e.sample((4,)).shape) == (4, 2, 3)
    ind = ED.Independent(e, 1)
    assert tuple(ind.batch_shape) == (2,) and tuple(ind.event_shape) == (3,)
    x = ember.randn(2, 3, dtype=ember.float64)
    np.testing.assert_allclose(_np(ind.log_prob(x)), _np(e.log_prob(x).sum(-1)))
    t = torch.distributions.Independent(torch.distributions.Normal(torch.zeros(2, 3, dtype=torch.float64),
                                                                   torch.ones(2, 3, dtype=torch.float64)), 1)
    _close(ind.entropy(), t.entropy())
    assert repr(ED.Normal(ember.tensor(0.0), ember.tensor(1.0))) == "Normal(loc: 0.0, scale: 1.0)"


def test_transformed_distribution_and_transforms(torch):
    T, TT = ED.transforms, torch.distributions.transforms
    x = R.normal(size=(4, 3))
    for name, args in [("ExpTransform", ()), ("SigmoidTransform", ()), ("TanhTransform", ()),
                       ("AffineTransform", (0.5, 2.0)), ("PowerTransform", (1.5,)), ("SoftplusTransform", ()),
                       ("StickBreakingTransform", ()), ("SoftmaxTransform", ())]:
        et, tt = getattr(T, name)(*args), getattr(TT, name)(*args)
        xi = np.abs(x) if name == "PowerTransform" else x
        ey, ty = et(ember.tensor(xi)), tt(torch.tensor(xi))
        _close(ey, ty, msg=name)
        _close(et.inv(ey), tt.inv(ty), rtol=1e-7, atol=1e-9, msg=name + " inv")
        if name != "SoftmaxTransform":
            _close(et.log_abs_det_jacobian(ember.tensor(xi), ey), tt.log_abs_det_jacobian(torch.tensor(xi), ty),
                   rtol=1e-8, msg=name + " logdet")
    m = R.normal(size=(2, 3, 3))
    _close(T.LowerCholeskyTransform()(ember.tensor(m)), TT.LowerCholeskyTransform()(torch.tensor(m)))
    _close(T.CorrCholeskyTransform()(ember.tensor(m[0, 0])), TT.CorrCholeskyTransform()(torch.tensor(m[0, 0])))
    comp = T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.ExpTransform()])
    tcomp = TT.ComposeTransform([TT.AffineTransform(1.0, 2.0), TT.ExpTransform()])
    base = ED.Normal(ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64))
    tbase = torch.distributions.Normal(torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
    v = np.abs(R.normal(size=(5, 3))) + 0.1
    _close(ED.TransformedDistribution(base, [comp]).log_prob(ember.tensor(v)),
           torch.distributions.TransformedDistribution(tbase, [tcomp]).log_prob(torch.tensor(v)))
    rs = T.ReshapeTransform((6,), (2, 3))
    assert tuple(rs(ember.zeros(4, 6)).shape) == (4, 2, 3)
    ind = T.IndependentTransform(T.ExpTransform(), 1)
    _close(ind.log_abs_det_jacobian(ember.tensor(x), ind(ember.tensor(x))), x.sum(-1))
    tr = ED.TransformedDistribution(base, [T.AffineTransform(0.0, -2.0)])
    ttr = torch.distributions.TransformedDistribution(tbase, [TT.AffineTransform(0.0, -2.0)])
    _close(tr.cdf(ember.tensor(v)), ttr.cdf(torch.tensor(v)))


def test_constraint_registry(torch):
    C = ED.constraints
    for c in (C.real, C.positive, C.unit_interval, C.interval(-1.0, 3.0), C.greater_than(2.0),
              C.less_than(1.0), C.simplex, C.independent(C.positive, 1)):
        t = ED.biject_to(c)
        x = ember.tensor(R.normal(size=(4, 3)))
        assert bool(c.check(t(x)).all()), c
        np.testing.assert_allclose(_np(t.inv(t(x))), _np(x), atol=1e-6)
    assert bool(C.simplex.check(ED.transform_to(C.simplex)(ember.tensor(R.normal(size=(2, 4))))).all())
    assert bool(C.lower_cholesky.check(ED.transform_to(C.lower_cholesky)(ember.tensor(R.normal(size=(3, 3))))))
    assert repr(C.interval(0.0, 1.0)) == repr(torch.distributions.constraints.interval(0.0, 1.0))
    with pytest.raises(NotImplementedError):
        ED.biject_to(C.boolean)


def test_mixture_same_family(torch):
    mix_p = _probs(2, 3)
    locs, scales = R.normal(size=(2, 3)), _pos(2, 3)
    em = ED.MixtureSameFamily(ED.Categorical(ember.tensor(mix_p)), ED.Normal(ember.tensor(locs), ember.tensor(scales)))
    tm = torch.distributions.MixtureSameFamily(torch.distributions.Categorical(torch.tensor(mix_p)),
                                               torch.distributions.Normal(torch.tensor(locs), torch.tensor(scales)))
    v = R.normal(size=(4, 2))
    _close(em.log_prob(ember.tensor(v)), tm.log_prob(torch.tensor(v)))
    _close(em.mean, tm.mean)
    _close(em.variance, tm.variance)
    _close(em.cdf(ember.tensor(v)), tm.cdf(torch.tensor(v)))
    assert tuple(em.sample((5,)).shape) == (5, 2)


def test_enumerate_support_and_perplexity(torch):
    e = ED.Categorical(ember.tensor(_probs(2, 3)))
    assert tuple(e.enumerate_support().shape) == (3, 2)
    b = ED.Bernoulli(ember.tensor([0.3, 0.6]))
    tb = torch.distributions.Bernoulli(torch.tensor([0.3, 0.6]))
    _close(b.enumerate_support(), tb.enumerate_support())
    _close(b.perplexity(), tb.perplexity(), rtol=1e-6)


def _has_linalg():
    return hasattr(ember.linalg, "cholesky") and hasattr(ember.linalg, "solve_triangular")


@pytest.fixture
def linalg_or_shim(monkeypatch):
    """ember.linalg's cholesky/solve_triangular, or (where this checkout lacks them) value-only
    NumPy stand-ins, so that the MultivariateNormal formulas are checked either way."""
    if _has_linalg():
        return True
    import scipy.linalg

    def cholesky(A, *, upper=False):
        return ember.tensor(np.linalg.cholesky(_np(A)))

    def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
        a, b = _np(A), _np(B)
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, batch + a.shape[-2:]).reshape(-1, *a.shape[-2:])
        b = np.broadcast_to(b, batch + b.shape[-2:]).reshape(-1, *b.shape[-2:])
        out = np.stack([scipy.linalg.solve_triangular(x, y, lower=not upper) for x, y in zip(a, b)])
        return ember.tensor(out.reshape(batch + out.shape[-2:]))
    monkeypatch.setattr(ember.linalg, "cholesky", cholesky, raising=False)
    monkeypatch.setattr(ember.linalg, "solve_triangular", solve_triangular, raising=False)
    return False


def test_multivariate_normal_without_linalg_says_so():
    if _has_linalg():
        pytest.skip("this checkout has ember.linalg.cholesky")
    with pytest.raises(NotImplementedError, match="needs ember.linalg.cholesky"):
        ED.MultivariateNormal(ember.zeros(2), covariance_matrix=ember.eye(2))


def test_multivariate_normals_match_torch(torch, linalg_or_shim):
    A = R.normal(size=(2, 3, 3))
    cov = A @ A.transpose(0, 2, 1) + 3 * np.eye(3)
    loc = R.normal(size=(2, 3))
    v = R.normal(size=(4, 2, 3))
    for kw in ("covariance_matrix", "precision_matrix", "scale_tril"):
        mat = np.linalg.cholesky(cov) if kw == "scale_tril" else cov
        ed = ED.MultivariateNormal(ember.tensor(loc), **{kw: ember.tensor(mat)})
        td = torch.distributions.MultivariateNormal(torch.tensor(loc), **{kw: torch.tensor(mat)})
        _close(ed.log_prob(ember.tensor(v)), td.log_prob(torch.tensor(v)), msg=kw)
        _close(ed.entropy(), td.entropy())
        _close(ed.variance, td.variance)
    W, D = R.normal(size=(2, 3, 2)), _pos(2, 3)
    el = ED.LowRankMultivariateNormal(ember.tensor(loc), ember.tensor(W), ember.tensor(D))
    tl = torch.distributions.LowRankMultivariateNormal(torch.tensor(loc), torch.tensor(W), torch.tensor(D))
    _close(el.log_prob(ember.tensor(v)), tl.log_prob(torch.tensor(v)))
    _close(el.entropy(), tl.entropy())
    _close(el.covariance_matrix, tl.covariance_matrix)
    _close(el.precision_matrix, tl.precision_matrix)
    ep = ED.MultivariateNormal(ember.tensor(loc), covariance_matrix=ember.tensor(cov))
    eq = ED.MultivariateNormal(ember.tensor(loc[::-1].copy()), scale_tril=ember.tensor(np.linalg.cholesky(cov[::-1].copy())))
    tp = torch.distributions.MultivariateNormal(torch.tensor(loc), covariance_matrix=torch.tensor(cov))
    tq = torch.distributions.MultivariateNormal(torch.tensor(loc[::-1].copy()),
                                                scale_tril=torch.tensor(np.linalg.cholesky(cov[::-1].copy())))
    _close(ED.kl_divergence(ep, eq), torch.distributions.kl_divergence(tp, tq))
    _close(ep.precision_matrix, tp.precision_matrix)
    ember.manual_seed(5)
    x = _np(ep.sample((20000,)))
    assert np.all(np.abs(x.mean(0) - loc) <= 5 * np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1) / 20000))
    if linalg_or_shim:  # gradients need the real (differentiable) linalg ops
        L = ember.tensor(np.linalg.cholesky(cov), requires_grad=True)
        tL = torch.tensor(np.linalg.cholesky(cov), requires_grad=True)
        ED.MultivariateNormal(ember.tensor(loc), scale_tril=L).log_prob(ember.tensor(v)).sum().backward()
        torch.distributions.MultivariateNormal(torch.tensor(loc), scale_tril=tL).log_prob(torch.tensor(v)).sum().backward()
        _close(L.grad, tL.grad, rtol=1e-8)
