"""Per-sample gradients: the gradient of the loss of each sample separately, for all samples at
once with vmap(grad(...)), checked against a loop of ordinary backward passes.

    python examples/per_sample_grads.py [--small]
"""
import argparse

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.func import functional_call, grad, vmap


def main(small=False):
    batch, d = (4, 8) if small else (64, 256)
    model = nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, 10))
    x, y = ember.randn(batch, d), ember.randint(0, 10, (batch,))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_one(params, xi, yi):
        out = functional_call(model, params, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, x, y)
    for name, g in per_sample.items():
        print(f"{name:10s} per-sample grads {tuple(g.shape)}")
    ok = True
    for i in range(batch):
        model.zero_grad()
        F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        ok &= all(ember.allclose(per_sample[k][i], p.grad, atol=1e-5) for k, p in model.named_parameters())
    print("vmap(grad) == a loop of backward passes:", ok)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
