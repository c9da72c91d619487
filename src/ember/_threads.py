"""The thread count of the BLAS under NumPy (OpenBLAS as NumPy's wheels ship it), for
``ember.set_num_threads`` / ``ember.get_num_threads``. Where no OpenBLAS can be found the calls do
nothing and ``get_num_threads`` reports the CPU count."""
import ctypes
import glob
import os

_api = None


def _find():
    global _api
    if _api is None:
        _api = False
        import numpy as np
        here = os.path.dirname(np.__file__)
        for lib in sorted(glob.glob(os.path.join(here, "..", "numpy.libs", "*openblas*")) +
                          glob.glob(os.path.join(here, ".dylibs", "*openblas*"))):
            try:
                dll = ctypes.CDLL(lib)
            except OSError:
                continue
            for prefix in ("scipy_openblas", "openblas"):
                for suffix in ("64_", ""):
                    s, g = f"{prefix}_set_num_threads{suffix}", f"{prefix}_get_num_threads{suffix}"
                    if hasattr(dll, s) and hasattr(dll, g):
                        _api = (getattr(dll, s), getattr(dll, g))
                        return _api
    return _api


def set_num_threads(n):
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n!r}")
    api = _find()
    if api:
        api[0](ctypes.c_int(n))


def get_num_threads():
    api = _find()
    if api:
        return int(api[1]())
    return os.cpu_count() or 1
