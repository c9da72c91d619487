"""ember.save never destroys the previous file (issue 14): a failed, interrupted or concurrent save
leaves a loadable checkpoint behind and no temporary file (except after kill -9, which no process
can clean up after)."""
import errno
import os
import signal
import subprocess
import sys
import time

import pytest

import ember
from ember import _serialization as S

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _files(folder):
    return sorted(os.listdir(folder))


def test_failing_save_on_an_unsupported_object_keeps_the_old_file(tmp_path):
    p = tmp_path / "ck.pt"
    ember.save({"w": ember.arange(3.0)}, p)
    before = p.read_bytes()
    with pytest.raises(TypeError, match="cannot save an object of type"):
        ember.save({"w": ember.ones(2), "m": ember.nn.Linear(2, 2)}, p)
    assert p.read_bytes() == before and _files(tmp_path) == ["ck.pt"]
    assert ember.load(p)["w"].tolist() == [0.0, 1.0, 2.0]


def test_full_disk_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    p = tmp_path / "ck.pt"
    ember.save({"w": ember.arange(3.0)}, p)
    before = p.read_bytes()
    real = S._write_archive

    def write_then_fail(fh, *args):
        real(fh, *args)          # half the work is on the disk when the disk fills up
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(S, "_write_archive", write_then_fail)
    with pytest.raises(OSError, match=r"ember.save: writing .*ck.pt.* failed \(No space left on device\); the "
                                      "previous file, if any, is unchanged") as e:
        ember.save({"w": ember.randn(1000)}, p)
    assert e.value.errno == errno.ENOSPC and "\n" not in str(e.value)
    assert p.read_bytes() == before and _files(tmp_path) == ["ck.pt"]


def test_failing_fsync_leaves_no_temporary(tmp_path, monkeypatch):
    p = tmp_path / "new.pt"

    def fail(fd):
        raise OSError(errno.EIO, "Input/output error")
    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="Input/output error"):
        ember.save(ember.ones(2), p)
    assert _files(tmp_path) == []


def test_saving_keeps_permissions_and_writes_through_symlinks(tmp_path):
    p = tmp_path / "ck.pt"
    ember.save(ember.ones(2), p)
    os.chmod(p, 0o640)
    ember.save(ember.zeros(2), p)
    assert os.stat(p).st_mode & 0o777 == 0o640
    link = tmp_path / "link.pt"
    os.symlink(p, link)
    ember.save(ember.full((2,), 7.0), link)
    assert os.path.islink(link) and ember.load(p).tolist() == [7.0, 7.0]


_CHILD = r"""
import sys, ember
sys.stdout.write("go\n"); sys.stdout.flush()
big = ember.zeros(64 * 1024 * 1024 // 4)
while True:
    ember.save({"big": big, "tag": "new"}, sys.argv[1])
"""


def test_kill_9_mid_save_leaves_the_previous_file_loadable(tmp_path):
    p = tmp_path / "ck.pt"
    ember.save({"tag": "old", "w": ember.arange(4.0)}, p)
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    kills = 0
    for delay in (0.0, 0.05, 0.2):
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(p)], stdout=subprocess.PIPE, env=env)
        try:
            assert child.stdout.readline() == b"go\n"
            deadline = time.time() + 30
            while not any(n.endswith(".tmp") for n in _files(tmp_path)) and time.time() < deadline:
                time.sleep(0.001)       # wait until a save is under way
            time.sleep(delay)
            child.send_signal(signal.SIGKILL)
            kills += 1
        finally:
            child.kill()
            child.wait()
        out = ember.load(p)         # the old file, or a complete new one: never a broken one
        assert out["tag"] in ("old", "new")
        if out["tag"] == "old":
            assert out["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
        else:
            assert out["big"].shape == (16 * 1024 * 1024,)
        for n in _files(tmp_path):  # kill -9 leaves the killed writer's temporary; nothing else
            if n != "ck.pt":
                assert n.startswith(".ck.pt.") and n.endswith(".tmp")
                os.unlink(tmp_path / n)
    assert kills == 3


_WRITER = r"""
import sys, ember
for i in range(15):
    ember.save({"writer": int(sys.argv[2]), "i": i, "w": ember.full((50000,), float(i))}, sys.argv[1])
"""


def test_concurrent_writers_never_collide_and_readers_see_whole_files(tmp_path):
    p = tmp_path / "c.ckpt"
    ember.save({"writer": -1, "i": -1, "w": ember.zeros(50000)}, p)
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(p), str(k)], env=env, stderr=subprocess.PIPE)
             for k in range(2)]
    reads = 0
    while any(q.poll() is None for q in procs):
        out = ember.load(p)
        assert out["w"].tolist()[:1] == [float(out["i"])] or out["i"] == -1
        reads += 1
    for q in procs:
        assert q.wait() == 0, q.stderr.read().decode()
    assert ember.load(p)["i"] == 14 and _files(tmp_path) == ["c.ckpt"] and reads > 0


def test_cli_checkpoint_uses_the_atomic_save(tmp_path):
    import argparse
    from ember import cli, nn
    model = nn.Linear(2, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, 1)
    args = argparse.Namespace(model="mlp", dataset="digits", seed=0, epochs=1, batch_size=4, lr=0.1,
                              channels_last=False)
    path = str(tmp_path / "run" / "c.ckpt")
    cli.save_checkpoint(path, model, opt, sched, 1, args)
    cli.save_checkpoint(path, model, opt, sched, 2, args)
    assert ember.load(path)["epoch"] == 2 and _files(tmp_path / "run") == ["c.ckpt"]
