"""ember tunes glibc's malloc at import so that buffers freed and allocated again each step are
reused from the heap instead of coming back as fresh pages (ember/_malloc.py). Counted in page
faults, not timed."""
import os
import subprocess
import sys

import pytest

_PROBE = r"""
import resource
import numpy as np
import ember  # noqa: F401
for _ in range(3):                      # warm up: the heap grows to hold the buffers once
    bufs = [np.ones(131_072) for _ in range(30)]
    del bufs
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):                     # a "step": the same sizes freed and allocated again
    bufs = [np.ones(131_072) for _ in range(30)]
    del bufs
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0, ember._malloc.TUNED)
"""


def _faults(tuning):
    env = dict(os.environ, EMBER_MALLOC_TUNING=tuning)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
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
