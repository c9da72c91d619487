"""The benchmark harness: each workload is timed for ember and for PyTorch (and JAX where a
workload provides it) in the same process run, medians compared as ratios.

A benchmark module ``benchmarks/bench_<area>.py`` defines ``WORKLOADS``: a list of ``Workload``.
Each side is a factory ``make(lib) -> step`` that builds inputs once (outside the timing) and
returns a no-argument callable running one iteration.
"""
import gc
import statistics
import time
from dataclasses import dataclass, field


@dataclass
class Workload:
    name: str
    ember: object                   # factory(ember module) -> step()
    torch: object = None            # factory(torch module) -> step(); None: same as ember's
    jax: object = None              # factory() -> step(), optional
    unit: str = "iter"              # what one step is
    min_time: float = 0.4           # seconds of timing per side per repeat
    repeats: int = 5
    notes: str = ""
    tags: tuple = field(default_factory=tuple)


def _calibrate(step, min_time, repeats):
    """Calls per sample so that one sample takes about min_time / repeats (after a warm-up)."""
    step()  # warm-up (caches, lazy imports)
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        t = time.perf_counter() - t0
        if t >= min_time / repeats or n >= 1 << 20:
            return n
        n *= 2 if t == 0 else max(2, min(10, int(min_time / repeats / max(t, 1e-9)) + 1))


# A library's idle threads keep spinning for a while after its last parallel call (PyTorch's
# OpenMP threads for milliseconds; OpenBLAS's for about 0.1 s unless told otherwise), and would
# take the cores of the next library's sample: each sample starts after this pause, so each
# library runs as it would alone.
SETTLE = 0.05


def time_steps(steps, min_time, repeats):
    """Median seconds per call of each step. The samples of the steps alternate (A B A B ...), so a
    drift in the machine's speed (shared VMs) falls on every library alike instead of on one; each
    sample starts SETTLE seconds after the previous one ended."""
    ns = [_calibrate(s, min_time, repeats) for s in steps]
    samples = [[] for _ in steps]
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for step, n, out in zip(steps, ns, samples):
                time.sleep(SETTLE)
                t0 = time.perf_counter()
                for _ in range(n):
                    step()
                out.append((time.perf_counter() - t0) / n)
    finally:
        if gc_was:
            gc.enable()
    return [statistics.median(x) for x in samples]


def import_torch(threads=None):
    try:
        import torch
    except ImportError:
        return None
    if threads:
        torch.set_num_threads(threads)
    return torch


def import_jax():
    try:
        import jax
    except ImportError:
        return None
    return jax
