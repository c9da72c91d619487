"""Trace diff: profile two versions of a model, write each as a trace folder, and let
ember.trace_analysis.TraceDiff say which ops were added, removed, or ran more or less often
(the same comparison as `ember trace-diff CONTROL TEST`).

    python examples/trace_diff.py [--small] [--out DIR]
"""
import argparse
import os
import tempfile

import ember
import ember.nn as nn
from ember.profiler import ProfilerActivity, profile, schedule
from ember.trace_analysis import TraceDiff


def record(model, x, folder):
    os.makedirs(folder, exist_ok=True)
    # a schedule makes ProfilerStep#N annotations, which TraceDiff uses to pick an iteration
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2),
                 on_trace_ready=lambda p: p.export_chrome_trace(os.path.join(folder, "rank-0.json"))) as prof:
        for _ in range(3):
            with ember.no_grad():
                model(x)
            prof.step()


def main(small=False, out=None):
    d = 8 if small else 512
    control = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
    test = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d), nn.LayerNorm(d))
    x = ember.randn(16, d)
    out = out or tempfile.mkdtemp(prefix="ember-tracediff-")
    record(control, x, os.path.join(out, "control"))
    record(test, x, os.path.join(out, "test"))
    df = TraceDiff.compare_traces(os.path.join(out, "control"), os.path.join(out, "test"))
    changed = df[df["diff_counts"] != 0]
    print(changed[["Control_counts", "Test_counts", "diff_counts"]].to_string())
    diff = TraceDiff.ops_diff(df, None)
    for kind in ("added", "deleted", "increased", "decreased"):
        print(f"{kind:9s}: {list(diff[kind])}")
    print(f"same from the command line: ember trace-diff {out}/control {out}/test")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    ap.add_argument("--out", help="folder for the two trace folders (default: a new temporary folder)")
    a = ap.parse_args()
    main(a.small, a.out)
