"""The program corpus: PyTorch-style scripts run unchanged on ember (``import torch`` resolved to
ember by as_torch.py) and on PyTorch, their printed numbers compared.

``python tests/programs/corpus.py`` prints a table: status, ember's and PyTorch's wall time, and
whether the numbers agree. tests/test_programs.py runs the same list under pytest."""
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (script, arguments for a short run, relative tolerance on the printed numbers)
PROGRAMS = [
    ("mnist_cnn.py", ["--epochs", "1"], 1e-3),
    ("word_lm_lstm.py", ["--epochs", "1"], 1e-3),
    ("gpt_char.py", ["--max-iters", "8"], 1e-3),
    ("gpt_char.py", ["--max-iters", "8", "--flash", "0"], 1e-3),
    ("vae.py", ["--epochs", "2"], 1e-3),
    ("dcgan.py", ["--iters", "4"], 1e-3),
    ("reinforce.py", ["--episodes", "5"], 1e-3),
    ("fx_rewrite.py", [], 1e-5),
    ("neural_ode.py", ["--niters", "10"], 1e-3),
    ("time_series_lstm.py", ["--steps", "2"], 1e-6),
    ("checkpoint_resume.py", ["--epochs", "2"], 1e-4),
]

_NUM = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+")


def run(script, args, lib, cwd):
    """(returncode, stdout+stderr, seconds) of one run, with ``lib`` 'ember' or 'torch'."""
    path = os.path.join(HERE, script)
    cmd = [sys.executable, os.path.join(HERE, "as_torch.py"), path] if lib == "ember" else [sys.executable, path]
    t0 = time.perf_counter()
    p = subprocess.run(cmd + list(args), capture_output=True, text=True, cwd=cwd, timeout=600)
    return p.returncode, p.stdout + p.stderr, time.perf_counter() - t0


def numbers(text):
    return [float(x) for x in _NUM.findall(text)]


def agree(a, b, rtol):
    """Same printed lines, numbers equal to ``rtol`` (absolute 1e-6 for values near zero)."""
    la = [ln for ln in a.splitlines() if ln.strip()]
    lb = [ln for ln in b.splitlines() if ln.strip()]
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if _NUM.sub("#", x) != _NUM.sub("#", y):
            return False
        for u, v in zip(numbers(x), numbers(y)):
            if abs(u - v) > 1e-6 + rtol * abs(v):
                return False
    return True


def main():
    have_torch = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0
    rows = []
    with tempfile.TemporaryDirectory() as cwd:
        for script, args, rtol in PROGRAMS:
            rc, out, te = run(script, args, "ember", cwd)
            status = "ran" if rc == 0 else "FAILED: " + (out.strip().splitlines() or ["?"])[-1][:80]
            tt, same = None, None
            if have_torch:
                rct, outt, tt = run(script, args, "torch", cwd)
                same = rc == 0 and rct == 0 and agree(out, outt, rtol)
            rows.append((" ".join([script] + args), status, te, tt, same))
    print(f"{'program':48} {'ember':>8} {'PyTorch':>8} {'ratio':>6}  same numbers  status")
    for name, status, te, tt, same in rows:
        ratio = f"{te / tt:6.2f}" if tt else "     -"
        print(f"{name:48} {te:7.2f}s {tt or 0:7.2f}s {ratio}  {str(same):12}  {status}")


if __name__ == "__main__":
    main()
