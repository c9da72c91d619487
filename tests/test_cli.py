"""The ember command: train (digits, MNIST from IDX files, resume, seeds, profile, channels_last),
bench and trace-diff dispatch, and one-line errors for bad input."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ember_cmd(*args, cwd=None, timeout=120):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "ember", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=env)


@pytest.fixture
def run(tmp_path, capsys):
    """ember.cli.main in this process: returns (exit status, stdout); BLAS threads restored after."""
    threads = ember.get_num_threads()

    def go(*args):
        code = cli.main(list(args))
        return code, capsys.readouterr().out

    yield go
    ember.set_num_threads(threads)


def params_of(path):
    return {k: v.numpy() for k, v in ember.load(path)["model"].items()}


def test_train_mlp_learns_and_saves(run, tmp_path):
    ck = str(tmp_path / "a.ckpt")
    code, out = run("train", "--model", "mlp", "--epochs", "6", "--checkpoint", ck, "--no-progress")
    assert code == 0
    acc = [float(a) for a in re.findall(r"test accuracy\s+([\d.]+)%", out)]
    assert len(acc) == 7 and acc[-1] >= 94.0, out          # 6 epochs + the final line
    assert "epoch   6/6" in out and os.path.exists(ck)
    assert f"ember.load({ck!r})" in out and f"ember train --resume {ck}" in out  # where it is, how to load it
    saved = ember.load(ck)
    assert saved["epoch"] == 6 and saved["config"]["model"] == "mlp"


def test_same_seed_same_run_and_resume_equals_uninterrupted(run, tmp_path):
    a, b, c = (str(tmp_path / f"{n}.ckpt") for n in "abc")
    common = ("train", "--model", "cnn", "--epochs", "2", "--limit", "192", "--no-progress", "--seed", "3")
    _, out_a = run(*common, "--checkpoint", a)
    _, out_b = run(*common, "--checkpoint", b)
    strip = lambda s: re.sub(r"\(\d+\.\d s\)|checkpoint \S+|  load it with: .*", "", s)  # noqa: E731
    assert strip(out_a) == strip(out_b)
    pa, pb = params_of(a), params_of(b)
    assert all(np.array_equal(pa[k], pb[k]) for k in pa)
    # interrupted after epoch 1, resumed: the same parameters as the uninterrupted run (dropout's RNG,
    # Adam's moments, the scheduler and the data order all come back)
    run(*common, "--checkpoint", c, "--stop-after", "1")
    assert ember.load(c)["epoch"] == 1
    code, out = run(*common, "--checkpoint", c, "--resume")
    assert code == 0 and "resumed from" in out and "epoch   2/2" in out and "epoch   1/2" not in out
    pc = params_of(c)
    assert all(np.array_equal(pa[k], pc[k]) for k in pa)
    # a different seed gives a different run
    run("train", "--model", "cnn", "--epochs", "1", "--limit", "64", "--no-progress", "--seed", "4",
        "--checkpoint", c)
    assert not np.array_equal(params_of(c)["fc2.weight"], pa["fc2.weight"])


def test_train_mnist_from_idx_files(run, tmp_path):
    from ember.datasets import write_idx
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 40), ("t10k", 20)):
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte", rng.integers(0, 10, n).astype(np.uint8))
    code, out = run("train", "--dataset", "mnist", "--data-dir", str(tmp_path), "--model", "mlp", "--epochs", "1",
                    "--checkpoint", str(tmp_path / "m.ckpt"), "--no-progress")
    assert code == 0 and "on mnist (40 train / 20 test)" in out


def test_train_profile_and_channels_last(run, tmp_path):
    prof = tmp_path / "prof"
    code, out = run("train", "--model", "cnn", "--channels-last", "--epochs", "1", "--limit", "64", "--no-progress",
                    "--profile", str(prof), "--checkpoint", str(tmp_path / "p.ckpt"))
    assert code == 0
    assert (prof / "trace.json").stat().st_size > 0
    assert "Self CPU" in out and "aten::conv2d" in out and "chrome trace" in out


def test_train_profile_then_trace_diff_end_to_end(run, tmp_path):
    """The README's two commands together: two `ember train --profile DIR` runs, each training step a
    ProfilerStep#N range as PyTorch's profiler.step() marks it, then `ember trace-diff DIR1 DIR2`."""
    pytest.importorskip("pandas")
    import json
    a, b = tmp_path / "prof_a", tmp_path / "prof_b"
    common = ("train", "--epochs", "1", "--limit", "96", "--batch-size", "32", "--no-progress")
    assert run(*common, "--profile", str(a), "--checkpoint", str(tmp_path / "a.ckpt"))[0] == 0
    assert run(*common, "--channels-last", "--profile", str(b),
               "--checkpoint", str(tmp_path / "b.ckpt"))[0] == 0
    events = json.loads((a / "trace.json").read_text())["traceEvents"]
    steps = [e for e in events if e.get("name", "").startswith("ProfilerStep#")]
    assert [e["name"] for e in steps] == ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]
    assert all(e["cat"] == "user_annotation" and e["ph"] == "X" for e in steps)
    # every op of a step lies inside its range; steps follow one another
    assert all(s1["ts"] + s1["dur"] <= s2["ts"] for s1, s2 in zip(steps, steps[1:]))
    code, out = run("trace-diff", str(a), str(b))
    assert code == 0, out
    assert "ops/kernels compared" in out
    code, out = run("trace-diff", str(a), str(b), "--control-iteration", "2", "--test-iteration", "2")
    assert code == 0
    from ember.trace_analysis import LabeledTrace, TraceDiff
    assert LabeledTrace("a", str(a)).iterations() == [0, 1, 2]
    df = TraceDiff.compare_traces(str(a), str(b))
    assert df.loc["ProfilerStep#0", "diff_counts"] == 0
    assert df.loc["aten::cross_entropy_loss", "Control_counts"] == 1  # one loss per step


def test_train_profile_traces_are_accepted_by_hta(run, tmp_path):
    """Holistic Trace Analysis (where installed) reads the traces and agrees with ember's diff."""
    pytest.importorskip("pandas")
    hta = pytest.importorskip("hta.trace_diff")
    a, b = tmp_path / "a", tmp_path / "b"
    for d, model in ((a, "cnn"), (b, "mlp")):
        assert run("train", "--model", model, "--epochs", "1", "--limit", "64", "--no-progress",
                   "--profile", str(d), "--checkpoint", str(tmp_path / f"{model}.ckpt"))[0] == 0
    theirs = hta.TraceDiff.compare_traces(hta.LabeledTrace(label="Control", trace_dir=str(a)),
                                          hta.LabeledTrace(label="Test", trace_dir=str(b)))
    from ember.trace_analysis import TraceDiff
    ours = TraceDiff.compare_traces(str(a), str(b))
    assert sorted(theirs.index) == sorted(ours.index)
    theirs, ours = theirs.loc[sorted(theirs.index)], ours.loc[sorted(ours.index)]
    assert (theirs.drop(columns="counts_change_categories").to_numpy(float) ==
            ours.drop(columns="counts_change_categories").to_numpy(float)).all()
    assert (theirs["counts_change_categories"] == ours["counts_change_categories"]).all()


def test_progress_bar_optional(run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)           # tqdm not installed: plain output
    code, out = run("train", "--model", "mlp", "--epochs", "1", "--limit", "64",
                    "--checkpoint", str(tmp_path / "q.ckpt"))
    assert code == 0 and "epoch   1/1" in out


@pytest.mark.parametrize("args, code, message", [
    (["train", "--model", "vgg"], 2, "invalid choice: 'vgg'"),
    (["train", "--dataset", "mnist"], 2, "needs --data-dir"),
    (["train", "--dataset", "mnist", "--data-dir", "/no/such/folder"], 1, "no such folder"),
    (["train", "--epochs", "0"], 2, "must be positive"),
    (["train", "--resume", "/no/such.ckpt"], 1, "does not exist"),
    (["bench", "--bench-dir", "/no/such/dir"], 1, "no run.py there"),
    # issue 14: numbers that would train to NaN or make no sense
    (["train", "--lr", "inf"], 2, "--lr must be a positive finite number"),
    (["train", "--lr", "nan"], 2, "--lr must be a positive finite number"),
    (["train", "--lr", "-1"], 2, "--lr must be a positive finite number"),
    (["train", "--batch-size", "-3"], 2, "--batch-size must be positive"),
    (["train", "--threads", "0"], 2, "--threads must be positive"),
    (["train", "--limit", "0"], 2, "--limit must be positive"),
    (["train", "--seed", "-1"], 2, "--seed must be in"),
    (["train", "--seed", str(2 ** 70)], 2, "--seed must be in"),
    (["train", "--epochs", "99999999999"], 2, "out of range"),
    (["train", "--lr", "abc"], 2, "invalid float value"),
    (["bench", "--threads", "0", "conv"], 2, "--threads must be positive"),
])
def test_bad_input_one_line_error(args, code, message):
    proc = ember_cmd(*args)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("ember"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_corrupt_checkpoint_one_line_error(tmp_path):
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"PK\x03\x04 this is not a checkpoint")
    proc = ember_cmd("train", "--resume", str(bad), "--model", "mlp")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "cannot read checkpoint" in proc.stderr
    other = tmp_path / "other.ckpt"
    ember.save({"weights": ember.zeros(2)}, str(other))
    proc = ember_cmd("train", "--resume", str(other), "--model", "mlp")
    assert proc.returncode == 1 and "not an `ember train` checkpoint" in proc.stderr


def test_mismatched_checkpoint_one_line_error(run, tmp_path, capsys):
    ck = str(tmp_path / "mlp.ckpt")
    run("train", "--model", "mlp", "--epochs", "1", "--limit", "32", "--no-progress", "--checkpoint", ck)
    code = cli.main(["train", "--model", "cnn", "--resume", ck])
    assert code == 2 and "trained with --model mlp" in capsys.readouterr().err


def test_bench_dispatch(tmp_path):
    (tmp_path / "run.py").write_text("def main(argv):\n    print('RUN', argv)\n")
    proc = ember_cmd("bench", "conv", "--json", "out.json", "--quick", "--bench-dir", str(tmp_path))
    assert proc.returncode == 0 and "RUN ['conv', '--json', 'out.json', '--quick']" in proc.stdout
    # issue 21: --threads N before the patterns is --threads' value, not a pattern
    proc = ember_cmd("bench", "--threads", "1", "conv", "mlp", "--bench-dir", str(tmp_path))
    assert proc.returncode == 0 and "RUN ['conv', 'mlp', '--threads', '1']" in proc.stdout, proc.stdout


def test_bench_never_runs_a_planted_run_py(tmp_path, monkeypatch):
    """Issue 14: a benchmarks/run.py in the current folder or any ancestor is never executed; the
    benchmarks come from the path of the ember package itself."""
    sub = tmp_path / "project" / "deep"
    sub.mkdir(parents=True)
    for d in (tmp_path / "project", sub):
        (d / "benchmarks").mkdir()
        (d / "benchmarks" / "run.py").write_text("raise SystemExit('PLANTED CODE RAN')\n")
    monkeypatch.chdir(sub)
    found = cli._find_bench_dir(None)
    assert found == os.path.join(ROOT, "benchmarks") and "PLANTED" not in open(os.path.join(found, "run.py")).read()
    # an installed wheel (site-packages/ember): no benchmarks, a one-line error naming the way out
    wheel = tmp_path / "site-packages" / "ember"
    wheel.mkdir(parents=True)
    (tmp_path / "site-packages" / "benchmarks").mkdir()
    (tmp_path / "site-packages" / "benchmarks" / "run.py").write_text("raise SystemExit('PLANTED')\n")
    assert cli._package_bench_dir(str(wheel / "cli.py")) is None
    monkeypatch.setattr(cli, "_package_bench_dir", lambda package_file=None: None)
    with pytest.raises(cli.CLIError, match="benchmarks are not installed.*--bench-dir"):
        cli._find_bench_dir(None)


def test_trace_diff_dispatch():
    pytest.importorskip("pandas")
    proc = ember_cmd("trace-diff", "--help")
    assert proc.returncode == 0 and "control" in proc.stdout
    proc = ember_cmd("trace-diff", "/no/such/a", "/no/such/b")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr


def test_python_dash_m_and_help():
    proc = ember_cmd("--help")
    assert proc.returncode == 0 and "train" in proc.stdout and "trace-diff" in proc.stdout


def test_set_num_threads():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
    finally:
        ember.set_num_threads(before)
    with pytest.raises(RuntimeError, match="positive integer"):  # (PyTorch's exception type)
        ember.set_num_threads(0)


# ------------------------------------------------------------------ issue 14: checkpoints, one-line errors
def _one_line(proc, code, message):
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("ember"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_checkpoint_path_checked_before_training(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    proc = ember_cmd("train", "--model", "mlp", "--checkpoint", str(afile / "sub" / "c.ckpt"))
    _one_line(proc, 1, "is a file, not a folder")
    assert "epoch" not in proc.stdout                       # refused before any training
    proc = ember_cmd("train", "--model", "mlp", "--checkpoint", str(tmp_path))
    _one_line(proc, 2, "is a folder, expected a file path")


def test_checkpoint_on_unwritable_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        probe_ok = True
        try:
            (ro / "probe").write_text("x")                    # root writes anyway: use a read-only mount
        except OSError:
            probe_ok = False
        target = "/proc/ember.ckpt" if probe_ok else str(ro / "c.ckpt")
        proc = ember_cmd("train", "--model", "mlp", "--checkpoint", target)
        _one_line(proc, 1, "cannot write in")
        assert "epoch" not in proc.stdout
    finally:
        ro.chmod(0o755)


def test_full_disk_at_save_is_one_line(run, tmp_path, monkeypatch, capsys):
    import errno
    ck = tmp_path / "c.ckpt"

    def full(obj, f, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(f))

    monkeypatch.setattr(ember, "save", full)
    code = cli.main(["train", "--model", "mlp", "--epochs", "1", "--limit", "32", "--no-progress",
                     "--checkpoint", str(ck)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "cannot save checkpoint" in err[0] and "No space left" in err[0]
    assert not ck.exists()


@pytest.mark.parametrize("field, value, message", [
    ("epoch", "abc", "field 'epoch' is 'abc', expected a non-negative integer"),
    ("epoch", -2, "field 'epoch' is -2"),
    ("config", [1, 2], "field 'config' is list, expected a dict"),
    ("model", None, "field 'model' is NoneType"),
    ("rng_state", "xyz", "field 'rng_state' is str, expected a 1-D uint8 tensor"),
    ("rng_state", ember.zeros(3), "field 'rng_state' is a ember.float32 tensor"),
    ("rng_state", ember.zeros(5, dtype=ember.uint8), "rng_state is malformed"),
    ("optimizer", {"state": 3, "param_groups": "x"}, "does not fit the model"),
    (None, None, "missing epoch, config"),
])
def test_resume_corrupt_fields_one_line(run, tmp_path, field, value, message, capsys):
    ck = str(tmp_path / "c.ckpt")
    run("train", "--model", "mlp", "--epochs", "1", "--limit", "32", "--no-progress", "--checkpoint", ck)
    obj = ember.load(ck)
    if field is None:
        del obj["epoch"], obj["config"]
    else:
        obj[field] = value
    bad = str(tmp_path / "bad.ckpt")
    ember.save(obj, bad)
    proc = ember_cmd("train", "--model", "mlp", "--epochs", "2", "--limit", "32", "--no-progress",
                     "--checkpoint", str(tmp_path / "out.ckpt"), "--resume", bad)
    _one_line(proc, 1, message)


def test_version(tmp_path):
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "ember", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"ember {ember.__version__}"


def test_help_texts_have_no_rest_markup():
    import subprocess
    import sys
    for args in ([], ["train"], ["bench"], ["trace-diff"]):
        out = subprocess.run([sys.executable, "-m", "ember", *args, "--help"], capture_output=True, text=True).stdout
        assert out and "``" not in out and ":func:" not in out and ":class:" not in out, args
