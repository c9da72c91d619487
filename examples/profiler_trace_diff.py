"""Profile two variants of a model, compare their traces with TraceDiff, and time them with
ember.utils.benchmark.

    python examples/profiler_trace_diff.py [--small] [--out DIR]

Writes DIR/{control,test}/rank-0.pt.trace.json (open them in https://ui.perfetto.dev or
chrome://tracing), prints the op table of one step, the time per nn.Module, the top changes
between the two traces, and a Timer comparison.
"""
import argparse
import os
import tempfile

import ember
from ember import nn
from ember.utils import benchmark


def profile_into(folder, model, x, steps):
    sched = ember.profiler.schedule(wait=1, warmup=1, active=steps, repeat=1)
    with ember.profiler.profile(schedule=sched, record_shapes=True,
                                on_trace_ready=ember.profiler.tensorboard_trace_handler(folder, "rank-0")) as prof:
        for _ in range(steps + 2):
            with ember.profiler.record_function("forward"):
                loss = model(x).sum()
            loss.backward()
            prof.step()
    return prof


def main(small=False, out=None):
    ember.manual_seed(0)
    width = 32 if small else 256
    x = ember.randn(16 if small else 64, width)
    control = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    test = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 10))
    out = out or tempfile.mkdtemp(prefix="ember_traces_")
    prof = profile_into(os.path.join(out, "control"), control, x, steps=2)
    profile_into(os.path.join(out, "test"), test, x, steps=2)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    print(prof.key_averages(group_by="module").table(sort_by="cpu_time_total"))

    from ember.trace_analysis import TraceDiff
    df = TraceDiff.compare_traces(os.path.join(out, "control"), os.path.join(out, "test"))
    changed = df[df["diff_counts"] != 0].sort_values("diff_counts", ascending=False)
    print(changed[["Control_counts", "Test_counts", "diff_counts", "diff_duration"]].to_string())
    print("traces in", out)

    results = [benchmark.Timer("m(x)", globals={"m": m, "x": x}, label="forward", sub_label=f"batch {x.shape[0]}",
                               description=name).blocked_autorange(min_run_time=0.1 if small else 0.5)
               for name, m in (("control", control), ("test", test))]
    print(benchmark.Compare(results))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="a tiny run (seconds)")
    ap.add_argument("--out", help="folder for the traces (default: a temporary folder)")
    a = ap.parse_args()
    main(a.small, a.out)
