"""Model ensembling with vmap: stack the parameters of several models of the same structure and
run all of them in one vectorised call (ember.func.stack_module_state + functional_call + vmap).

    python examples/ensembling.py [--small]
"""
import argparse
import copy

import ember
import ember.nn as nn
from ember.func import functional_call, stack_module_state, vmap


def make(d, h):
    return nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, 10))


def main(small=False):
    n_models, d, h, batch = (3, 8, 16, 4) if small else (10, 784, 128, 64)
    models = [make(d, h) for _ in range(n_models)]
    x = ember.randn(batch, d)
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def one(params, buffers, x):
        return functional_call(base, (params, buffers), (x,))

    # every model on the same batch
    out = vmap(one, in_dims=(0, 0, None))(params, buffers, x)
    loop = ember.stack([m(x) for m in models])
    print("ensemble output:", tuple(out.shape), " == a loop over the models:", ember.allclose(out, loop, atol=1e-5))
    # a different minibatch for every model
    xs = ember.randn(n_models, batch, d)
    out2 = vmap(one)(params, buffers, xs)
    loop2 = ember.stack([m(xi) for m, xi in zip(models, xs)])
    print("one minibatch per model:", ember.allclose(out2, loop2, atol=1e-5))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
