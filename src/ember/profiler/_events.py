"""Profiler results: events with their nesting, averages, the statistics table and the chrome
trace. Times are microseconds (floats) as in PyTorch's ``FunctionEvent``; memory is bytes."""
import gzip
import json
import os
from collections import OrderedDict

from . import _collector as C

_US_IN_SECOND = 1000.0 * 1000.0
_US_IN_MS = 1000.0


def format_time(time_us):
    """Microseconds the way PyTorch's tables print them: ``1.234s``, ``12.345ms``, ``3.000us``."""
    if time_us >= _US_IN_SECOND:
        return f"{time_us / _US_IN_SECOND:.3f}s"
    if time_us >= _US_IN_MS:
        return f"{time_us / _US_IN_MS:.3f}ms"
    return f"{time_us:.3f}us"


def format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def format_memory(nbytes):
    """Bytes the way PyTorch's tables print them: ``400 B``, ``1.17 KB``, ``3.05 MB``."""
    kb = 1024
    mb = 1024 * kb
    gb = 1024 * mb
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return f"{int(nbytes)} B"


class FunctionEvent:
    """One profiled range: an op (``aten::mul``), a backward node (``MulBackward0``), a
    ``record_function`` range or a ``ProfilerStep#N``."""
    __slots__ = ("id", "name", "cat", "thread", "start_ns", "end_ns", "input_shapes", "stack",
                 "cpu_memory_usage", "cpu_parent", "cpu_children", "module")
    count = 1
    device_time_total = cuda_time_total = self_device_time_total = self_cuda_time_total = 0.0
    is_async = False
    is_remote = False
    node_id = -1

    def __init__(self, id, name, thread, start_ns, end_ns, cat="cpu_op", input_shapes=None,
                 stack=None, cpu_memory_usage=0):
        self.id = id
        self.name = name
        self.cat = cat
        self.thread = thread
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_memory_usage = cpu_memory_usage or 0
        self.cpu_parent = None
        self.cpu_children = []
        self.module = None

    @property
    def key(self):
        return self.name

    @property
    def time_range(self):
        return (self.start_ns / 1000.0, self.end_ns / 1000.0)

    @property
    def cpu_time_total(self):
        return (self.end_ns - self.start_ns) / 1000.0

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={format_time(self.cpu_time_total)} "
                f"self_cpu_time={format_time(self.self_cpu_time_total)} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg:
    """Statistics of the events sharing one key (name, and input shapes / stack when grouped)."""
    device_time_total = cuda_time_total = self_device_time_total = self_cuda_time_total = 0.0
    is_remote = False
    node_id = -1

    def __init__(self, key=None):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.cat = None
        self.module_type = None

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.cat = other.cat
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    __iadd__ = add

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def self_cpu_time(self):
        return self.self_cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={format_time(self.self_cpu_time_total)} "
                f"cpu_time={format_time(self.cpu_time)} count={self.count} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


def build_events(records):
    """FunctionEvents from raw records ``[name, cat, tid, t0_ns, t1_ns, shapes, mem, stack]``
    (in open order): parents and children from interval containment per thread."""
    events = []
    for i, r in enumerate(records):
        t1 = r[C.T1] if r[C.T1] is not None else r[C.T0]
        mem = r[C.MEM] if r[C.MEM] is not None else 0
        events.append(FunctionEvent(i, r[C.NAME], r[C.TID], r[C.T0], t1, r[C.CAT], r[C.SHAPES],
                                    r[C.STACK], mem))
    link_tree(events)
    return events


def link_tree(events):
    """Set ``cpu_parent``/``cpu_children``: on each thread, an event is the child of the innermost
    event whose interval contains it (ties in start time: the longer one, then the earlier-opened
    one, is the parent)."""
    by_thread = {}
    for e in events:
        by_thread.setdefault(e.thread, []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start_ns, -e.end_ns, e.id))
        stack = []
        for e in evs:
            while stack and stack[-1].end_ns < e.end_ns:  # sorted by start: contains iff ends later
                stack.pop()
            if stack:
                p = stack[-1]
                e.cpu_parent = p
                p.cpu_children.append(e)
            stack.append(e)
    return events


class EventList(list):
    """A list of events (or of averages) with PyTorch's reporting methods."""

    def __init__(self, *args, profile_memory=False, with_stack=False, trace_meta=None, **kw):
        super().__init__(*args, **kw)
        self._profile_memory = profile_memory
        self._with_stack = with_stack
        self._trace_meta = trace_meta or {}

    def _like(self, items):
        return EventList(items, profile_memory=self._profile_memory, with_stack=self._with_stack,
                         trace_meta=self._trace_meta)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def total_average(self):
        total = FunctionEventAvg("Total")
        for e in self:
            total.count += e.count
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
            total.cpu_memory_usage += e.cpu_memory_usage
            total.self_cpu_memory_usage += e.self_cpu_memory_usage
        return total

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """Events grouped by name (and input shapes / the top ``group_by_stack_n`` stack frames),
        in order of first appearance."""
        groups = OrderedDict()
        for e in self:
            key = [e.key]
            if group_by_input_shape:
                key.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                key.append(tuple(e.stack[:group_by_stack_n]))
            key = tuple(key)
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg()
            avg.add(e)
            if group_by_stack_n > 0:
                avg.stack = list(e.stack[:group_by_stack_n])
        out = self._like(groups.values())
        out._grouped_shapes = group_by_input_shape
        return out

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        return build_table(self, sort_by=sort_by, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           profile_memory=self._profile_memory,
                           with_shapes=getattr(self, "_grouped_shapes", False),
                           top_level_events_only=top_level_events_only)

    def __str__(self):
        return self.table()

    def to_dataframe(self):
        """A pandas DataFrame, one row per event (or average)."""
        import pandas as pd
        rows = []
        for e in self:
            row = {"key": e.key, "count": e.count, "cpu_time_total": e.cpu_time_total,
                   "self_cpu_time_total": e.self_cpu_time_total,
                   "cpu_time_avg": e.cpu_time_total / e.count if e.count else 0.0,
                   "cpu_memory_usage": e.cpu_memory_usage,
                   "self_cpu_memory_usage": e.self_cpu_memory_usage,
                   "input_shapes": str(e.input_shapes) if e.input_shapes else ""}
            if getattr(e, "module_type", None) is not None:
                row["module_type"] = e.module_type
            rows.append(row)
        return pd.DataFrame(rows, columns=None if rows else
                            ["key", "count", "cpu_time_total", "self_cpu_time_total", "cpu_time_avg",
                             "cpu_memory_usage", "self_cpu_memory_usage", "input_shapes"])

    def export_chrome_trace(self, path):
        export_chrome_trace(self, path, **self._trace_meta)


def _sort_key(sort_by):
    aliases = {"cuda_time_total": "device_time_total", "self_cuda_time_total": "self_device_time_total",
               "cuda_time": "device_time_total", "self_cuda_memory_usage": "device_time_total",
               "cuda_memory_usage": "device_time_total"}
    attr = aliases.get(sort_by, sort_by)

    def key(e):
        v = getattr(e, attr, None)
        if v is None:
            raise AttributeError(f"table(sort_by={sort_by!r}): events have no attribute {sort_by!r}")
        return v
    return key


def _clip(s, width):
    return s if len(s) <= width else s[: max(width - 3, 0)] + "..."


def build_table(events, sort_by=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, header=None,
                profile_memory=False, with_shapes=False, top_level_events_only=False):
    """The statistics table, laid out as PyTorch's: right-aligned columns two spaces apart,
    dashed rules, and the ``Self CPU time total`` footer."""
    events = list(events)
    if top_level_events_only:
        events = [e for e in events if getattr(e, "cpu_parent", None) is None]
    if sort_by is not None:
        events.sort(key=_sort_key(sort_by), reverse=True)
    self_total = sum(e.self_cpu_time_total for e in events)
    shown = events[:row_limit] if row_limit is not None and row_limit > 0 else events
    has_shapes = with_shapes and any(e.input_shapes for e in events)
    has_stack = any(getattr(e, "stack", None) for e in events) and any(
        isinstance(e, FunctionEventAvg) and e.stack for e in events)

    name_w = max([len(e.key) for e in events] + [4]) + 4
    if max_name_column_width is not None:
        name_w = min(name_w, max_name_column_width)
    col_w = 12
    headers = [("Name", name_w), ("Self CPU %", col_w), ("Self CPU", col_w), ("CPU total %", col_w),
               ("CPU total", col_w), ("CPU time avg", col_w)]
    if profile_memory:
        headers += [("CPU Mem", col_w), ("Self CPU Mem", col_w)]
    headers.append(("# of Calls", col_w))
    shapes_w = 0
    if has_shapes:
        shapes_w = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_column_width)
        headers.append(("Input Shapes", shapes_w))
    src_w = 0
    if has_stack:
        src_w = min(max(len(s) for e in events for s in (e.stack or [""])) + 4, max_src_column_width)
        headers.append(("Source Location", src_w))

    rule = "".join("-" * w + "  " for _, w in headers)
    lines = []
    if header is not None:
        lines += ["=" * len(rule), header]
    lines += [rule, "".join(f"{h: >{w}}  " for h, w in headers), rule]
    for e in shown:
        cells = [_clip(e.key, name_w),
                 format_time_share(e.self_cpu_time_total, self_total), format_time(e.self_cpu_time_total),
                 format_time_share(e.cpu_time_total, self_total), format_time(e.cpu_time_total),
                 format_time(e.cpu_time_total / e.count if e.count else 0.0)]
        if profile_memory:
            cells += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
        cells.append(str(e.count))
        if has_shapes:
            cells.append(_clip(str(e.input_shapes) if e.input_shapes else "[]", shapes_w))
        if has_stack:
            cells.append(_clip((e.stack or [""])[0], src_w))
        lines.append("".join(f"{c: >{w}}  " for c, (_, w) in zip(cells, headers)))
        if has_stack and e.stack:
            for s in e.stack[1:]:
                pad = [""] * (len(headers) - 1)
                lines.append("".join(f"{c: >{w}}  " for c, (_, w) in zip(pad + [_clip(s, src_w)], headers)))
    lines.append(rule)
    lines.append(f"Self CPU time total: {format_time(self_total)}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- chrome trace


def chrome_trace_dict(events, rank=0, world_size=1, base_ns=0, pid=None, module_events=()):
    """The trace as a dict in the Kineto layout that Perfetto, chrome://tracing and Holistic
    Trace Analysis read. ``ts``/``dur`` are integer microseconds on the profiler's clock;
    ``baseTimeNanoseconds`` turns ``ts`` into Unix time (``ts * 1000 + base``)."""
    pid = os.getpid() if pid is None else pid
    out = []
    threads = set()
    for e in events:
        ts = e.start_ns // 1000
        args = {"External id": e.id, "Ev Idx": e.id}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        if e.cpu_memory_usage:
            args["Allocated Bytes"] = e.cpu_memory_usage
        ember_op = getattr(e.name, "ember", None)
        if ember_op is not None:
            args["ember op"] = ember_op
        out.append({"ph": "X", "cat": e.cat, "name": e.name, "pid": pid, "tid": e.thread, "ts": ts,
                    "dur": e.end_ns // 1000 - ts, "args": args})
        threads.add(e.thread)
    for m in module_events:
        ts = m["start_ns"] // 1000
        out.append({"ph": "X", "cat": "python_function", "name": m["name"], "pid": pid, "tid": m["tid"],
                    "ts": ts, "dur": m["end_ns"] // 1000 - ts, "args": {"Module Hierarchy": m["path"]}})
        threads.add(m["tid"])
    meta = [{"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
             "args": {"name": "ember"}},
            {"name": "process_labels", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
             "args": {"labels": "CPU"}}]
    for t in sorted(threads):
        meta.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": t,
                     "args": {"name": f"thread {t}"}})
    return {"schemaVersion": 1, "deviceProperties": [],
            "distributedInfo": {"backend": "gloo", "rank": int(rank), "world_size": int(world_size)},
            "traceEvents": meta + out, "traceName": "", "displayTimeUnit": "ms",
            "baseTimeNanoseconds": int(base_ns)}


def _rank_info():
    try:
        import sys
        dist = sys.modules.get("ember.distributed")
        if dist is not None and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:  # pragma: no cover - a half-initialised distributed module
        pass
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def export_chrome_trace(events, path, base_ns=0, module_events=()):
    rank, world = _rank_info()
    trace = chrome_trace_dict(events, rank=rank, world_size=world, base_ns=base_ns,
                              module_events=module_events)
    path = os.fspath(path)
    trace["traceName"] = path
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    data = json.dumps(trace).encode("utf-8")
    if path.endswith(".gz"):
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)
    return path
