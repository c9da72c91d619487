"""Forward-mode AD: push a tangent through a function alongside the values (dual tensors), getting a
Jacobian-vector product in one forward pass; checked against reverse mode.

    python examples/forward_ad.py [--small]
"""
import argparse

import ember
import ember.autograd.forward_ad as fwAD


def f(x, w):
    return ember.tanh(x @ w).sin().sum(dim=1)


def main(small=False):
    n = 4 if small else 256
    x, w = ember.randn(8, n), ember.randn(n, n)
    v = ember.randn(8, n)                       # the direction
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, v)
        out = f(dual, w)
        y, jvp = fwAD.unpack_dual(out)
    print("f(x):", tuple(y.shape), " J v:", tuple(jvp.shape))
    # the same product from ember.func.jvp, and from reverse mode (one vjp per output row)
    _, jvp2 = ember.func.jvp(lambda x: f(x, w), (x,), (v,))
    J = ember.autograd.functional.jacobian(lambda x: f(x, w), x)   # (8, 8, n)
    jvp3 = (J * v).sum(dim=(1, 2))
    print("forward AD == func.jvp:", ember.allclose(jvp, jvp2, atol=1e-5))
    print("forward AD == reverse-mode Jacobian @ v:", ember.allclose(jvp, jvp3, atol=1e-4))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
