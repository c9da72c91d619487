"""The C allocator, tuned once at import for tensor workloads (glibc only).

Every NumPy array's data comes from malloc. glibc serves requests above its mmap threshold (128 KiB
to start, raised on the fly up to 32 MiB) with fresh mmap'd pages and gives them back to the system
when freed, and trims the top of its heap when more than twice that is free there. A training step
allocates and frees the same few hundred activation and gradient buffers every time, so with the
defaults many of them come back as fresh pages, and each page's first touch is a page fault (a
few microseconds on a VM): 1,500-4,500 of them per step of a small GPT or word-level LSTM model,
about a tenth of the step (PyTorch's own CPU runs of the same programs fault under 100 times a step).
Raising both thresholds keeps those buffers in the heap, reused from step to step.

The mmap threshold is set above the biggest buffers such steps make: the per-sample-gradients
tutorial's fc1 weight gradients are one 151 MB array a step, whose fresh (huge) pages the kernel
zeroes on first touch, a second pass over 151 MB that does not split over threads. With a 64 MiB
threshold that step faulted 60-75 times and took 85.6 ms (median of 24, two threads; 77.3 on one);
from the heap, no faults and 78.6 ms (73.0). Buffers of ``MMAP_THRESHOLD`` and more are still mapped
and unmapped per allocation (their memory goes back to the system when freed); up to
``TRIM_THRESHOLD`` of free memory stays at the top of the heap. ``EMBER_MALLOC_TUNING=0`` in the
environment keeps the allocator's defaults. The settings are process-wide, as an allocator's are."""
import ctypes
import os

MMAP_THRESHOLD = 256 << 20
TRIM_THRESHOLD = 512 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers (malloc.h)


def tune():
    """Set glibc's mmap and trim thresholds; True when the allocator took them."""
    if os.environ.get("EMBER_MALLOC_TUNING", "1").strip() == "0":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows): nothing to tune
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


TUNED = tune()
