"""The profiler's cost: an MLP train step (784-128-128-10, batch 64, nn modules, SGD with momentum) plain and
under the profiler, for ember and PyTorch side by side, plus the per-op cost on a tiny add.

Within each column, `profiler/mlp_step_profiled` over `profiler/mlp_step_plain` is the profiled /
unprofiled ratio (steady state: each library's profiler session stays open over the timed steps and
is closed when the next workload is built for that library; PyTorch's start/stop alone costs tens
of ms).
`profiler/add_small_plain` is measured after profiling sessions have come and gone: it shows the
dispatch fast path is back (no listener left behind).
"""
import atexit

import _models
from _harness import Workload

_open = {}  # library name -> its open profiler session


def _close_open(lib=None):
    """Close lib's open session (every library's when lib is None)."""
    for name in [lib.__name__] if lib is not None else list(_open):
        prof = _open.pop(name, None)
        if prof is not None:
            prof.__exit__(None, None, None)


atexit.register(_close_open)


def _session(lib):
    """A profiler session left open for the timing loop (closed by lib's next factory)."""
    _close_open(lib)
    prof = lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU])
    prof.__enter__()
    _open[lib.__name__] = prof
    return prof


def _plain(lib):
    _close_open(lib)
    return _models.mlp_train_step(lib)


def _profiled(lib):
    step = _models.mlp_train_step(lib)
    _session(lib)
    return step


def _add_small(lib):
    _close_open(lib)
    x = lib.ones(8)
    y = lib.ones(8)
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU]):
        x + y  # a profiling session before: the fast path must be back after it
    return lambda: x + y


def _add_small_profiled(lib):
    x = lib.ones(8)
    y = lib.ones(8)
    _session(lib)
    return lambda: x + y


WORKLOADS = [
    Workload("mlp_step_plain", ember=_plain, unit="train step",
             notes="784-128-128-10 MLP, batch 64, CrossEntropyLoss, SGD; no profiler"),
    Workload("mlp_step_profiled", ember=_profiled, unit="train step",
             notes="the same step inside profiler.profile(activities=[CPU])"),
    Workload("add_small_plain", ember=_add_small, unit="op",
             notes="x + y on 8 floats, after a profiling session ended (fast path)"),
    Workload("add_small_profiled", ember=_add_small_profiled, unit="op",
             notes="the same add inside a profiler session"),
]
