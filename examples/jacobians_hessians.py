"""Jacobians and Hessians with ember.func: jacrev (reverse mode), jacfwd (forward mode), hessian
(jacfwd of jacrev), composed with vmap for a batch; compared with ember.autograd.functional.

    python examples/jacobians_hessians.py [--small]
"""
import argparse

import ember
from ember.func import hessian, jacfwd, jacrev, vmap


def predict(weight, bias, x):
    return ember.tanh(x @ weight.T + bias)


def main(small=False):
    d = 4 if small else 64
    weight, bias, x = ember.randn(d, d), ember.randn(d), ember.randn(d)
    j_rev = jacrev(predict, argnums=2)(weight, bias, x)
    j_fwd = jacfwd(predict, argnums=2)(weight, bias, x)
    print("jacobian:", tuple(j_rev.shape), " jacrev == jacfwd:", ember.allclose(j_rev, j_fwd, atol=1e-5))
    ref = ember.autograd.functional.jacobian(lambda x: predict(weight, bias, x), x)
    print("== autograd.functional.jacobian:", ember.allclose(j_rev, ref, atol=1e-5))
    # a batch of Jacobians: vmap over x
    xs = ember.randn(5, d)
    jb = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, xs)
    print("batched jacobians:", tuple(jb.shape))
    # Hessian of a scalar function, both ways
    f = lambda x: (predict(weight, bias, x) ** 2).sum()      # noqa: E731
    h1 = hessian(f)(x)
    h2 = jacfwd(jacfwd(f))(x)
    h3 = ember.autograd.functional.hessian(f, x)
    print("hessian:", tuple(h1.shape), " symmetric:", ember.allclose(h1, h1.T, atol=1e-4),
          " == jacfwd(jacfwd):", ember.allclose(h1, h2, atol=1e-4),
          " == autograd.functional.hessian:", ember.allclose(h1, h3, atol=1e-4))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
