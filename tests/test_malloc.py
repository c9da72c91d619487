"""ember tunes glibc's malloc at import so that buffers freed and allocated again each step are
reused from the heap instead of coming back as fresh pages (ember/_malloc.py). Counted in page
faults, not timed."""
import os
import subprocess
import sys

import pytest

_PROBE = r"""
import resource, sys
import numpy as np
import ember  # noqa: F401
size, count = int(sys.argv[1]), int(sys.argv[2])
for _ in range(3):                      # warm up: the heap grows to hold the buffers once
    bufs = [np.ones(size) for _ in range(count)]
    del bufs
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):                     # a "step": the same sizes freed and allocated again
    bufs = [np.ones(size) for _ in range(count)]
    del bufs
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0, ember._malloc.TUNED)
"""


def _faults(tuning, size=131_072, count=30):
    env = dict(os.environ, EMBER_MALLOC_TUNING=tuning)
    out = subprocess.run([sys.executable, "-c", _PROBE, str(size), str(count)], env=env, capture_output=True,
                         text=True, check=True)
    faults, tuned = out.stdout.split()
    return int(faults), tuned == "True"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_step_buffers_are_reused_without_page_faults():
    faults, tuned = _faults("1")
    if not tuned:
        pytest.skip("the C library is not glibc: nothing is tuned")
    default, tuned_off = _faults("0")
    assert not tuned_off
    # 20 steps of 30 buffers of 1 MB freed together: glibc's defaults trim the heap's top each time
    # and the next step faults its pages in again (thousands of faults); tuned, ~none
    assert default > 1000 and faults < 100, (default, faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_a_151_mb_step_buffer_is_reused_without_page_faults():
    """The per-sample-gradients step's fc1 weight gradients (32x128x9216 float32, 151 MB) come from
    the heap and are reused: mapped afresh each step (glibc's defaults, or the 64 MiB threshold this
    had before) they fault at every step, 4 KiB or 2 MiB pages depending on the kernel."""
    faults, tuned = _faults("1", 32 * 128 * 9216 // 2, 1)
    if not tuned:
        pytest.skip("the C library is not glibc: nothing is tuned")
    default, _ = _faults("0", 32 * 128 * 9216 // 2, 1)
    assert default >= 20 and faults < 10, (default, faults)
