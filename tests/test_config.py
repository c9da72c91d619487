"""ember.__config__ and the BLAS facts behind it (ember._blas)."""
import numpy as np
import pytest

import ember
from ember import _blas


def test_show_names_versions_and_kernels():
    text = ember.__config__.show()
    assert text.startswith(f"ember {ember.__version__}, on NumPy {np.__version__}")
    core = _blas.core()
    if core is None:
        assert "BLAS kernels: unknown" in text
    else:
        assert f"BLAS kernels: {core}" in text
        assert "OpenBLAS" in text


def test_parallel_info_reports_the_thread_count():
    assert f"ember BLAS threads: {ember.get_num_threads()}\n" in ember.__config__.parallel_info()


@pytest.mark.parametrize("pin,core,avx512,expect", [
    ("Haswell", "Haswell", True, True),     # the pin costs AVX-512
    ("Haswell", "Haswell", False, False),   # an AVX2 CPU: nothing lost
    (None, "Haswell", True, False),         # OpenBLAS's own choice is not second-guessed
    ("SkylakeX", "SkylakeX", True, False),  # pinned to the AVX-512 kernels already
    ("Zen", "Zen", None, False),            # CPU flags unknown: say nothing
])
def test_pinned_below_cpu(monkeypatch, pin, core, avx512, expect):
    if pin is None:
        monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_CORETYPE", pin)
    monkeypatch.setattr(_blas, "core", lambda: core)
    monkeypatch.setattr(_blas, "cpu_has_avx512", lambda: avx512)
    note = _blas.pinned_below_cpu()
    assert (note is not None) == expect
    if expect:
        assert f"OPENBLAS_CORETYPE={pin}" in note and "AVX-512" in note
        assert "Note: " + note in ember.__config__.show()
