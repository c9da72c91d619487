"""Helpers for the nn tests: float64 finite differences and side-by-side runs against PyTorch."""
import numpy as np

import ember


def numeric_grads(fn, inputs, eps=1e-6):
    """Central differences of sum(fn(*inputs) * w) for a fixed random w, per input."""
    out = fn(*inputs)
    w = np.asarray(np.random.RandomState(123).randn(*out.shape))
    res = []
    for x in inputs:
        a = x._data
        g = np.zeros_like(a)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            i = it.multi_index
            old = a[i]
            a[i] = old + eps
            fp = float((fn(*inputs)._data * w).sum())
            a[i] = old - eps
            fm = float((fn(*inputs)._data * w).sum())
            a[i] = old
            g[i] = (fp - fm) / (2 * eps)
        res.append(g)
    return res, w


def check_fd(fn, inputs, atol=1e-5, rtol=1e-4):
    """fn's analytic gradients (float64) against central differences."""
    with ember.no_grad():
        num, w = numeric_grads(fn, inputs)
    for x in inputs:
        x.grad = None
    out = fn(*inputs)
    (out * ember.tensor(w, dtype=out.dtype)).sum().backward()
    for x, n in zip(inputs, num):
        assert x.grad is not None, "no gradient reached an input"
        np.testing.assert_allclose(x.grad.numpy(), n, atol=atol, rtol=rtol)


def to_torch_state(torch, module):
    return {k: torch.tensor(v.numpy().copy()) for k, v in module.state_dict().items()}


def compare_module(torch, emod, tmod, *inputs, atol=1e-5, rtol=1e-4, grad_inputs=True):
    """Same weights, same inputs: outputs, input grads and parameter grads must agree."""
    tmod.load_state_dict(to_torch_state(torch, emod))
    e_in, t_in = [], []
    for x in inputs:
        if np.asarray(x).dtype.kind == "f":
            e_in.append(ember.tensor(x, requires_grad=grad_inputs))
            t_in.append(torch.tensor(x, requires_grad=grad_inputs))
        else:
            e_in.append(ember.tensor(x))
            t_in.append(torch.tensor(x))
    eo, to = emod(*e_in), tmod(*t_in)
    if isinstance(eo, tuple):
        eo, to = eo[0], to[0]
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=atol, rtol=rtol)
    w = np.asarray(np.random.RandomState(7).randn(*eo.shape)).astype(eo.numpy(force=True).dtype)
    (eo * ember.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for a, b in zip(e_in, t_in):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol, rtol=rtol)
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
    return eo, to
