"""The user-facing profilers: ``ember.profiler.profile`` (schedule, steps, trace handlers) and the
legacy ``ember.autograd.profiler.profile``; ``record_function`` ranges."""
import contextlib
import os
import socket
import threading
import time
import warnings
from enum import Enum

from . import _collector as C
from ._events import EventList, FunctionEventAvg, build_events, export_chrome_trace


class ProfilerActivity(Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities():
    return {ProfilerActivity.CPU}


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The profiler's action at each step: skip ``skip_first`` steps, then cycles of ``wait``
    idle steps, ``warmup`` steps and ``active`` recorded steps (the last one saves), ``repeat``
    times (0: until the end)."""
    for name, v in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                    ("skip_first", skip_first)):
        if not isinstance(v, int) or v < 0:
            raise ValueError(f"schedule: {name} must be a non-negative integer, got {v!r}")
    if active < 1:
        raise ValueError("schedule: active must be at least 1")
    num_steps = wait + warmup + active

    def schedule_fn(step):
        if step < 0:
            raise ValueError(f"schedule: step must be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait and step < wait:
            return ProfilerAction.NONE
        if repeat > 0 and step // num_steps >= repeat:
            return ProfilerAction.NONE
        mod = step % num_steps
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _default_schedule(step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` callback writing ``<worker>.<time_ms>.pt.trace.json[.gz]`` into
    ``dir_name`` (the layout TensorBoard's profiler plugin and Holistic Trace Analysis read)."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        fn = f"{name}.{time.time_ns() // 1_000_000}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, fn))
    return handler


class record_function(contextlib.ContextDecorator):
    """A named range in the profile (``cat: user_annotation``), as a context manager or a
    decorator; free when no profiler is recording."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._tls = threading.local()  # open ranges per thread (a decorated function may recurse
        #                                or run on several threads at once)

    def __enter__(self):
        stack = getattr(self._tls, "open", None)
        if stack is None:
            stack = self._tls.open = []
        stack.append([c.push_range(self.name) for c in C._active] if C._active else None)
        return self

    def __exit__(self, *exc):
        stack = getattr(self._tls, "open", None)
        closers = stack.pop() if stack else None
        if closers:
            for c in reversed(closers):
                c()
        return False


def _module_path_names(records):
    """Dotted hierarchy names for module call records (root: class name)."""
    paths = {}

    def path_of(rec):
        p = paths.get(id(rec))
        if p is not None:
            return p
        mod, parent = rec[0], rec[4]
        if parent is None:
            p = type(mod).__name__
        else:
            child = None
            for n, m in getattr(parent[0], "_modules", {}).items():
                if m is mod:
                    child = n
                    break
            p = path_of(parent) + "." + (child if child is not None else type(mod).__name__)
        paths[id(rec)] = p
        return p
    return [path_of(r) for r in records]


class _ProfileBase:
    """What both profilers share: a collector per recording cycle, events, averages, export."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False,
                 with_modules=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self._collector = None     # the cycle being recorded
        self._last = None          # the last finished cycle
        self._events = None

    def _new_collector(self):
        return C.Collector(self.record_shapes, self.profile_memory, self.with_stack, self.with_modules)

    def _start_cycle(self):
        self._collector = self._new_collector()
        self._collector.start()

    def _stop_cycle(self):
        c = self._collector
        if c is not None:
            c.stop()
            self._last = c
            self._events = None
            self._collector = None

    def _finished(self):
        if self._last is None:
            raise RuntimeError("Profiler didn't finish running: no events have been recorded yet "
                               "(exit the profiler context or call stop() first)")
        return self._last

    def events(self):
        if self._events is None:
            c = self._finished()
            self._events = EventList(build_events(c.records), profile_memory=self.profile_memory,
                                     with_stack=self.with_stack,
                                     trace_meta={"base_ns": c.start_unix_ns - c.start_ns,
                                                 "module_events": self._module_trace_events(c)})
        return self._events

    @property
    def function_events(self):
        return self.events()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by=None):
        """Statistics per op name; ``group_by="module"``: per nn.Module in the call hierarchy."""
        if group_by is not None:
            if group_by != "module":
                raise ValueError(f"key_averages: group_by must be None or 'module', got {group_by!r}")
            return self._module_averages()
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def _module_averages(self):
        c = self._finished()
        recs = [r for r in c.module_records if r[3] is not None]
        paths = _module_path_names(recs)
        child_time = {}
        for r in recs:
            if r[4] is not None:
                child_time[id(r[4])] = child_time.get(id(r[4]), 0) + (r[3] - r[2])
        groups = {}
        for r, p in zip(recs, paths):
            if r[4] is not None:
                p = f"{p} ({type(r[0]).__name__})"
            avg = groups.get(p)
            if avg is None:
                avg = groups[p] = FunctionEventAvg(p)
                avg.module_type = type(r[0]).__name__
                avg.cat = "module"
            dur = (r[3] - r[2]) / 1000.0
            avg.count += 1
            avg.cpu_time_total += dur
            avg.self_cpu_time_total += dur - child_time.get(id(r), 0) / 1000.0
        return EventList(groups.values())

    def _module_trace_events(self, c):
        if not self.with_modules:
            return ()
        recs = [r for r in c.module_records if r[3] is not None]
        return [{"name": f"nn.Module: {type(r[0]).__name__}", "path": p, "tid": r[1],
                 "start_ns": r[2], "end_ns": r[3]} for r, p in zip(recs, _module_path_names(recs))]

    def table(self, *args, **kwargs):
        return self.key_averages().table(*args, **kwargs)

    def total_average(self):
        return self.events().total_average()

    @property
    def self_cpu_time_total(self):
        return self.events().self_cpu_time_total

    def export_chrome_trace(self, path):
        """Write the trace (``.json``, or gzip'd JSON when ``path`` ends in ``.gz``)."""
        ev = self.events()
        return export_chrome_trace(ev, path, **ev._trace_meta)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Collapsed stacks (``frame;frame;op value``) for flame graphs; needs with_stack=True."""
        if not self.with_stack:
            raise RuntimeError("export_stacks needs the profiler to run with with_stack=True")
        with open(path, "w") as f:
            for e in self.events():
                if e.stack:
                    value = int(getattr(e, metric))
                    f.write(";".join(reversed(e.stack)) + ";" + e.name + " " + str(value) + "\n")


class profile(_ProfileBase):
    """``ember.profiler.profile``: records CPU activity (ops, backward nodes, ranges), optionally
    following a ``schedule`` with ``step()`` and calling ``on_trace_ready`` when a cycle ends."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None):
        super().__init__(record_shapes, profile_memory, with_stack, with_modules)
        acts = set(activities) if activities else supported_activities()
        unsupported = [a for a in acts if a not in supported_activities()]
        if unsupported:
            warnings.warn(f"ember's profiler records CPU activity only; ignoring {unsupported}")
        self.activities = acts
        self.schedule = schedule if schedule is not None else _default_schedule
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._step_range = None
        self._running = False

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    def start(self):
        self._running = True
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self):
        if not self._running:
            return
        self._close_step()
        self._transit(self.current_action, None)
        self._running = False

    def step(self):
        """Mark the end of one training step: close ``ProfilerStep#N``, move the schedule on."""
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._open_step()

    def _open_step(self):
        if self.record_steps and self._collector is not None:
            self._step_range = self._collector.push_range(f"ProfilerStep#{self.step_num}")

    def _close_step(self):
        if self._step_range is not None:
            self._step_range()
            self._step_range = None

    def _transit(self, prev, cur):
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev in recording and (prev is A.RECORD_AND_SAVE or cur not in recording):
            self._stop_cycle()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if cur in recording and self._collector is None:
            self._start_cycle()


class _LegacyProfile(_ProfileBase):
    """``ember.autograd.profiler.profile``: one recording from ``__enter__`` to ``__exit__``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        super().__init__(record_shapes, profile_memory, with_stack, with_modules)
        self.enabled = enabled
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start_cycle()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.enabled:
            self._stop_cycle()
        return False

    def __str__(self):
        return self.key_averages().table() if self._last is not None else "<unfinished profile>"
