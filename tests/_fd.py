"""A small float64 central-finite-difference checker used by the registry-wide tests."""
import numpy as np

import ember


def _np(t):
    return t.detach().numpy()


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


def numeric_vjp(f, arrays, positions, cots, eps=1e-6):
    """Central differences of sum(cot * f(arrays)) w.r.t. arrays[p] for p in positions."""
    def scalar(arrs):
        with ember.no_grad():
            outs = f(*[ember.tensor(a) if isinstance(a, np.ndarray) else a for a in arrs])
        return sum(float((_np(o).astype(np.float64) * c).sum()) for o, c in zip(outs, cots))

    res = {}
    for p in positions:
        x = arrays[p]
        g = np.zeros(x.shape)
        flat = g.reshape(-1)
        for j in range(x.size):
            xp, xm = x.copy(), x.copy()
            xp.reshape(-1)[j] += eps
            xm.reshape(-1)[j] -= eps
            a1 = list(arrays)
            a1[p] = xp
            a2 = list(arrays)
            a2[p] = xm
            flat[j] = (scalar(a1) - scalar(a2)) / (2 * eps)
        res[p] = g
    return res
