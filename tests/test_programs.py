"""The PyTorch-style program corpus (issue 20): each script runs unchanged with `import torch`
resolving to ember, and prints the same numbers as on PyTorch (where torch is installed)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "programs"))
import corpus  # noqa: E402


# programs waiting for a fix outside this corpus (strict: a fix makes the test fail until the mark goes)
_PENDING = {
}


@pytest.mark.parametrize("script,args,rtol", [
    pytest.param(s, a, r, marks=pytest.mark.xfail(reason=_PENDING[s], strict=True)) if s in _PENDING else (s, a, r)
    for s, a, r in corpus.PROGRAMS], ids=[" ".join([s] + a) for s, a, _ in corpus.PROGRAMS])
def test_program(tmp_path, script, args, rtol):
    rc, out, _ = corpus.run(script, args, "ember", str(tmp_path))
    assert rc == 0, out[-3000:]
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    tdir = tmp_path / "torch"
    tdir.mkdir()
    rct, outt, _ = corpus.run(script, args, "torch", str(tdir))
    assert rct == 0, outt[-3000:]
    assert corpus.agree(out, outt, rtol), f"ember:\n{out}\nPyTorch:\n{outt}"


def test_checkpoint_resume_continues_identically(tmp_path):
    full = corpus.run("checkpoint_resume.py", ["--epochs", "3", "--ckpt", "a.pt"], "ember", str(tmp_path))
    assert full[0] == 0, full[1]
    part = corpus.run("checkpoint_resume.py", ["--epochs", "2", "--ckpt", "b.pt"], "ember", str(tmp_path))
    rest = corpus.run("checkpoint_resume.py", ["--epochs", "3", "--ckpt", "b.pt", "--resume"], "ember",
                      str(tmp_path))
    assert rest[0] == 0, rest[1]
    assert full[1].splitlines()[-1] == rest[1].splitlines()[-1]


def test_alias_resolves_submodules(tmp_path):
    code = ("import torch, torch.nn.functional as F, torch.utils.data, torch.backends.cudnn as cudnn;"
            "from torch.nn.modules.activation import MultiheadAttention;"
            "import functorch; print(torch.__name__, F.__name__, cudnn.__name__, functorch.__name__)")
    import subprocess
    script = tmp_path / "p.py"
    script.write_text(code)
    p = subprocess.run([sys.executable, os.path.join(corpus.HERE, "as_torch.py"), str(script)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["ember", "ember.nn.functional", "ember.backends.cudnn", "ember.functorch"]
