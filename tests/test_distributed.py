"""ember.distributed, DistributedDataParallel and DistributedSampler.

The collectives and DDP run in real MPI jobs: each test launches ``mpirun -n 2 python
tests/mpi/<script>.py`` with a time limit and checks what the ranks report. They skip when mpirun or
mpi4py is missing (apt-get install openmpi-bin libopenmpi-dev; pip install mpi4py).
"""
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.utils.data.distributed import DistributedSampler

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN = shutil.which("mpirun")


def _have_mpi4py():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


needs_mpi = pytest.mark.skipif(MPIRUN is None or not _have_mpi4py(),
                               reason="needs mpirun and mpi4py (apt-get install openmpi-bin libopenmpi-dev; "
                                      "pip install mpi4py)")


def mpi_env():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1",
               PYTHONPATH=os.path.join(HERE, "..", "src") + os.pathsep + env.get("PYTHONPATH", ""))
    return env


def run_mpi(script, n=2, timeout=120, args=()):
    cmd = [MPIRUN, "-n", str(n), "--oversubscribe", sys.executable, os.path.join(HERE, "mpi", script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=mpi_env())


def ok_ranks(proc, n):
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    # mpirun forwards each rank's output as it comes: two ranks' lines may run together
    got = sorted(int(r) for r in re.findall(r"OK (\d+)", proc.stdout))
    assert got == list(range(n)), proc.stdout + proc.stderr


# ------------------------------------------------------------------------------------ in-process
def test_errors_before_init():
    assert not dist.is_initialized()
    for call in (dist.get_rank, dist.get_world_size, dist.barrier,
                 lambda: dist.all_reduce(ember.zeros(2)), lambda: dist.broadcast(ember.zeros(2), 0)):
        with pytest.raises(RuntimeError, match="has not been initialized.*init_process_group"):
            call()
    with pytest.raises(ValueError, match="'mpi' backend only"):
        dist.init_process_group("nccl")
    assert dist.ReduceOp.SUM is not dist.ReduceOp.AVG and "MAX" in repr(dist.ReduceOp.MAX)


def test_ddp_needs_process_group():
    nn = pytest.importorskip("ember.nn")
    if not hasattr(nn, "Linear"):
        pytest.skip("ember.nn has not landed")
    from ember.nn.parallel import DistributedDataParallel
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedDataParallel(nn.Linear(2, 2))


def test_sampler_partitions_and_pads():
    n, world = 10, 3
    parts = [list(DistributedSampler(range(n), world, r, shuffle=False)) for r in range(world)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]          # padded with the start
    assert all(len(DistributedSampler(range(n), world, r)) == 4 for r in range(world))
    dropped = [list(DistributedSampler(range(n), world, r, shuffle=False, drop_last=True)) for r in range(world)]
    assert dropped == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    # tiny dataset: padding repeats it as often as needed
    assert [list(DistributedSampler(range(2), 5, r, shuffle=False)) for r in range(5)] == [[0], [1], [0], [1], [0]]


def test_sampler_shuffle_by_epoch():
    n, world = 23, 2
    s = [DistributedSampler(range(n), world, r, shuffle=True, seed=7) for r in range(world)]
    e0 = [list(x) for x in s]
    assert set(e0[0]) | set(e0[1]) == set(range(n)) and len(e0[0]) == len(e0[1]) == 12
    assert e0 == [list(x) for x in s]                                      # same epoch, same order
    for x in s:
        x.set_epoch(1)
    e1 = [list(x) for x in s]
    assert e1 != e0 and set(e1[0]) | set(e1[1]) == set(range(n))
    other_seed = DistributedSampler(range(n), world, 0, seed=8)
    assert list(other_seed) != e0[0]


def test_sampler_errors():
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(range(4))


# ---------------------------------------------------------------------------------- under mpirun
@needs_mpi
def test_collectives_match_numpy_two_ranks():
    ok_ranks(run_mpi("collectives.py", 2), 2)


@needs_mpi
def test_collectives_single_process_world():
    proc = subprocess.run([sys.executable, os.path.join(HERE, "mpi", "collectives.py")], capture_output=True,
                          text=True, timeout=120, env=mpi_env())
    ok_ranks(proc, 1)


@needs_mpi
def test_a_failing_rank_aborts_the_job():
    t0 = time.perf_counter()
    proc = run_mpi("rank_raises.py", 2, timeout=60)
    elapsed = time.perf_counter() - t0
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "rank 1 fails on purpose" in proc.stderr
    assert "passed the barrier" not in proc.stdout
    assert elapsed < 30, f"the job took {elapsed:.1f} s to end"


@needs_mpi
@pytest.mark.parametrize("progress_thread", ["1", "0"])
def test_ddp_matches_single_process_training(progress_thread, monkeypatch):
    if not hasattr(pytest.importorskip("ember.nn"), "Linear"):
        pytest.skip("ember.nn has not landed")
    monkeypatch.setenv("EMBER_DDP_PROGRESS_THREAD", progress_thread)
    ok_ranks(run_mpi("ddp.py", 2), 2)


@needs_mpi
def test_ember_train_distributed_equals_one_process(tmp_path):
    """`mpirun -n 2 ember train --distributed --batch-size 16` sees, step by step, the same global
    batches as one process with --batch-size 32 (the sampler deals the epoch's permutation out
    round-robin), so the trained parameters agree."""
    if not hasattr(pytest.importorskip("ember.nn"), "Linear"):
        pytest.skip("ember.nn has not landed")
    common = ["train", "--model", "mlp", "--epochs", "2", "--limit", "192", "--no-progress", "--seed", "5"]
    cmd = [MPIRUN, "-n", "2", "--oversubscribe", sys.executable, "-m", "ember", *common, "--distributed",
           "--batch-size", "16", "--checkpoint", str(tmp_path / "ddp.ckpt")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=mpi_env(), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 processes" in proc.stdout and proc.stdout.count("epoch   2/2") == 1   # rank 0 reports
    proc = subprocess.run([sys.executable, "-m", "ember", *common, "--batch-size", "32", "--checkpoint",
                           str(tmp_path / "one.ckpt")], capture_output=True, text=True, timeout=120,
                          env=mpi_env(), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    a, b = ember.load(str(tmp_path / "ddp.ckpt"))["model"], ember.load(str(tmp_path / "one.ckpt"))["model"]
    for k in a:
        np.testing.assert_allclose(a[k].numpy(), b[k].numpy(), atol=1e-5, rtol=1e-5, err_msg=k)


def test_missing_mpi4py_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(dist, "_MPI", None)
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)
    assert not dist.is_mpi_available()
    with pytest.raises(RuntimeError, match="apt-get install -y openmpi-bin libopenmpi-dev.*ember\\[mpi\\]"):
        dist.init_process_group("mpi")
    assert not dist.is_initialized()


# ------------------------------------------------------------------ issue 14: no hangs
def _ends_with(case, message, limit=30, args=()):
    t0 = time.perf_counter()
    proc = run_mpi("hang_cases.py", 2, timeout=120, args=(case, *args))
    elapsed = time.perf_counter() - t0
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert re.search(message, out), out
    assert elapsed < limit, f"the job took {elapsed:.1f} s to end"
    return out


@needs_mpi
def test_collective_timeout_names_the_collective_and_missing_ranks():
    """timeout= of init_process_group (3 s): rank 0 waits in all_reduce while rank 1 is busy."""
    out = _ends_with("timeout", r"DistBackendError: all_reduce: timed out after 3 s .* on rank 0 .*"
                                r"rank\(s\) 1 did not arrive \(rank 1 did not answer")
    assert "FINISHED" not in out


@needs_mpi
def test_rank_calling_sys_exit_mid_training_ends_the_job():
    out = _ends_with("exit", r"DistributedDataParallel gradient all_reduce: rank\(s\) 1 exited .* while rank 0 "
                             r"waited", limit=20)
    assert "FINISHED 0" not in out


@needs_mpi
def test_uneven_data_without_join_ends_with_an_error():
    """Rank 1 stops after 10 steps and waits in a barrier; rank 0 goes on: both time out, each naming
    where the other is."""
    out = _ends_with("uneven", r"timed out after 3 s .* rank\(s\) [01] did not arrive \(rank [01] waits in "
                               r"(barrier|DistributedDataParallel gradient all_reduce)")
    assert "FINISHED" not in out


@needs_mpi
def test_rank_that_finished_early_is_noticed():
    _ends_with("exitlate", r"barrier: rank\(s\) 1 exited", limit=20, args=("600",))


@needs_mpi
def test_ddp_join_uneven_inputs():
    if not hasattr(pytest.importorskip("ember.nn"), "Linear"):
        pytest.skip("ember.nn has not landed")
    ok_ranks(run_mpi("join.py", 2), 2)


@needs_mpi
def test_ember_train_distributed_ranks_disagreeing_on_batch_size(tmp_path):
    common = [sys.executable, "-m", "ember", "train", "--distributed", "--model", "mlp", "--epochs", "1",
              "--limit", "64", "--no-progress", "--checkpoint", str(tmp_path / "c.ckpt")]
    cmd = [MPIRUN, "--oversubscribe", "-n", "1", *common, "--batch-size", "16", ":", "-n", "1", *common,
           "--batch-size", "32"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=mpi_env(), cwd=str(tmp_path))
    assert proc.returncode != 0 and time.perf_counter() - t0 < 60
    assert "different options: --batch-size 16 on rank 0, 32 on rank 1" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "epoch" not in proc.stdout


def test_init_process_group_timeout_validated():
    import datetime
    for bad in (datetime.timedelta(seconds=-1), 0, "soon"):
        with pytest.raises(ValueError, match="timeout must be a positive datetime.timedelta"):
            dist.init_process_group("mpi", timeout=bad)
    assert not dist.is_initialized()
    assert issubclass(dist.DistBackendError, RuntimeError)


@needs_mpi
def test_ember_train_distributed_ranks_reading_different_data(tmp_path):
    """MNIST folders of different sizes on the two ranks: refused at the start, not a hang later."""
    if not hasattr(pytest.importorskip("ember.nn"), "Linear"):
        pytest.skip("ember.nn has not landed")
    from ember.datasets import write_idx
    rng = np.random.default_rng(0)
    for d, n in (("a", 40), ("b", 48)):
        (tmp_path / d).mkdir()
        for prefix, m in (("train", n), ("t10k", 20)):
            write_idx(tmp_path / d / f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, (m, 28, 28), dtype=np.uint8))
            write_idx(tmp_path / d / f"{prefix}-labels-idx1-ubyte", rng.integers(0, 10, m).astype(np.uint8))
    common = [sys.executable, "-m", "ember", "train", "--distributed", "--model", "mlp", "--epochs", "1",
              "--dataset", "mnist", "--no-progress", "--checkpoint", str(tmp_path / "c.ckpt"), "--data-dir"]
    cmd = [MPIRUN, "--oversubscribe", "-n", "1", *common, str(tmp_path / "a"), ":", "-n", "1", *common,
           str(tmp_path / "b")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=mpi_env(), cwd=str(tmp_path))
    assert proc.returncode != 0
    assert "different data: training images (40, 1, 28, 28) on rank 0, (48, 1, 28, 28) on rank 1" in proc.stderr, \
        proc.stderr
    assert "Traceback" not in proc.stderr
