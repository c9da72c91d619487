"""A custom autograd Function: a numerically stable softplus with a hand-written backward,
checked against finite differences with gradcheck.

    python examples/custom_function.py [--small]
"""
import argparse

import ember
from ember.autograd import Function, gradcheck


class Softplus(Function):
    """softplus(x) = log(1 + exp(x)), computed without overflow; d/dx = sigmoid(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ember.clamp(x, min=0) + ember.log1p(ember.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * ember.sigmoid(x)


def main(small=False):
    n = 5 if small else 1000
    x = ember.linspace(-50, 50, n, requires_grad=True)
    y = Softplus.apply(x)
    y.sum().backward()
    print("softplus at the ends:", y[0].item(), y[-1].item())            # ~0 and 50, no overflow
    print("grad matches sigmoid:", ember.allclose(x.grad, ember.sigmoid(x.detach())))
    print("y.grad_fn:", type(y.grad_fn).__name__)
    xd = ember.randn(4, dtype=ember.float64, requires_grad=True)
    print("gradcheck:", gradcheck(Softplus.apply, (xd,)))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
