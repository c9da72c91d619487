"""Core overheads: the walkthrough's 3-op scalar graph, one small add with and without
requires_grad, and a 200-op elementwise chain on 1000-element tensors (forward + backward)."""
from _harness import Workload


def scalar_graph(lib):
    """Per iteration: leaves created, A*B, exp, +E, backward (the README walkthrough)."""
    def step():
        a = lib.tensor([2.0], requires_grad=True)
        b = lib.tensor([0.5], requires_grad=True)
        e = lib.tensor([1.0], requires_grad=True)
        f = (a * b).exp() + e
        f.backward()
    return step


def small_add(requires_grad):
    def make(lib):
        a = lib.tensor([1.0], requires_grad=requires_grad)
        b = lib.tensor([2.0], requires_grad=requires_grad)

        def step():
            return a + b
        return step
    return make


def chain(lib):
    x0 = lib.rand(1000, requires_grad=True)

    def step():
        x = x0
        for i in range(50):
            x = x * 0.999
            x = x + 0.001
            x = x.tanh()
            x = x - 0.0005
        x.sum().backward()
        x0.grad = None
    return step


WORKLOADS = [
    Workload("scalar_graph", ember=scalar_graph, unit="iteration",
             notes="tensor() x3, A*B, exp, +E, backward"),
    Workload("add_1elem", ember=small_add(False), unit="op"),
    Workload("add_1elem_requires_grad", ember=small_add(True), unit="op"),
    Workload("chain200_1000", ember=chain, unit="fwd+bwd", min_time=1.0,
             notes="200 elementwise ops on 1000 elements, then sum().backward()"),
]
