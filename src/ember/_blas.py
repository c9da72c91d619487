"""NumPy's BLAS as ember sees it: OpenBLAS (as NumPy's wheels ship it) reached through ctypes for its
thread count (``ember.set_num_threads`` / ``get_num_threads``, and the convolution kernels, which
block their GEMMs only on one thread) and for the kernel set it runs (``ember.__config__.show()``).

OpenBLAS picks its kernels for the CPU when NumPy loads it, unless ``OPENBLAS_CORETYPE`` names a
core: a machine that pins an AVX2 core (Haswell, Zen) on an AVX-512 CPU runs float32 GEMMs at about
half the speed OpenBLAS's own choice (SkylakeX) reaches, and every convolution with them.
``pinned_below_cpu()`` tells when that is the case; ember reports it, never overrides it: the
variable is read once, before any ember code runs, and it is the user's to set.
Where no OpenBLAS can be found, the thread calls do nothing and report the CPU count."""
import ctypes
import glob
import os

_lib = None
_AVX2_CORES = {"Haswell", "Zen", "SandyBridge", "Nehalem", "Prescott", "Core2", "Penryn", "Dunnington",
               "Atom", "Excavator", "Steamroller", "Piledriver", "Bulldozer", "Barcelona", "Opteron"}


def _openblas():
    """(dll, symbol prefix, symbol suffix) of the OpenBLAS NumPy loaded, or None."""
    global _lib
    if _lib is None:
        _lib = False
        import numpy as np
        here = os.path.dirname(np.__file__)
        for path in sorted(glob.glob(os.path.join(here, "..", "numpy.libs", "*openblas*")) +
                           glob.glob(os.path.join(here, ".dylibs", "*openblas*"))):
            try:
                dll = ctypes.CDLL(path)
            except OSError:
                continue
            for prefix in ("scipy_openblas", "openblas"):
                for suffix in ("64_", ""):
                    if hasattr(dll, f"{prefix}_get_num_threads{suffix}"):
                        _lib = (dll, prefix, suffix)
                        short_spin(dll)
                        return _lib
    return _lib or None


# After each multi-threaded call, OpenBLAS's worker threads busy-wait for the next one for 2^28
# cycles (about 0.1 s) before they sleep: a core taken from whatever runs next, ember's own split
# kernels included. In the per-sample-gradients step (linear layers' GEMMs between convolutions
# split over the pool) the two threads' step took 84 ms with them spinning, 50 without. Sleeping
# at once (2^4 cycles, the least OpenBLAS takes) has its own cost on a VM: a sleeping thread's
# wake-up took 50-300 us here, so a GEMM of 512x128x128 after a 0.3 ms gap ran in 175 us on two
# threads against 138 us with a 2^20-cycle wait (188 us on one thread), and the LSTM time loops
# could not use the second core at all. 2^20 cycles is about 0.3 ms, about as long as OpenMP's
# default spin: the threads are there for the next GEMM of a step and asleep well before a pool
# kernel (2M elements and more) has run long. Whole steps at two threads, the two waits
# interleaved in one process: the word-level LSTM language model 85 -> 81 ms (with its time loop
# on OpenBLAS's threads), ResNet-18 192 -> 176 ms, the FX pipeline 121 -> 104 ms, the other seven
# within their noise. OpenBLAS reads the wait (OPENBLAS_THREAD_TIMEOUT, log2 of cycles) when it
# loads, before ember can set it, so ember sets it and has the library read its environment again
# and restart its threads. A wait the user chose is kept.
THREAD_TIMEOUT = 20  # log2 cycles
SPIN = {}  # dll path -> the timeout it was given (or None: left as it was)


def short_spin(dll):
    """Give an OpenBLAS (NumPy's or SciPy's) THREAD_TIMEOUT, once; SPIN records what it took."""
    if dll._name in SPIN:
        return
    SPIN[dll._name] = None
    read = getattr(dll, "openblas_read_env", None)
    stop = getattr(dll, "blas_thread_shutdown_", None)
    if read is None or stop is None or os.environ.get("OPENBLAS_THREAD_TIMEOUT", "").strip():
        return
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(THREAD_TIMEOUT)
    try:
        read()
        stop()  # (its threads start again, with the new wait, at its next multi-threaded call)
    finally:
        del os.environ["OPENBLAS_THREAD_TIMEOUT"]
    SPIN[dll._name] = THREAD_TIMEOUT


def _fn(name, restype=ctypes.c_int):
    lib = _openblas()
    if lib is None:
        return None
    f = getattr(lib[0], f"{lib[1]}_{name}{lib[2]}", None)
    if f is not None:
        f.restype = restype
    return f


def set_num_threads(n):
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n!r}")
    f = _fn("set_num_threads", None)
    if f is not None:
        f(ctypes.c_int(n))
    _requested[0] = n
    sync_scipy()


# SciPy ships an OpenBLAS of its own (the LAPACK routines of ember.linalg that NumPy lacks): it
# follows set_num_threads once SciPy's linear algebra is loaded (ember loads it on first use)
_requested = [None]
_scipy_lib = []


def sync_scipy():
    import sys
    n = _requested[0]
    if n is None or "scipy.linalg" not in sys.modules:
        return
    if not _scipy_lib:
        import scipy
        _scipy_lib.append(None)
        for path in sorted(glob.glob(os.path.join(os.path.dirname(scipy.__file__), "..", "scipy.libs", "*openblas*"))):
            try:
                dll = ctypes.CDLL(path)
            except OSError:
                continue
            for name in ("scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                         "openblas_set_num_threads"):
                f = getattr(dll, name, None)
                if f is not None:
                    f.restype = None
                    _scipy_lib[0] = f
                    short_spin(dll)
                    break
            if _scipy_lib[0] is not None:
                break
    if _scipy_lib[0] is not None:
        _scipy_lib[0](ctypes.c_int(n))


_set_fn = []


def set_gemm_threads(n):
    """NumPy's OpenBLAS alone to ``n`` threads, for the next GEMMs (ember._parallel's dynamic rule
    and its split GEMMs; SciPy's copy and the requested count are left as they are). One C call."""
    if not _set_fn:
        _set_fn.append(_fn("set_num_threads", None))
    f = _set_fn[0]
    if f is not None:
        f(n)


def get_num_threads():
    f = _fn("get_num_threads")
    return int(f()) if f is not None else (os.cpu_count() or 1)


def core():
    """The kernel set OpenBLAS runs ('SkylakeX', 'Haswell', ...), or None for another BLAS."""
    f = _fn("get_corename", ctypes.c_char_p)
    return f().decode() if f is not None else None


def version():
    f = _fn("get_config", ctypes.c_char_p)
    return f().decode() if f is not None else None


def cpu_has_avx512():
    """Whether the CPU has the AVX-512 subsets OpenBLAS's SkylakeX kernels use (Linux only; None
    where /proc/cpuinfo cannot be read)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags
    except OSError:
        pass
    return None


def pinned_below_cpu():
    """A sentence when OPENBLAS_CORETYPE pins an AVX2-or-older core on an AVX-512 CPU, else None."""
    pin, name = os.environ.get("OPENBLAS_CORETYPE"), core()
    if pin and name in _AVX2_CORES and cpu_has_avx512():
        return (f"OPENBLAS_CORETYPE={pin} pins OpenBLAS to its {name} kernels on a CPU with AVX-512; "
                "OpenBLAS's own detection would pick its AVX-512 (SkylakeX) kernels, with about twice the float32 GEMM speed")
    return None
