"""FX graph rewriting: trace a model into a graph, fold each BatchNorm into the convolution before
it (ember.fx.experimental.optimization.fuse), and check the fused model computes the same.

    python examples/fx_fusion.py [--small]
"""
import argparse
import time

import ember
import ember.nn as nn
from ember import fx
from ember.fx.experimental.optimization import fuse


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)

    def forward(self, x):
        x = ember.relu(self.bn1(self.conv1(x)))
        return ember.relu(self.bn2(self.conv2(x))) + x


def main(small=False):
    c, hw, batch = (4, 8, 2) if small else (32, 32, 16)
    model = Net(c)
    for bn in (model.bn1, model.bn2):            # give the BatchNorms non-trivial statistics
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    model.eval()
    traced = fx.symbolic_trace(model)
    print("traced graph:")
    print(traced.graph)
    fused = fuse(model)
    print("after fuse:", [n.target for n in fused.graph.nodes if n.op == "call_module"])
    x = ember.randn(batch, 3, hw, hw)
    with ember.no_grad():
        same = ember.allclose(model(x), fused(x), atol=1e-4)
        times = {}
        for name, m in (("original", model), ("fused", fused)):
            t0 = time.perf_counter()
            for _ in range(3):
                m(x)
            times[name] = (time.perf_counter() - t0) / 3
    print("same output:", same)
    print(" ".join(f"{k} {v * 1e3:.2f} ms" for k, v in times.items()))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
