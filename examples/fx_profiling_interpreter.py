"""An FX Interpreter that profiles: subclass ember.fx.Interpreter, time each node as the graph
runs, and print where the forward pass spends its time, node by node.

    python examples/fx_profiling_interpreter.py [--small]
"""
import argparse
import statistics
import time

import ember
import ember.nn as nn
from ember import fx


class TimingInterpreter(fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.times = {}

    def run_node(self, n):
        t0 = time.perf_counter()
        result = super().run_node(n)
        self.times.setdefault(n.name, (n.op, str(n.target), []))[2].append(time.perf_counter() - t0)
        return result

    def report(self, top=8):
        rows = [(statistics.mean(ts), name, op, target) for name, (op, target, ts) in self.times.items()]
        total = sum(r[0] for r in rows)
        print(f"{'node':16s} {'op':14s} {'target':28s} {'mean us':>9s} {'share':>6s}")
        for t, name, op, target in sorted(rows, reverse=True)[:top]:
            print(f"{name:16s} {op:14s} {target[:28]:28s} {t * 1e6:9.1f} {t / total * 100:5.1f}%")


def main(small=False):
    c, hw = (4, 8) if small else (64, 56)
    model = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
                          nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(c, 10)).eval()
    gm = fx.symbolic_trace(model)
    interp = TimingInterpreter(gm)
    x = ember.randn(2, 3, hw, hw)
    with ember.no_grad():
        for _ in range(3):
            out = interp.run(x)
        print("interpreter output == module output:", ember.allclose(out, model(x), atol=1e-5))
    interp.report()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
