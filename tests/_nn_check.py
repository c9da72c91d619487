"""Helpers shared by the nn-kernel tests: PyTorch comparison and float64 finite differences."""
import numpy as np

import ember


def to_layout(t, cl):
    return t.to(memory_format=ember.channels_last) if cl and t.dim() == 4 else t


def compare_with_torch(torch, fn_e, fn_t, arrays, layouts=None, rtol=1e-6, atol=1e-8, seed=0, grad=True):
    """Run fn on ember and torch tensors built from the same float64 arrays; compare the output and
    the gradients of every input for a random output cotangent. Returns the ember output."""
    rng = np.random.default_rng(seed)
    layouts = layouts or [False] * len(arrays)
    es = [to_layout(ember.tensor(a, requires_grad=grad and a.dtype.kind == "f"), cl).detach().requires_grad_(
        grad and a.dtype.kind == "f") if isinstance(a, np.ndarray) else a for a, cl in zip(arrays, layouts)]
    ts = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
          for a in arrays]
    ts = [t.contiguous(memory_format=torch.channels_last) if cl and hasattr(t, "dim") and t.dim() == 4 else t
          for t, cl in zip(ts, layouts)]
    ts = [t.detach().requires_grad_(True) if hasattr(t, "dtype") and t.dtype.is_floating_point and grad else t
          for t in ts]
    ye, yt = fn_e(*es), fn_t(*ts)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol)
    assert tuple(ye.shape) == tuple(yt.shape)
    if grad:
        gy = rng.standard_normal(tuple(yt.shape))
        ye.backward(ember.tensor(gy))
        yt.backward(torch.tensor(gy, dtype=yt.dtype))
        for e, t in zip(es, ts):
            if isinstance(e, ember.Tensor) and e.requires_grad:
                assert e.grad is not None
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
    return ye


def finite_diff_check(fn, arrays, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0, create_graph_check=True):
    """Compare the vjp of fn (float64) against central finite differences of <fn(x), v> along a
    random direction for every float input; with create_graph_check, also check the second-order
    directional derivative of <grad, u> by finite differences of the first-order gradient."""
    rng = np.random.default_rng(seed)
    xs = [ember.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
          else (ember.tensor(a) if isinstance(a, np.ndarray) else a) for a in arrays]
    y = fn(*xs)
    v = rng.standard_normal(tuple(y.shape))
    diff = [x for x in xs if isinstance(x, ember.Tensor) and x.requires_grad]
    grads = ember.autograd.grad((y * ember.tensor(v)).sum(), diff, create_graph=create_graph_check)
    for k, x in enumerate(diff):
        d = rng.standard_normal(tuple(x.shape))

        def f_at(t):
            args = [ember.tensor(a._data + t * d) if a is x else (a.detach() if isinstance(a, ember.Tensor) else a)
                    for a in xs]
            with ember.no_grad():
                return float((fn(*args).numpy() * v).sum())
        num = (f_at(eps) - f_at(-eps)) / (2 * eps)
        ana = float((grads[k].detach().numpy() * d).sum())
        assert abs(num - ana) <= atol + rtol * abs(num), (k, num, ana)
    if create_graph_check:
        u = [rng.standard_normal(tuple(x.shape)) for x in diff]
        s = sum((g * ember.tensor(uu)).sum() for g, uu in zip(grads, u) if g.requires_grad)
        if not isinstance(s, ember.Tensor):
            return
        hs = ember.autograd.grad(s, diff, allow_unused=True)
        for k, x in enumerate(diff):
            if hs[k] is None:
                continue
            d = rng.standard_normal(tuple(x.shape))

            def g_at(t):
                args = [ember.tensor(a._data + t * d, requires_grad=True) if a is x else
                        (ember.tensor(a._data, requires_grad=a.requires_grad) if isinstance(a, ember.Tensor) else a)
                        for a in xs]
                dd = [a for a in args if isinstance(a, ember.Tensor) and a.requires_grad]
                yy = fn(*args)
                gg = ember.autograd.grad((yy * ember.tensor(v)).sum(), dd, allow_unused=True)
                return sum(float((g.numpy() * uu).sum()) for g, uu in zip(gg, u) if g is not None)
            num = (g_at(eps) - g_at(-eps)) / (2 * eps)
            ana = float((hs[k].numpy() * d).sum())
            assert abs(num - ana) <= 10 * atol + 100 * rtol * abs(num), ("2nd order", k, num, ana)
