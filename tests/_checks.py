"""The tests' shared checks, one place each:

- `central_diff`: the float64 central-difference rule; `fd_grad` applies it element by element.
- `analytic_vjp` / `numeric_vjp`: reverse-mode vjp of a multi-output function and its finite-
  difference twin (the registry-wide tests in test_ops_registry.py).
- `check_grads`: an ember function's gradients against finite differences, per element or along
  random directions, optionally second order too.
- `compare_with_torch` / `compare_module`: run the same thing in ember and torch from the same
  NumPy arrays (optionally channels_last) and compare outputs and gradients.

ember.autograd.gradcheck is not used here: these callers check <cot, f> against a fixed random
cotangent (one backward per case, not one per output element), with their own tolerances."""
import contextlib

import numpy as np

import ember


def central_diff(h, eps=1e-6):
    """(h(eps) - h(-eps)) / 2 eps; h returns a float, an array or a list of arrays."""
    plus, minus = h(eps), h(-eps)
    if isinstance(plus, list):
        return [(a - b) / (2 * eps) for a, b in zip(plus, minus)]
    return (plus - minus) / (2 * eps)


def fd_grad(scalar, arrays, eps=1e-6):
    """d scalar() / d a for each array a in `arrays`, by central differences one element at a
    time; the arrays are perturbed in place (scalar() reads them) and restored. float64 results."""
    res = []
    for a in arrays:
        g = np.zeros(a.shape)
        for i in np.ndindex(a.shape):
            old = a[i]

            def h(t):
                a[i] = old + t
                return scalar()
            g[i] = central_diff(h, eps)
            a[i] = old
        res.append(g)
    return res


def _dot(out, w):
    return float((np.asarray(out.detach().numpy(), dtype=np.float64) * w).sum())


def analytic_vjp(f, inputs, cots, create_graph=False):
    """Gradients of sum(cot * out) for the inputs that require grad (zeros where unused)."""
    outs = f(*inputs)
    diff = [o for o in outs if o.requires_grad]
    if not diff:
        return [None if not (isinstance(x, ember.Tensor) and x.requires_grad) else ember.zeros_like(x)
                for x in inputs], outs
    wrt = [x for x in inputs if isinstance(x, ember.Tensor) and x.requires_grad]
    cs = [c if isinstance(c, ember.Tensor) else ember.tensor(c) for o, c in zip(outs, cots) if o.requires_grad]
    gs = ember.autograd.grad(diff, wrt, grad_outputs=cs, allow_unused=True, create_graph=create_graph)
    it = iter(gs)
    res = []
    for x in inputs:
        if isinstance(x, ember.Tensor) and x.requires_grad:
            g = next(it)
            res.append(ember.zeros_like(x) if g is None else g)
        else:
            res.append(None)
    return res, outs


def numeric_vjp(f, arrays, positions, cots=None, eps=1e-6):
    """Central differences of sum(cot * f(arrays)) w.r.t. arrays[p] for p in positions (f returns
    a list of outputs); with cots=None f returns [scalar] and grad mode stays as the caller set it."""
    arrs = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]

    def scalar():
        outs = f(*[ember.tensor(a) if isinstance(a, np.ndarray) else a for a in arrs])
        if cots is None:
            return float(outs[0].detach().numpy())
        return sum(_dot(o, c) for o, c in zip(outs, cots))

    with ember.no_grad() if cots is not None else contextlib.nullcontext():
        grads = fd_grad(scalar, [arrs[p] for p in positions], eps)
    return dict(zip(positions, grads))


def _as_inputs(inputs):
    """ndarrays become tensors (float ones requiring grad); tensors and other values pass through."""
    return [ember.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
            for a in inputs]


# the nn layer/loss tests' setting: every gradient element, first order, these tolerances
PER_ELEMENT = dict(per_element=True, atol=1e-5, rtol=1e-4)


def check_grads(fn, inputs, *, per_element=False, second_order=None, eps=1e-6, rtol=1e-5, atol=1e-7,
                seed=0):
    """fn's float64 gradients against central differences of <fn(*inputs), v> for a random
    cotangent v. `inputs`: ndarrays (float ones are differentiated), tensors (differentiated when
    they require grad; perturbed in place, so module parameters work) or other values.

    per_element: every gradient element must match (assert_allclose with atol/rtol); otherwise
    each gradient is checked along one random direction d (|num - <g, d>| <= atol + rtol |num|).
    second_order (default: not per_element): also check the directional derivative of
    <grad, u> for a random u against differences of the first-order gradient, with tolerance
    10 atol + 100 rtol |num|."""
    if second_order is None:
        second_order = not per_element
    rng = np.random.default_rng(seed)
    xs = _as_inputs(inputs)
    diff = [x for x in xs if isinstance(x, ember.Tensor) and x.requires_grad]
    y = fn(*xs)
    v = rng.standard_normal(tuple(y.shape))

    def first(out=None, create_graph=False):
        out = fn(*xs) if out is None else out
        return ember.autograd.grad((out * ember.tensor(v, dtype=out.dtype)).sum(), diff,
                                   allow_unused=True, create_graph=create_graph)

    def value():
        with ember.no_grad():
            return _dot(fn(*xs), v)

    def along(x, d, h_of):
        """Directional central difference of h_of() as x moves along d (x perturbed in place)."""
        base = x._data.copy()

        def h(t):
            x._data[...] = base + t * d
            return h_of()
        try:
            return central_diff(h, eps)
        finally:
            x._data[...] = base

    if per_element:
        num = fd_grad(value, [x._data for x in diff], eps)
        grads = first()  # a fresh forward: fn may update state (batch-norm running stats)
        for g, n in zip(grads, num):
            assert g is not None, "no gradient reached an input"
            np.testing.assert_allclose(g.numpy(), n, atol=atol, rtol=rtol)
    else:
        grads = first(y, create_graph=second_order)
        for k, x in enumerate(diff):
            assert grads[k] is not None, ("no gradient reached input", k)
            d = rng.standard_normal(tuple(x.shape))
            num = along(x, d, value)
            ana = float((grads[k].detach().numpy() * d).sum())
            assert abs(num - ana) <= atol + rtol * abs(num), (k, num, ana)
    if not second_order:
        return
    u = [rng.standard_normal(tuple(x.shape)) for x in diff]
    s = sum((g * ember.tensor(uu)).sum() for g, uu in zip(grads, u) if g.requires_grad)
    if not isinstance(s, ember.Tensor):
        return
    hs = ember.autograd.grad(s, diff, allow_unused=True)

    def grad_dot_u():
        return sum(float((g.numpy() * uu).sum()) for g, uu in zip(first(), u) if g is not None)
    for k, x in enumerate(diff):
        if hs[k] is None:
            continue
        d = rng.standard_normal(tuple(x.shape))
        num = along(x, d, grad_dot_u)
        ana = float((hs[k].numpy() * d).sum())
        assert abs(num - ana) <= 10 * atol + 100 * rtol * abs(num), ("2nd order", k, num, ana)


def _layout(t, cl, fmt):
    return t.contiguous(memory_format=fmt) if cl and t.dim() == 4 else t


def compare_with_torch(torch, fn_e, fn_t, arrays, layouts=None, rtol=1e-6, atol=1e-8, seed=0, grad=True,
                       grad_inputs=None, first_output=False):
    """Run fn on ember and torch tensors built from the same arrays (layouts[i]: make input i
    channels_last); compare the output and, with grad, the gradients of every float input (those
    requiring grad: grad_inputs, default grad) for a random output cotangent of the output's dtype.
    first_output: when fn returns a tuple, compare its first element. Returns the ember output."""
    grad_inputs = grad if grad_inputs is None else grad_inputs
    layouts = layouts or [False] * len(arrays)

    def leaf(lib, a, cl):
        if not isinstance(a, np.ndarray):
            return a
        req = grad_inputs and a.dtype.kind == "f"
        return _layout(lib.tensor(a), cl, lib.channels_last).detach().requires_grad_(req)
    es = [leaf(ember, a, cl) for a, cl in zip(arrays, layouts)]
    ts = [leaf(torch, a, cl) for a, cl in zip(arrays, layouts)]
    ye, yt = fn_e(*es), fn_t(*ts)
    if first_output and isinstance(ye, tuple):
        ye, yt = ye[0], yt[0]
    assert tuple(ye.shape) == tuple(yt.shape), (tuple(ye.shape), tuple(yt.shape))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol)
    if grad:
        gy = np.random.default_rng(seed).standard_normal(tuple(yt.shape))
        gy = gy.astype(ye.detach().numpy().dtype)
        ye.backward(ember.tensor(gy))
        yt.backward(torch.tensor(gy))
        for e, t in zip(es, ts):
            if isinstance(e, ember.Tensor) and e.requires_grad:
                assert e.grad is not None
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
    return ye


def to_torch_state(torch, module):
    return {k: torch.tensor(v.numpy().copy()) for k, v in module.state_dict().items()}


def compare_module(torch, emod, tmod, *inputs, atol=1e-5, rtol=1e-4, grad_inputs=True, seed=7):
    """Same weights, same inputs: outputs (the first, for tuple outputs), input grads, parameter
    grads and buffers must agree. Returns the ember output."""
    tmod.load_state_dict(to_torch_state(torch, emod))
    eo = compare_with_torch(torch, emod, tmod, [np.asarray(x) for x in inputs], rtol=rtol, atol=atol,
                                      seed=seed, grad_inputs=grad_inputs, first_output=True)
    tparams = dict(tmod.named_parameters())
    for name, p in emod.named_parameters():
        tp = tparams[name]
        if tp.grad is None:
            assert p.grad is None
            continue
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), atol=atol, rtol=rtol, err_msg=name)
    for (n1, b1), (n2, b2) in zip(emod.named_buffers(), tmod.named_buffers()):
        assert n1 == n2
        np.testing.assert_allclose(b1.numpy(), b2.numpy(), atol=atol, rtol=rtol, err_msg=n1)
    return eo
