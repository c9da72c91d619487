"""Tensor hooks, node hooks/pre-hooks, AccumulateGrad hooks and post-accumulate hooks."""
import ember


def test_tensor_hook_can_replace_gradient():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    h = y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 20.0]
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_leaf_hook_sees_grad_before_accumulation():
    x = ember.ones(2, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]] and x.grad.tolist() == [3.0, 3.0]
    x.register_hook(lambda g: g * 0)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_node_hook_and_prehook():
    a = ember.tensor([2.0], requires_grad=True)
    b = ember.tensor([5.0], requires_grad=True)
    c = a * b
    log = []

    def pre(grad_outputs):
        log.append(("pre", grad_outputs[0].item()))
        return (grad_outputs[0] * 2,)

    def post(grad_inputs, grad_outputs):
        log.append(("post", [g.item() for g in grad_inputs], grad_outputs[0].item()))
        return (grad_inputs[0], grad_inputs[1] * 0)

    c.grad_fn.register_prehook(pre)
    c.grad_fn.register_hook(post)
    c.backward()
    assert log == [("pre", 1.0), ("post", [10.0, 4.0], 2.0)]
    assert a.grad.tolist() == [10.0] and b.grad.tolist() == [0.0]


def test_accumulate_grad_node_hooks():
    a = ember.tensor([1.0], requires_grad=True)
    y = a * 3
    acc = y.grad_fn.next_functions[0][0]
    log = []
    acc.register_prehook(lambda go: log.append(go[0].item()))
    y.backward()
    assert log == [3.0] and a.grad.tolist() == [3.0]


def test_post_accumulate_grad_hook():
    p = ember.ones(2, requires_grad=True)
    seen = []
    p.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (p * 4).sum().backward()
    assert seen == [[4.0, 4.0]]


def test_hook_on_tensor_without_grad_raises():
    import pytest
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ember.ones(2).register_hook(lambda g: g)


def test_hooks_with_autograd_grad():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g + 1)
    (g,) = ember.autograd.grad(y.sum(), x)
    assert g.tolist() == [4.0, 4.0]
