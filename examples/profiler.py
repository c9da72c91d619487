"""The profiler: time every op of a few training steps, print the op table sorted by self time, and
write a chrome trace (open it in chrome://tracing or https://ui.perfetto.dev).

    python examples/profiler.py [--small] [--out DIR]
"""
import argparse
import os
import tempfile

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.profiler import ProfilerActivity, profile, record_function


def main(small=False, out=None):
    d, batch, steps = (16, 8, 2) if small else (256, 64, 5)
    model = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 10))
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x, y = ember.randn(batch, d), ember.randint(0, 10, (batch,))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(steps):
            with record_function("train_step"):
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    print(prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=5))
    out = out or tempfile.mkdtemp(prefix="ember-profile-")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "trace.json")
    prof.export_chrome_trace(path)
    print("chrome trace written to", path)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    ap.add_argument("--out", help="folder for trace.json (default: a new temporary folder)")
    a = ap.parse_args()
    main(a.small, a.out)
