"""What ember runs on, as ``torch.__config__``: ``show()`` and ``parallel_info()`` return text."""
import os
import platform

from . import _blas


def show():
    """ember's build and runtime configuration: versions, the BLAS under NumPy and its kernels."""
    import numpy as np

    from . import __version__
    name = _blas.core()
    lines = [f"ember {__version__}, on NumPy {np.__version__}, Python {platform.python_version()}",
             f"  - CPU: {platform.machine()}, {os.cpu_count()} logical cores"
             + {True: ", AVX-512", False: "", None: ""}[_blas.cpu_has_avx512()],
             f"  - BLAS: {_blas.version() or 'not OpenBLAS (core unknown)'}",
             f"  - BLAS kernels: {name or 'unknown'}"
             + (f" (OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']})" if "OPENBLAS_CORETYPE" in os.environ
                else "")]
    note = _blas.pinned_below_cpu()
    if note:
        lines.append(f"  - Note: {note}")
    return "\n".join(lines) + "\n"


def parallel_info():
    """Thread settings: the BLAS's thread count (``ember.set_num_threads``) and the environment."""
    env = [f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS") if k in os.environ]
    from . import _parallel
    return (f"ember BLAS threads: {_blas.get_num_threads()}\n"
            f"ember intra-op threads: {_parallel.get_num_threads()} (kernels over {_parallel.GRAIN} elements "
            f"per thread split)\n"
            f"Environment: {', '.join(env) if env else 'no thread variables set'}\n")
