"""The engine: backward / autograd.grad semantics, freeing, higher order, deep graphs."""
import sys

import numpy as np
import pytest

import ember


def test_scalar_graph_walkthrough():
    a = ember.tensor([2.0], requires_grad=True)
    b = ember.tensor([0.5], requires_grad=True)
    e = ember.tensor([1.0], requires_grad=True)
    f = (a * b).exp() + e
    f.backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.5 * np.e], rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), [2 * np.e], rtol=1e-6)
    assert e.grad.tolist() == [1.0]
    assert a.grad is not b.grad and a.grad is not e.grad


def test_leaves_never_share_grad_objects():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    (a + b).sum().backward()
    assert a.grad is not b.grad
    a.grad.mul_(3)
    assert b.grad.tolist() == [1.0, 1.0]


def test_accumulation_and_broadcasting():
    w = ember.ones(3, requires_grad=True)
    x = ember.ones(2, 3)
    for _ in range(3):
        (x * w).sum().backward()
    assert w.grad.tolist() == [6.0, 6.0, 6.0]
    b = ember.tensor(1.0, requires_grad=True)
    (ember.ones(4, 5) + b).sum().backward()
    assert b.grad.item() == 20.0 and b.grad.shape == ()
    c = ember.ones(1, 3, requires_grad=True)
    (ember.ones(2, 1) * c).sum().backward()
    assert c.grad.shape == (1, 3) and c.grad.tolist() == [[2.0, 2.0, 2.0]]


def test_nonscalar_backward_needs_gradient():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    y.backward(ember.tensor([1.0, 2.0, 3.0]))
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ember.ones(4))


def test_no_grad_output_raises():
    x = ember.ones(2)
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        x.sum().backward()


def test_freed_graph_and_retain_graph():
    x = ember.tensor([1.5], requires_grad=True)
    y = (x * x).exp().sum()
    y.backward(retain_graph=True)
    g1 = x.grad.clone()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1.numpy())
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_autograd_grad_basics():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    z = ember.tensor([3.0], requires_grad=True)
    y = (x ** 2).sum()
    (g,) = ember.autograd.grad(y, x, retain_graph=True)
    assert g.tolist() == [2.0, 4.0] and x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        ember.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = ember.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gz is None
    gx, gz = ember.autograd.grad(y, [x, z], materialize_grads=True)
    assert gz.tolist() == [0.0]


def test_grad_outputs_and_multiple_outputs():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y1, y2 = x * 2, x * x
    (g,) = ember.autograd.grad([y1, y2], x, grad_outputs=[ember.ones(2), ember.tensor([1.0, 0.5])])
    assert g.tolist() == [4.0, 4.0]


def test_create_graph_higher_order():
    x = ember.tensor(1.5, requires_grad=True)
    y = x ** 3
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (gg,) = ember.autograd.grad(g, x, create_graph=True)
    (ggg,) = ember.autograd.grad(gg, x)
    assert abs(g.item() - 6.75) < 1e-5 and abs(gg.item() - 9.0) < 1e-5 and abs(ggg.item() - 6.0) < 1e-5
    w = ember.tensor([0.3, -0.7], requires_grad=True)
    loss = (w.sin() * w.exp()).sum()
    (gw,) = ember.autograd.grad(loss, w, create_graph=True)
    gw.sum().backward()
    ref = 2 * np.cos([0.3, -0.7]) * np.exp([0.3, -0.7])
    np.testing.assert_allclose(w.grad.numpy(), ref, rtol=1e-5)


def test_backward_inputs_argument():
    a = ember.tensor([1.0], requires_grad=True)
    b = ember.tensor([2.0], requires_grad=True)
    (a * b).backward(inputs=[a])
    assert a.grad.tolist() == [2.0] and b.grad is None
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (a * b).backward(inputs=[])


def test_chain_of_100000_ops_is_iterative():
    limit = sys.getrecursionlimit()
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100000):
        y = y * 1.0
    y.backward()
    assert x.grad.tolist() == [1.0]
    assert sys.getrecursionlimit() == limit
    del y  # freeing a 100k-deep graph must not recurse either


def test_diamond_waits_for_all_gradients():
    x = ember.tensor([2.0], requires_grad=True)
    calls = []
    a = x * 3
    a.register_hook(lambda g: calls.append(g.item()))
    y = a * a + a.exp() + a
    y.backward()
    assert len(calls) == 1  # one summed gradient, not one per use
    np.testing.assert_allclose(calls[0], 2 * 6 + np.exp(6) + 1, rtol=1e-6)


def test_detach_and_requires_grad_flags():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    assert not y.is_leaf and y.requires_grad
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad_(False)
    z = ember.ones(2)
    assert not (z * x).grad_fn is None
    i = ember.ones(2, dtype=ember.int64)
    assert not (x > 0).requires_grad and not (i * 2).requires_grad


def test_grad_setter_validates():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = ember.ones(3)
    x.grad = ember.ones(2)
    x.grad = None


def test_retain_grad_on_nonleaf():
    x = ember.ones(2, requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 6.0]
    z = x * 2
    (z * 1).sum().backward()
    assert z.grad is None


def test_version_errors_only_when_saved_value_is_needed():
    x = ember.ones(3, requires_grad=True)
    y = x * 2  # mul by a constant: saves x? only the factor matters for x's grad
    z = y + 1  # add saves nothing
    y.add_(1)
    z.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_unreachable_leaf_grad_untouched():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    (a * 2).sum().backward()
    assert b.grad is None


def test_backward_under_no_grad_still_works():
    x = ember.ones(2, requires_grad=True)
    y = (x * x).sum()
    with ember.no_grad():
        y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


# ---- loss.backward()'s seq-ordered engine (graph.execute_simple) and its hand-over to execute

def _diamond(lib, x):
    y = x * 2.0
    a = y.exp()
    b = y * 3.0
    return (a + b * y).sum()


def test_simple_engine_diamond_matches_torch(torch):
    x = ember.tensor([0.3, -0.2], requires_grad=True)
    tx = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    _diamond(ember, x).backward()
    _diamond(torch, tx).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_simple_engine_hands_over_at_a_hooked_node(torch):
    # the hook sits below nodes that already ran: the rest of the graph is finished by execute,
    # and the leaf's hook still sees the sum of its gradients, once
    def run(lib, x, seen_mid, seen_leaf):
        x.register_hook(lambda g: seen_leaf.append(g.detach().clone()))
        y = x * x
        m = y.sin()
        m.register_hook(lambda g: seen_mid.append(g.detach().clone()) or g * 2)
        z = (m + y.cos() * x).sum()
        z.backward(retain_graph=True)
        z.backward()
        return x.grad
    ex = ember.tensor([0.5, 1.5], requires_grad=True)
    tx = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    em, el, tm, tl = [], [], [], []
    g = run(ember, ex, em, el)
    tg = run(torch, tx, tm, tl)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-6)
    assert len(em) == len(tm) == 2 and len(el) == len(tl) == 2
    for a, b in zip(el, tl):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_simple_engine_leaf_with_accumulator_and_shared_node(torch):
    def run(lib, x, w):
        h = x * w
        out1 = (h.tanh() * h).sum()
        out2 = (h * 4.0).sum()
        out1.backward(retain_graph=True)
        out2.backward()
        return x.grad, w.grad
    ex = ember.tensor([0.1, 0.7], requires_grad=True)
    ew = ember.tensor([2.0, -1.0], requires_grad=True)
    ew.register_post_accumulate_grad_hook(lambda p: None)  # the leaf takes the hook-aware path
    tx = torch.tensor([0.1, 0.7], dtype=torch.float64, requires_grad=True)
    tw = torch.tensor([2.0, -1.0], dtype=torch.float64, requires_grad=True)
    tw.register_post_accumulate_grad_hook(lambda p: None)
    for a, b in zip(run(ember, ex, ew), run(torch, tx, tw)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_simple_engine_pieces_add_into_one_buffer(torch):
    """split/chunk/unbind/select/narrow pieces of one tensor send their gradients into one buffer of
    the engine's own (a region each, sums in place): the same gradients as PyTorch's, with other
    consumers of the tensor before, between and after the pieces, overlapping and strided slices,
    mixed dtypes, a gradient array shared by two tensors, the elements of a 1-D tensor."""
    x = np.random.default_rng(3).standard_normal((4, 6, 9))
    def run(lib, dt):
        xt = lib.tensor(x, dtype=dt, requires_grad=True)
        y = xt * 1.5
        pre = y.tanh()  # (recorded first: its gradient arrives last)
        q, k, v = y.split(3, dim=2)
        a, b = y.chunk(2, dim=1)
        rows = y.unbind(0)
        loss = (q * k).sum() + (v.exp() * y[..., 1:8:3]).sum() + a.pow(2).sum() - b.sum()
        loss = loss + sum((r * (i + 1)).sum() for i, r in enumerate(rows)) + y[:, 2].sin().sum()
        loss = loss + y.narrow(2, 2, 5).double().pow(3).sum().to(dt) + (y * y).sum() + (pre * pre).sum()
        loss.backward()
        return xt.grad
    for dt in ("float64", "float32"):
        g, tg = run(ember, getattr(ember, dt)), run(torch, getattr(torch, dt))
        np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-5 if dt == "float32" else 1e-12)
    # one gradient array sent to two tensors (an add's) is neither's own: a piece's gradient
    # arriving later goes to a sum, not into the shared array
    def shared(lib):
        xt = lib.tensor(x, requires_grad=True)
        y1, y2 = xt * 2.0, xt * 3.0
        q1, q2 = y1[1], y2[:, 2:4]
        (((y1 + y2) * lib.tensor(x)).sum() + (q1 * q1).sum() + q2.exp().sum()).backward()
        return xt.grad
    np.testing.assert_allclose(shared(ember).numpy(), shared(torch).numpy(), rtol=1e-12)
    # the elements of a 1-D tensor (select's region of a 1-D buffer is one element)
    def elements(lib):
        xt = lib.tensor(x[0, 0], requires_grad=True)
        y = xt * 2.0
        (sum(e * e for e in y.unbind(0)) + y[2:5].sum()).backward()
        return xt.grad
    np.testing.assert_allclose(elements(ember).numpy(), elements(torch).numpy(), rtol=1e-12)


def test_simple_engine_second_backward_without_retain_raises():
    x = ember.tensor([1.0], requires_grad=True)
    z = (x.exp() * x).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()


def test_gradient_keeps_input_dtype_through_dtype_arguments(torch):
    # sum/mean/prod/cumsum(dtype=float64) of a float32 leaf: its .grad is float32 (it was float64)
    fs = [lambda m, w: w.sum(dtype=m.float64), lambda m, w: w.mean(dtype=m.float64),
          lambda m, w: w.prod(dtype=m.float64), lambda m, w: w.cumsum(0, dtype=m.float64).sum(),
          lambda m, w: w.sum(0, dtype=m.float64).sum()]
    for f in fs:
        grads = []
        for m in (ember, torch):
            w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
            f(m, w).backward()
            grads.append((w.grad.dtype.__repr__().split(".")[-1], w.grad.numpy()))
        assert grads[0][0] == grads[1][0] == "float32"
        np.testing.assert_allclose(grads[0][1], grads[1][1])


def test_checkpoint_matches_plain_run_and_torch(torch):
    # ember.utils.checkpoint was missing; the recomputation replays the random state (dropout masks)
    res = []
    lin = ember.nn.Linear(3, 3)
    for ck in (False, True):
        ember.manual_seed(5)
        lin.zero_grad()
        x = ember.ones(4, 3, requires_grad=True)
        f = lambda a: ember.nn.functional.dropout(lin(a), 0.5).tanh()  # noqa: E731
        o = ember.utils.checkpoint.checkpoint(f, x, use_reentrant=False) if ck else f(x)
        (o * ember.arange(12.0).reshape(4, 3)).sum().backward()
        res.append((o.detach().numpy(), x.grad.numpy(), lin.weight.grad.numpy(), lin.bias.grad.numpy(),
                    ember.rand(1).numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # parameters get gradients when no input requires grad; keyword arguments and tuple outputs
    w = np.arange(9.0, dtype=np.float32).reshape(3, 3) / 10
    grads = []
    for m in (ember, torch):
        lin = m.nn.Linear(3, 3)
        with m.no_grad():
            lin.weight.copy_(m.tensor(w))
            lin.bias.zero_()
        o = m.utils.checkpoint.checkpoint(lambda a, s=1.0: (lin(a).tanh() * s, a * 2), m.ones(2, 3),
                                          use_reentrant=False, s=2.0)
        (o[0].sum() + o[1].sum()).backward()
        grads.append((o[0].detach().numpy(), lin.weight.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5)
