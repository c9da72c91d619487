"""The autograd graph: every result remembers the backward node that made it (grad_fn), and the
nodes link to their inputs' nodes (next_functions), down to AccumulateGrad on the leaves.

    python examples/autograd_graph.py [--small]
"""
import argparse

import ember


def show(fn, depth=0, seen=None):
    seen = set() if seen is None else seen
    if fn is None or id(fn) in seen:
        return
    seen.add(id(fn))
    extra = f" -> {tuple(fn.variable.shape)} leaf" if hasattr(fn, "variable") else ""
    print("  " * depth + type(fn).__name__ + extra)
    for nxt, _ in fn.next_functions:
        show(nxt, depth + 1, seen)


def main(small=False):
    n = 3 if small else 64
    w = ember.randn(n, n, requires_grad=True)
    b = ember.zeros(n, requires_grad=True)
    x = ember.randn(8, n)
    loss = ember.tanh(x @ w + b).pow(2).mean()
    print("loss.grad_fn =", loss.grad_fn)
    show(loss.grad_fn)
    # hooks see gradients as they flow
    h = ember.tanh(x @ w + b)
    h.register_hook(lambda g: print("grad reaching h has norm", round(g.norm().item(), 6)))
    h.pow(2).mean().backward()
    print("w.grad shape:", tuple(w.grad.shape), " b.grad norm:", round(b.grad.norm().item(), 6))
    # create_graph=True makes the gradient itself differentiable: a second derivative
    t = ember.tensor(2.0, requires_grad=True)
    (g,) = ember.autograd.grad(t ** 3, t, create_graph=True)
    (g2,) = ember.autograd.grad(g, t)
    print(f"d/dt t^3 at 2 = {g.item()}, second derivative = {g2.item()}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
