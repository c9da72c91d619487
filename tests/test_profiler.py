"""The profiler: events for ops and backward nodes, nesting and self time, averages and tables,
chrome traces, schedules and steps, per-module times, and no cost when off."""
import gzip
import json
import re

import pytest

import ember
from ember import _dispatch as D
from ember.profiler import _collector as C
from ember.profiler._events import (EventList, FunctionEventAvg, build_events, format_memory,
                                    format_time)


def _rec(name, tid, t0, t1, cat="cpu_op", shapes=None, mem=None):
    r = [None] * 8
    r[C.NAME], r[C.CAT], r[C.TID], r[C.T0], r[C.T1], r[C.SHAPES], r[C.MEM] = \
        name, cat, tid, t0, t1, shapes, mem
    return r


# ----------------------------------------------------------------------------- synthetic stream

def test_nesting_and_self_time_on_a_synthetic_stream():
    # thread 1:  step [0, 100us) > { a [10, 40) > { b [15, 25), b [25, 35) }, c [50, 90) > b [60, 61) }
    # thread 2:  a [5, 26)   (other thread: never a child of thread 1's step)
    us = 1000
    recs = [_rec("step", 1, 0, 100 * us, "user_annotation"),
            _rec("a", 1, 10 * us, 40 * us), _rec("b", 1, 15 * us, 25 * us),
            _rec("b", 1, 25 * us, 35 * us), _rec("a", 2, 5 * us, 26 * us),
            _rec("c", 1, 50 * us, 90 * us), _rec("b", 1, 60 * us, 61 * us)]
    ev = build_events(recs)
    step, a1, b1, b2, a2, c, b3 = ev
    assert step.cpu_parent is None and a2.cpu_parent is None
    assert a1.cpu_parent is step and c.cpu_parent is step
    assert b1.cpu_parent is a1 and b2.cpu_parent is a1 and b3.cpu_parent is c
    assert step.cpu_time_total == 100.0
    assert step.self_cpu_time_total == 100.0 - 30.0 - 40.0
    assert a1.self_cpu_time_total == 30.0 - 20.0
    assert c.self_cpu_time_total == 39.0
    avg = {e.key: e for e in EventList(ev).key_averages()}
    assert avg["a"].count == 2 and avg["a"].cpu_time_total == 51.0
    assert avg["a"].self_cpu_time_total == 10.0 + 21.0
    assert avg["b"].count == 3 and avg["b"].self_cpu_time_total == 21.0
    assert avg["a"].cpu_time == 25.5
    # self times add up to the busy time of each thread
    total_self = sum(e.self_cpu_time_total for e in avg.values())
    assert total_self == pytest.approx(100.0 + 21.0)
    table = EventList(ev).key_averages().table(sort_by="self_cpu_time_total")
    assert table.rstrip().endswith(f"Self CPU time total: {format_time(total_self)}")
    rows = [ln.split() for ln in table.splitlines()[3:-2]]
    assert [r[0] for r in rows] == ["c", "a", "step", "b"]  # sorted by self time, descending
    c_row = rows[0]
    assert c_row[1:] == ["32.23%", "39.000us", "33.06%", "40.000us", "40.000us", "1"]


def test_same_start_ties_nest_longer_first():
    recs = [_rec("inner", 1, 10, 10), _rec("outer", 1, 10, 50), _rec("next", 1, 50, 60)]
    inner, outer, nxt = build_events(recs)
    assert inner.cpu_parent is outer and nxt.cpu_parent is None


def test_time_and_memory_formats_follow_pytorch():
    assert format_time(3.0) == "3.000us"
    assert format_time(1234.5) == "1.234ms" or format_time(1234.5) == "1.235ms"
    assert format_time(2.5e6) == "2.500s"
    assert format_memory(400) == "400 B"
    assert format_memory(-400) == "-400 B"
    assert format_memory(1200) == "1.17 KB"
    assert format_memory(3 * 1024 ** 2) == "3.00 MB"


def test_table_layout_matches_pytorch(torch):
    """Header and rules are laid out as PyTorch's (same columns, widths and spacing)."""
    x = torch.randn(4, 4)
    with torch.profiler.profile() as p:
        torch.mul(x, x)
    theirs = p.key_averages().table().splitlines()
    a = ember.randn(4, 4)
    with ember.profiler.profile() as q:
        ember.mul(a, a)
    ours = q.key_averages().table().splitlines()
    # the columns after the name column are identical; the name column is right-aligned
    assert ours[1].split("Name", 1)[1] == theirs[1].split("Name", 1)[1]
    assert ours[0].split("  ", 1)[1] == theirs[0].split("  ", 1)[1]
    assert re.fullmatch(r"Self CPU time total: \d+\.\d{3}(us|ms|s)", ours[-1])


# ----------------------------------------------------------------------------- real recording

def test_ops_and_backward_nodes_are_events():
    x = ember.randn(3, 4, requires_grad=True)
    with ember.autograd.profiler.profile() as prof:
        y = (x * x).sum()
        y.backward()
    names = [e.name for e in prof.function_events]
    assert "aten::mul" in names and "aten::sum" in names
    assert "MulBackward0" in names and "SumBackward0" in names and "torch::autograd::AccumulateGrad" in names
    # ops run by a backward node are its children
    mb = next(e for e in prof.function_events if e.name == "MulBackward0")
    assert mb.cpu_children and all(c.name.startswith("aten::") for c in mb.cpu_children)
    assert mb.self_cpu_time_total <= mb.cpu_time_total
    for e in prof.key_averages():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-9
    assert D.state.simple and not D.state.listeners


def test_backward_nodes_carry_pytorch_overload_names():
    x = ember.randn(3, 4, requires_grad=True)
    w = ember.randn(3, 2, requires_grad=True)
    with ember.autograd.profiler.profile() as prof:
        (x.t() @ w).sum(1).std().backward()
    names = {e.name for e in prof.function_events}
    assert {"TBackward0", "MmBackward0", "SumBackward1", "StdBackward0"} <= names
    assert not {"PermuteBackward0", "SumBackward0", "SqrtBackward0"} & names


def test_record_function_context_and_decorator():
    @ember.profiler.record_function("decorated")
    def f(t):
        return t + 1

    x = ember.ones(3)
    f(x)  # no profiler: a no-op
    with ember.profiler.profile() as prof:
        with ember.profiler.record_function("outer"):
            f(x)
            f(x)
    ev = {e.name: e for e in prof.events()}
    outer = ev["outer"]
    decorated = [e for e in prof.events() if e.name == "decorated"]
    assert len(decorated) == 2 and all(d.cpu_parent is outer for d in decorated)
    assert all(d.cpu_children[0].name == "aten::add" for d in decorated)
    assert outer.cat == "user_annotation"
    assert prof.key_averages().table().count("decorated") == 1


def test_input_shapes_grouping_and_table_columns():
    with ember.profiler.profile(record_shapes=True) as prof:
        ember.mul(ember.ones(2, 3), ember.ones(2, 3))
        ember.mul(ember.ones(5), 2.0)
        ember.mul(ember.ones(5), 3.0)
    by_shape = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "aten::mul"]
    assert sorted((str(e.input_shapes), e.count) for e in by_shape) == \
        [("[[2, 3], [2, 3]]", 1), ("[[5], []]", 2)]
    table = prof.key_averages(group_by_input_shape=True).table(row_limit=5)
    assert "Input Shapes" in table and "[[2, 3], [2, 3]]" in table
    plain = prof.key_averages().table()
    assert "Input Shapes" not in plain
    assert [e.count for e in prof.key_averages() if e.key == "aten::mul"] == [3]


def test_profile_memory_columns_and_values():
    a = ember.ones(1000, 100)
    with ember.profiler.profile(profile_memory=True) as prof:
        keep = a * 2  # noqa: F841  (400 KB that stays allocated)
        (a + 1).sum()  # a temporary: allocated and freed within the range
    table = prof.key_averages().table()
    assert "CPU Mem" in table and "Self CPU Mem" in table
    mem = {e.key: e.cpu_memory_usage for e in prof.key_averages()}
    assert 400_000 <= mem["aten::mul"] < 420_000
    assert 400_000 <= mem["aten::add"] < 420_000


def test_table_options():
    x = ember.ones(3)
    with ember.profiler.profile() as prof:
        with ember.profiler.record_function("a_very_long_range_name_that_goes_on_and_on_forever"):
            for _ in range(3):
                x = x + 1
            x = x * 2
    t = prof.key_averages().table(sort_by="count", row_limit=1, max_name_column_width=20)
    body = t.splitlines()[3:-2]
    assert len(body) == 1 and body[0].split()[0] == "aten::add"
    t = prof.key_averages().table(sort_by="cpu_time_total", max_name_column_width=20)
    assert "a_very_long_range..." in t
    with pytest.raises(AttributeError, match="sort_by"):
        prof.key_averages().table(sort_by="no_such_column")


def test_to_dataframe():
    pytest.importorskip("pandas")
    with ember.profiler.profile() as prof:
        ember.ones(3) + 1
    df = prof.key_averages().to_dataframe()
    assert {"key", "count", "cpu_time_total", "self_cpu_time_total", "cpu_time_avg"} <= set(df.columns)
    assert "aten::add" in set(df["key"])


def test_listener_removed_after_an_exception():
    with pytest.raises(ValueError):
        with ember.profiler.profile():
            ember.ones(2) + 1
            raise ValueError("boom")
    assert D.state.simple and D.state.listeners == [] and C._active == []


def test_no_profiler_keeps_the_fast_path(monkeypatch):
    """With no profiler active, dispatch never reaches the slow path (where listeners run)."""
    calls = []
    real = D.dispatch_slow
    monkeypatch.setattr(D, "dispatch_slow", lambda *a: calls.append(a[0].name) or real(*a))
    x = ember.randn(4, 4, requires_grad=True)
    with ember.profiler.profile():
        (x * x).sum()
    assert calls  # while profiling, ops go through the listeners
    calls.clear()
    (x * x).sum().backward()
    ember.profiler.record_function("idle")(lambda: None)()
    assert calls == []


# ----------------------------------------------------------------------------- chrome trace

def _train_steps(prof, steps):
    x = ember.randn(2, 3, requires_grad=True)
    for _ in range(steps):
        (x * 2).sum().backward()
        prof.step()


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_chrome_trace_schema(tmp_path, suffix):
    sched = ember.profiler.schedule(wait=0, warmup=0, active=3)
    with ember.profiler.profile(schedule=sched, record_shapes=True) as prof:
        _train_steps(prof, 2)
    path = tmp_path / ("trace" + suffix)
    prof.export_chrome_trace(str(path))
    raw = path.read_bytes()
    trace = json.loads(gzip.decompress(raw) if suffix.endswith(".gz") else raw)
    assert trace["schemaVersion"] == 1
    assert isinstance(trace["distributedInfo"]["rank"], int)
    assert isinstance(trace["baseTimeNanoseconds"], int)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert complete
    for e in complete:
        assert {"name", "cat", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["cat"] in ("cpu_op", "user_annotation")
        assert type(e["ts"]) is int and type(e["dur"]) is int and e["dur"] >= 0
    steps = {e["name"]: e for e in complete if e["name"].startswith("ProfilerStep#")}
    assert sorted(steps) == ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]
    assert all(e["cat"] == "user_annotation" for e in steps.values())
    s0 = steps["ProfilerStep#0"]
    ops0 = [e for e in complete if e["cat"] == "cpu_op" and s0["ts"] <= e["ts"] < s0["ts"] + s0["dur"]]
    names = {e["name"] for e in ops0}
    assert {"aten::mul", "aten::sum", "MulBackward0"} <= names
    for e in ops0:  # integer microseconds keep the nesting: children end within the step
        assert e["ts"] + e["dur"] <= s0["ts"] + s0["dur"]
    assert any(e["args"].get("Input Dims") == [[2, 3], []] for e in complete if e["name"] == "aten::mul")


def test_schedule_actions_and_trace_ready():
    A = ember.profiler.ProfilerAction
    s = ember.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    got = [s(i) for i in range(11)]
    assert got == [A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
                   A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]
    ready = []

    def on_ready(p):
        ready.append(sorted({e.name for e in p.events() if e.name.startswith("ProfilerStep")}))
    with ember.profiler.profile(schedule=s, on_trace_ready=on_ready) as prof:
        _train_steps(prof, 10)
    assert ready == [["ProfilerStep#3", "ProfilerStep#4"], ["ProfilerStep#7", "ProfilerStep#8"]]
    with pytest.raises(ValueError):
        ember.profiler.schedule(wait=-1, warmup=0, active=1)


def test_tensorboard_trace_handler(tmp_path):
    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w0")
    sched = ember.profiler.schedule(wait=0, warmup=0, active=1)
    with ember.profiler.profile(schedule=sched, on_trace_ready=handler) as prof:
        _train_steps(prof, 1)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files and all(f.startswith("w0.") and f.endswith(".pt.trace.json") for f in files)


def test_module_times():
    nn = pytest.importorskip("ember.nn")
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8), nn.Tanh()))
    x = ember.randn(2, 4)
    with ember.profiler.profile() as prof:
        m(x)
        m(x)
    avg = {e.key: e for e in prof.key_averages(group_by="module")}
    assert set(avg) == {"Sequential", "Sequential.0 (Linear)", "Sequential.1 (ReLU)",
                        "Sequential.2 (Sequential)", "Sequential.2.0 (Linear)", "Sequential.2.1 (Tanh)"}
    assert all(e.count == 2 for e in avg.values())
    root, inner = avg["Sequential"], avg["Sequential.2 (Sequential)"]
    children = [avg["Sequential.0 (Linear)"], avg["Sequential.1 (ReLU)"], inner]
    assert root.self_cpu_time_total == pytest.approx(
        root.cpu_time_total - sum(c.cpu_time_total for c in children), abs=1e-6)
    assert inner.self_cpu_time_total <= inner.cpu_time_total
    # module hooks are gone once the profiler stops
    from ember.nn.modules import module as M
    assert not M._global_forward_hooks and not M._global_forward_pre_hooks


def _user_fn(x):
    return (x * 2).sum()


def test_with_stack_groups_by_user_frames(tmp_path):
    x = ember.ones(3)
    with ember.profiler.profile(with_stack=True) as prof:
        _user_fn(x)
        _user_fn(x)
    mul = next(e for e in prof.events() if e.name == "aten::mul")
    assert mul.stack and "_user_fn" in mul.stack[0] and "test_profiler.py" in mul.stack[0]
    assert not any("/ember/" in s and "tests" not in s for s in mul.stack)  # ember frames hidden
    avg = [e for e in prof.key_averages(group_by_stack_n=1) if e.key == "aten::mul"]
    assert len(avg) == 1 and avg[0].count == 2
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()
    out = tmp_path / "stacks.txt"
    prof.export_stacks(str(out))
    lines = out.read_text().splitlines()
    assert any(ln.rsplit(" ", 1)[0].endswith("_user_fn;aten::mul") for ln in lines)


def test_step_inside_a_record_function_keeps_both_ranges():
    sched = ember.profiler.schedule(wait=0, warmup=0, active=3, repeat=1)
    x = ember.ones(2)
    with ember.profiler.profile(schedule=sched) as prof:
        with ember.profiler.record_function("train"):
            for _ in range(2):
                x + 1
                prof.step()
        x * 2  # after "train" closed; ProfilerStep#2 is still open
    ev = {e.name: e for e in prof.events()}
    train, s0, s1, s2 = (ev[k] for k in ("train", "ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"))
    mul = ev["aten::mul"]
    assert s0.end_ns <= s1.start_ns <= s1.end_ns <= s2.start_ns
    assert train.end_ns <= mul.start_ns  # "train" ended where its block ended, not at stop
    assert s1.cpu_parent is train and mul.cpu_parent is s2


def test_record_function_recursion_and_threads():
    import threading

    @ember.profiler.record_function("rec")
    def f(n, x):
        return x if n == 0 else f(n - 1, x + 1)

    x = ember.ones(2)
    with ember.profiler.profile() as prof:
        ts = [threading.Thread(target=f, args=(2, x)) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        f(2, x)
    recs = [e for e in prof.events() if e.name == "rec"]
    assert len(recs) == 9 and len({e.thread for e in recs}) == 3
    for e in recs:  # each range nests in the previous level of its own thread
        depth = 0
        p = e.cpu_parent
        while p is not None:
            assert p.thread == e.thread and p.name == "rec"
            depth += 1
            p = p.cpu_parent
        assert depth in (0, 1, 2)
    for t in {e.thread for e in recs}:
        mine = sorted((e for e in recs if e.thread == t), key=lambda e: e.start_ns)
        assert mine[1].cpu_parent is mine[0] and mine[2].cpu_parent is mine[1]


def test_op_events_are_named_as_pytorch_names_them(tmp_path, torch):
    import json
    x = ember.randn(3, 4, requires_grad=True)
    with ember.profiler.profile() as prof:
        y = ember.clamp(x, min=ember.zeros(3, 4))
        y.max(dim=1).values.sum().backward()
    names = {e.name for e in prof.events()}
    tx = torch.randn(3, 4, requires_grad=True)
    with torch.profiler.profile() as tprof:
        ty = torch.clamp(tx, min=torch.zeros(3, 4))
        ty.max(dim=1).values.sum().backward()
    tnames = {e.name for e in tprof.events()}
    assert {"aten::clamp", "aten::max", "aten::sum"} <= names & tnames
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    ev = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("name") == "aten::max"]
    assert ev and ev[0]["args"]["ember op"] == "max_dim"
