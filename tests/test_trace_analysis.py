"""Trace analysis: reading Kineto and ember traces, TraceDiff against Holistic Trace Analysis'
documented results, malformed input, the command line."""
import gzip
import json
import os
import pathlib
import shutil

import pytest

pd = pytest.importorskip("pandas")

import ember  # noqa: E402
from ember.trace_analysis import (DeviceType, LabeledTrace, TraceDiff, TraceFormatError,  # noqa: E402
                                  read_trace_file, shorten_name)
from ember.trace_analysis import cli  # noqa: E402

KINETO = pathlib.Path("/work/shared/testdata/kineto_traces")
if not KINETO.is_dir():  # the repository's own copy when the shared folder is not mounted
    KINETO = pathlib.Path(__file__).resolve().parents[2] / "shared" / "testdata" / "kineto_traces"
needs_data = pytest.mark.skipif(not KINETO.is_dir(), reason="Kineto test traces not available")
BASE, TEST = KINETO / "trace_compare" / "base", KINETO / "trace_compare" / "test"
ADD_KERNEL = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<int>, "
              "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<int>, "
              "at::detail::Array<char*, 3>)")


@needs_data
def test_kineto_trace_ranks_iterations_and_devices():
    t = LabeledTrace("base", str(BASE))
    assert t.ranks() == [1] and t.iterations() == [1009, 1010]
    ops = t.extract_ops(rank=1, iteration=1010)
    cpu = ops[ops["stream"] == -1]
    gpu = ops[ops["stream"] != -1]
    # HTA's documented facts for this trace: 6 CPU ops and 1 GPU kernel in iteration 1010
    assert len(cpu) == 6 and len(gpu) == 1
    assert gpu["name"].tolist() == [ADD_KERNEL]  # launched (correlation) from iteration 1010
    assert len(t.extract_ops(1, 1010, DeviceType.CPU)) == 6
    assert len(t.extract_ops(1, 1010, DeviceType.GPU)) == 1


@needs_data
def test_golden_trace_compare_diff():
    df = TraceDiff.compare_traces(str(BASE), str(TEST), control_iteration=1010, test_iteration=1010)
    assert list(df.columns) == ["Control_counts", "Control_total_duration", "Test_counts",
                                "Test_total_duration", "diff_counts", "diff_duration",
                                "counts_change_categories"]
    ops = TraceDiff.ops_diff(str(BASE), str(TEST), control_iteration=1010, test_iteration=1010)
    assert sorted(ops["added"]) == ["AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"]
    assert sorted(ops["deleted"]) == sorted(["nccl:all_reduce", ADD_KERNEL])
    assert sorted(ops["unchanged"]) == ["ProfilerStep#1010", "aten::as_strided", "aten::empty",
                                        "cudaEventQuery", "cudaLaunchKernel"]
    assert ops["increased"] == [] and ops["decreased"] == []
    assert df.loc["All2All_Pooled_Req", "Test_total_duration"] == 311
    assert df.loc["nccl:all_reduce", "diff_duration"] == -67
    assert df.loc["nccl:all_reduce", "counts_change_categories"] == "-"
    assert df.loc["CatBackward0", "counts_change_categories"] == "+"
    assert df.loc["aten::empty", "counts_change_categories"] == "="
    # the dict form and the DataFrame form of ops_diff agree
    assert TraceDiff.ops_diff(df, None) == ops
    # default iteration: the first one of each trace (1009 has no difference at all)
    first = TraceDiff.compare_traces(str(BASE), str(TEST))
    assert (first["diff_counts"] == 0).all() and "ProfilerStep#1009" in first.index


@needs_data
def test_labels_short_names_and_argument_errors():
    df = TraceDiff.compare_traces(LabeledTrace("A", str(BASE)), LabeledTrace("B", str(TEST)),
                                  control_iteration=1010, test_iteration=1010, use_short_name=True)
    assert "A_counts" in df.columns and "B_total_duration" in df.columns
    assert "at::native::vectorized_elementwise_kernel" in df.index
    with pytest.raises(ValueError, match="rank=7"):
        TraceDiff.compare_traces(str(BASE), str(TEST), control_rank=7)
    with pytest.raises(ValueError, match="iteration=5"):
        TraceDiff.compare_traces(str(BASE), str(TEST), test_iteration=5)


def test_shorten_name():
    assert shorten_name(ADD_KERNEL) == "at::native::vectorized_elementwise_kernel"
    assert shorten_name("aten::add") == "aten::add"
    assert shorten_name("void f<a<b>>(int (*)(int))") == "f"
    assert shorten_name("std::vector<int> h(int) const") == "const"  # the last word, as HTA
    assert shorten_name("std::vector<int> h(int)") == "h"


_BIG_PAIR = """
import resource, sys, time
from ember.trace_analysis import TraceDiff, DeviceType
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
df = TraceDiff.compare_traces(sys.argv[1], sys.argv[2], control_rank=3, test_rank=1,
                              control_iteration=1010, test_iteration=1010, device_type=DeviceType.CPU)
elapsed = time.perf_counter() - t0
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
assert len(df) > 50 and (df["diff_counts"] != 0).any(), df
assert (df["Control_counts"] + df["Test_counts"] > 0).all()
print(f"{elapsed:.2f} {grew:.0f}")
"""


@needs_data
def test_large_pair_diffs_with_bounded_memory():
    """The ~100k-event pair (about 35 MB of JSON a side): the streaming reader's peak memory stays
    well below a parsed-dicts load (timing is printed, never asserted)."""
    import subprocess
    import sys
    big = KINETO / "trace_diff"
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(ember.__file__).parents[1]))
    r = subprocess.run([sys.executable, "-c", _BIG_PAIR, str(big / "control"), str(big / "test")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    elapsed, grew_mb = map(float, r.stdout.split())
    print(f"100k-event pair diffed in {elapsed:.2f}s, peak RSS grew by {grew_mb:.0f} MB")
    assert grew_mb < 250


# ----------------------------------------------------------------------------- malformed input

def _write(folder, name, text, gz=False):
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    if gz:
        p.write_bytes(gzip.compress(text.encode()))
    else:
        p.write_text(text)
    return p


_GOOD = {"distributedInfo": {"rank": 0}, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}


def test_truncated_json_names_the_file(tmp_path):
    text = json.dumps(_GOOD)
    p = _write(tmp_path / "t", "rank0.json", text[: len(text) // 2])
    with pytest.raises(TraceFormatError, match=f"{p}.*truncated"):
        read_trace_file(str(p))
    p = _write(tmp_path / "g", "rank0.json.gz", text[:-3], gz=True)
    with pytest.raises(TraceFormatError, match=str(p)):
        LabeledTrace("x", str(tmp_path / "g"))


def test_missing_fields_and_steps(tmp_path):
    bad = json.loads(json.dumps(_GOOD))
    del bad["traceEvents"][1]["name"]
    p = _write(tmp_path / "a", "r.json", json.dumps(bad))
    with pytest.raises(TraceFormatError, match=rf"{p}.*traceEvents\[1\].*no 'name'"):
        read_trace_file(str(p))
    p = _write(tmp_path / "b", "r.json", json.dumps({"distributedInfo": {"rank": 0}}))
    with pytest.raises(TraceFormatError, match=rf"{p} has no 'traceEvents'"):
        read_trace_file(str(p))
    nosteps = {"distributedInfo": {"rank": 0}, "traceEvents": _GOOD["traceEvents"][1:]}
    _write(tmp_path / "c", "r.json", json.dumps(nosteps))
    with pytest.raises(TraceFormatError, match="no ProfilerStep#N"):
        TraceDiff.compare_traces(str(tmp_path / "c"), str(tmp_path / "c"))
    (tmp_path / "d2").mkdir()
    with pytest.raises(TraceFormatError, match="no trace files"):
        LabeledTrace("e", str(tmp_path / "d2"))


def test_missing_rank_warns_and_reads_rank_zero(tmp_path):
    t = {"traceEvents": _GOOD["traceEvents"]}
    _write(tmp_path / "r", "trace.json", json.dumps(t))
    with pytest.warns(UserWarning, match="rank 0"):
        lt = LabeledTrace("x", str(tmp_path / "r"))
    assert lt.ranks() == [0] and lt.iterations() == [1]


def test_fractional_timestamps_round_like_hta(tmp_path):
    t = {"distributedInfo": {"rank": 2}, "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "ts": 0.5, "dur": 10.0},
        {"ph": "X", "cat": "cpu_op", "name": "op", "ts": 10.2, "dur": 0.3},   # starts at 11: outside
        {"ph": "X", "cat": "cpu_op", "name": "op", "ts": 2.7, "dur": 1.6}]}   # [3, 4): inside
    _write(tmp_path / "f", "t.json", json.dumps(t))
    ops = LabeledTrace("f", str(tmp_path / "f")).extract_ops()
    assert ops["name"].tolist() == ["ProfilerStep#4", "op"]
    assert ops["ts"].tolist() == [1.0, 3.0] and ops["dur"].tolist() == [9.0, 1.0]


# ----------------------------------------------------------------------------- ember's own traces

def _profile_into(folder, model, x, steps=2):
    sched = ember.profiler.schedule(wait=0, warmup=0, active=steps, repeat=1)
    with ember.profiler.profile(schedule=sched) as prof:
        for _ in range(steps):
            model(x).sum().backward()
            prof.step()
    prof.export_chrome_trace(os.path.join(folder, "rank-0.pt.trace.json.gz"))


def test_ember_traces_round_trip_through_trace_diff(tmp_path):
    w = ember.randn(4, 4, requires_grad=True)
    _profile_into(str(tmp_path / "c"), lambda x: x @ w, ember.randn(3, 4))
    _profile_into(str(tmp_path / "t"), lambda x: (x @ w).tanh(), ember.randn(3, 4))
    lt = LabeledTrace("c", str(tmp_path / "c"))
    assert lt.iterations() == [0, 1]
    df = TraceDiff.compare_traces(str(tmp_path / "c"), str(tmp_path / "t"), control_iteration=[0, 1],
                                  test_iteration=[0, 1])
    assert df.loc["aten::tanh", "Test_counts"] == 2 and df.loc["aten::tanh", "Control_counts"] == 0
    assert df.loc["TanhBackward0", "counts_change_categories"] == "+"
    assert df.loc["aten::matmul", "diff_counts"] == 0
    assert df.loc["ProfilerStep#1", "Control_counts"] == 1
    ops = TraceDiff.ops_diff(str(tmp_path / "c"), str(tmp_path / "t"))
    assert {"aten::tanh", "TanhBackward0"} <= set(ops["added"])  # (and the ops tanh's vjp runs)
    assert ops["deleted"] == [] and "aten::matmul" in ops["unchanged"]


def test_figures_write_html(tmp_path):
    pytest.importorskip("plotly")
    pd_df = pd.DataFrame({"A_counts": [1.0, 0.0], "A_total_duration": [5.0, 0.0],
                          "B_counts": [1.0, 2.0], "B_total_duration": [4.0, 7.0],
                          "diff_counts": [0.0, 2.0], "diff_duration": [-1.0, 7.0],
                          "counts_change_categories": ["=", "+"]}, index=["x", "y"])
    fig = TraceDiff.visualize_counts_diff(pd_df, show_image=False,
                                          export_image_path=str(tmp_path / "c.html"))
    assert [t.name for t in fig.data] == ["A", "B", "Difference"]
    assert list(fig.data[2].y) == [0.0, 2.0]
    assert (tmp_path / "c.html").stat().st_size > 0
    fig = TraceDiff.visualize_duration_diff(pd_df, show_image=False)
    assert list(fig.data[1].y) == [4.0, 7.0]
    with pytest.raises(ValueError, match="compare_traces"):
        TraceDiff.visualize_counts_diff(pd_df[["A_counts"]], show_image=False)


@needs_data
def test_command_line(tmp_path, capsys):
    html, csv = tmp_path / "r.html", tmp_path / "d.csv"
    rc = cli.main([str(BASE), str(TEST), "--control-iteration", "1010", "--test-iteration", "1010",
                   "--csv", str(csv), "--html", str(html)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "All2All_Pooled_Req" in out and "nccl:all_reduce" in out and "aten::empty" not in out
    back = pd.read_csv(csv, index_col=0)
    assert back.loc["CatBackward0", "diff_counts"] == 1
    assert html.stat().st_size > 0
    rc = cli.main([str(BASE), str(tmp_path / "missing")])
    assert rc == 1 and "missing" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main([str(BASE)])  # usage error
    assert e.value.code == 2


@needs_data
def test_python_dash_m(tmp_path):
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(ember.__file__).parents[1]))
    r = subprocess.run([sys.executable, "-m", "ember.trace_analysis", str(BASE), str(TEST),
                        "--control-iteration", "1010", "--test-iteration", "1010", "--top", "2"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "All2All_Pooled_Req" in r.stdout


def test_copy_folder_with_two_ranks(tmp_path):
    for r in (0, 1):
        t = json.loads(json.dumps(_GOOD))
        t["distributedInfo"]["rank"] = r
        t["traceEvents"][1]["dur"] = 2 + r
        _write(tmp_path / "m", f"rank{r}.json", json.dumps(t))
    lt = LabeledTrace("m", str(tmp_path / "m"))
    assert lt.ranks() == [0, 1]
    both = lt.extract_ops(rank=[0, 1])
    assert sorted(both["rank"].tolist()) == [0, 0, 1, 1]
    shutil.copy(tmp_path / "m" / "rank0.json", tmp_path / "m" / "again.json")
    with pytest.raises(TraceFormatError, match="both rank 0"):
        LabeledTrace("m", str(tmp_path / "m"))


# ------------------------------------------------------------------ issue 14: hostile traces
def _hostile(tmp_path, field, value, where="event"):
    t = json.loads(json.dumps(_GOOD))
    ev = t["traceEvents"][1]
    if where == "args":
        ev["args"] = {field: value}
    else:
        ev[field] = value
    return _write(tmp_path / field, "rank0.json", json.dumps(t))


@pytest.mark.parametrize("field, value, where, message", [
    ("name", ["a", "list"], "event", "'name' of type list"),
    ("name", 12, "event", "'name' of type int"),
    ("cat", {"an": "object"}, "event", "'cat' of type dict"),
    ("ts", 2 ** 70, "event", "'ts' = 1180591620717411303424, out of range"),
    ("dur", 2 ** 70, "event", "'dur' = 1180591620717411303424, out of range"),
    ("dur", "nan", "event", "'dur' = nan, out of range"),
    ("ts", [1], "event", "non-numeric 'ts'"),
    ("correlation", 2 ** 70, "args", "args.correlation = 1180591620717411303424"),
    ("stream", "seven", "args", "args.stream = 'seven'"),
    ("pid", {"x": 1}, "event", "'pid' = {'x': 1}"),
])
def test_hostile_event_fields_one_line_error(tmp_path, field, value, where, message, capsys):
    p = _hostile(tmp_path, field, value, where)
    with pytest.raises(TraceFormatError, match=rf"{p}: traceEvents\[1\]") as e:
        read_trace_file(str(p))
    assert message in str(e.value) and "\n" not in str(e.value)
    # the command: exit status 1 and one line naming the file and the event, no traceback
    folder = str(p.parent)
    assert cli.main([folder, folder]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(p) in err[0] and "traceEvents[1]" in err[0] and message in err[0]


def test_deeply_nested_json_one_line_error(tmp_path, capsys):
    deep = "[" * 100_000 + "]" * 100_000
    text = json.dumps(_GOOD)
    p = _write(tmp_path / "a", "rank0.json", text[:-2] + ", " + deep + "]}")
    with pytest.raises(TraceFormatError, match=rf"{p}.*traceEvents\[2\] is nested too deeply"):
        read_trace_file(str(p))
    p = _write(tmp_path / "b", "rank0.json", '{"meta": ' + deep + ', "traceEvents": []}')
    with pytest.raises(TraceFormatError, match=rf"{p}.*'meta' is nested too deeply"):
        read_trace_file(str(p))
    assert cli.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nested too deeply" in err[0]


def test_long_json_string_is_read_in_linear_time(tmp_path, monkeypatch):
    """A single huge string (a kernel name of megabytes) used to be re-decoded from its start after
    every chunk read: O(n**2 / chunk). Now the buffer doubles: the characters handed to the decoder
    stay within a constant times the file's length, for n and 4n alike."""
    from ember.trace_analysis import _reader
    monkeypatch.setattr(_reader._Stream, "CHUNK", 4096)   # small chunks: quadratic would be ~500x worse
    scanned = {}
    for n in (1 << 20, 1 << 22):
        t = json.loads(json.dumps(_GOOD))
        t["traceEvents"][1]["name"] = "k" * n
        p = _write(tmp_path / str(n), "rank0.json", json.dumps(t))
        td = read_trace_file(str(p))
        assert td.names[td.name[1]] == "k" * n and td.dur[1] == 2
        s = _reader._Stream(str(p))
        s.expect("{", "")
        while s.value("key") != "traceEvents":
            s.expect(":", "")
            s.value("v")
            s.expect(",", "")
        s.expect(":", "")
        s.expect("[", "")
        s.value("event 0")
        s.expect(",", "")
        s.value("event 1")
        s.expect("]", "")
        s.close()
        size = os.path.getsize(p)
        scanned[n] = s.scanned
        assert s.scanned < 6 * size, (n, s.scanned, size)
    assert scanned[1 << 22] < 5 * scanned[1 << 20]
