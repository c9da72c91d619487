import ember


def test_scalar_graph_backward():
    a = ember.tensor(2.0, requires_grad=True)
    b = ember.tensor(0.5, requires_grad=True)
    e = ember.tensor(1.0, requires_grad=True)
    f = (a * b).exp() + e
    f.backward()
    assert abs(a.grad.item() - 1.3591) < 1e-4
    assert abs(b.grad.item() - 5.4366) < 1e-4
    assert e.grad.item() == 1.0
