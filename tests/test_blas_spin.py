"""OpenBLAS's worker threads sleep soon after a multi-threaded call (ember/_blas.py: short_spin,
2^20 cycles): by default they busy-wait about 0.1 s for the next call, a core taken from ember's
own split kernels. Checked by the CPU time the process spends while it sleeps after a GEMM (CPU
time, not wall time), in a fresh process each."""
import os
import subprocess
import sys

import pytest

_PROBE = r"""
import sys, time
import numpy as np
import ember
from ember import _blas
ember.set_num_threads(2)
a = np.random.default_rng(0).standard_normal((1000, 1000)).astype(np.float32)
spin = []
for _ in range(5):
    a @ a                      # a multi-threaded GEMM (OpenBLAS's own two threads)
    t = time.process_time()
    time.sleep(0.05)           # nothing runs here but OpenBLAS's idle threads
    spin.append(time.process_time() - t)
print(sorted(spin)[2], list(_blas.SPIN.values()))
"""


def _probe(env_timeout=None):
    env = dict(os.environ)
    env.pop("OPENBLAS_THREAD_TIMEOUT", None)
    if env_timeout is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = env_timeout
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    spin, given = out.stdout.split(" ", 1)
    return float(spin), given.strip()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS runs no worker thread")
def test_openblas_threads_sleep_after_a_call():
    from ember import _blas
    if _blas._openblas() is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS")
    spin, given = _probe()
    # spinning, OpenBLAS's idle thread would use most of the 50 ms on the second core
    assert spin < 0.015, spin
    assert set(eval(given)) == {_blas.THREAD_TIMEOUT}  # (NumPy's OpenBLAS, and SciPy's once loaded)


def test_a_thread_timeout_the_user_set_is_kept():
    from ember import _blas
    if _blas._openblas() is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS")
    _, given = _probe("12")
    assert set(eval(given)) == {None}
