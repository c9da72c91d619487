"""Run ember's benchmarks side by side with PyTorch (and JAX where given) in one process run.

    python benchmarks/run.py [PATTERN ...] [--json out.json] [--quick]

Prints one row per workload: median time per step for each library and the ember/PyTorch ratio
(below 1 means ember is faster). The libraries' timing samples alternate, so drift in the machine's
speed falls on both alike. PyTorch comes from `pip install torch==2.13.0`; when it is
absent its column says so and only ember is timed.

The first lines name NumPy's BLAS kernels (ember.__config__.show()): ember's convolutions and
matmuls are NumPy's OpenBLAS GEMMs, while PyTorch brings its own kernels, so an environment that
pins OpenBLAS to older kernels (OPENBLAS_CORETYPE) slows ember alone. Compare runs only under the
same setting; `env -u OPENBLAS_CORETYPE python benchmarks/run.py` runs OpenBLAS's own choice.
"""
import argparse
import importlib
import json
import os
import pathlib
import platform
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _harness import import_jax, import_torch, time_steps  # noqa: E402


def fmt(t):
    if t is None:
        return "-"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def discover(patterns):
    for path in sorted(HERE.glob("bench_*.py")):
        mod = importlib.import_module(path.stem)
        for w in mod.WORKLOADS:
            full = f"{path.stem[6:]}/{w.name}"
            if not patterns or any(p in full for p in patterns):
                yield full, w


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("patterns", nargs="*", help="substrings of 'area/workload' names to run")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="shorter timing (noisier)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="BLAS/intra-op threads for ember and PyTorch alike (default: the CPU count)")
    args = ap.parse_args(argv)
    import ember
    ember.set_num_threads(args.threads)
    torch = import_torch(args.threads)
    jax = import_jax()
    print(ember.__config__.show().rstrip())
    if torch is None:
        print("PyTorch is not installed (pip install torch==2.13.0): timing ember only.")
    rows = []
    head = f"{'workload':44s} {'ember':>10s} {'torch':>10s} {'ratio':>7s} {'jax':>10s}"
    print(head)
    print("-" * len(head))
    for name, w in discover(args.patterns):
        min_time = w.min_time / 4 if args.quick else w.min_time
        repeats = 3 if args.quick else w.repeats
        steps = {"ember": w.ember(ember)}
        if torch is not None:
            steps["torch"] = (w.torch or w.ember)(torch)
        if jax is not None and w.jax is not None:
            steps["jax"] = w.jax()
        times = dict(zip(steps, time_steps(list(steps.values()), min_time, repeats)))
        t_e, t_t, t_j = times["ember"], times.get("torch"), times.get("jax")
        ratio = t_e / t_t if t_t else None
        print(f"{name:44s} {fmt(t_e):>10s} {fmt(t_t):>10s} "
              f"{(f'{ratio:.2f}x' if ratio else '-'):>7s} {fmt(t_j):>10s}", flush=True)
        rows.append({"workload": name, "unit": w.unit, "ember_s": t_e, "torch_s": t_t, "jax_s": t_j,
                     "ratio_ember_over_torch": ratio, "notes": w.notes})
    meta = {"threads": args.threads, "machine": platform.platform(), "processor": platform.processor(),
            "python": platform.python_version(), "blas_kernels": ember._blas.core(),
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
            "ember": ember.__version__, "torch": getattr(torch, "__version__", None),
            "jax": getattr(jax, "__version__", None)}
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"meta": meta, "results": rows}, indent=2))
    return rows


if __name__ == "__main__":
    main()
