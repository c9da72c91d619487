"""gradcheck and gradgradcheck: compare analytical gradients (first and second order) with
finite differences in float64, and see one catch a wrong backward.

    python examples/gradcheck.py [--small]
"""
import argparse

import ember
from ember.autograd import Function, gradcheck, gradgradcheck


class WrongSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x          # wrong: should be 2 * x


def main(small=False):
    n = 3 if small else 10
    a = ember.randn(n, n, dtype=ember.float64, requires_grad=True)
    b = ember.randn(n, dtype=ember.float64, requires_grad=True)
    f = lambda a, b: ember.softmax(a @ b, dim=0).log()       # noqa: E731
    print("gradcheck(log_softmax-like):", gradcheck(f, (a, b)))
    print("gradgradcheck:", gradgradcheck(f, (a, b)))
    x = ember.randn(n, dtype=ember.float64, requires_grad=True)
    try:
        gradcheck(WrongSquare.apply, (x,))
    except RuntimeError as e:
        print("caught the wrong backward:", str(e).splitlines()[0])
    print("raise_exception=False:", gradcheck(WrongSquare.apply, (x,), raise_exception=False))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
