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


def test_cuda_and_backends_answer_as_a_cpu_build(torch):
    # `device = "cuda" if torch.cuda.is_available() else "cpu"` and `torch.backends.cudnn.benchmark = True`
    # raised AttributeError
    for m in (ember, torch):
        assert (m.cuda.is_available(), m.cuda.device_count(), m.cuda.is_initialized()) == (False, 0, False)
        assert m.cuda.manual_seed_all(0) is None and m.cuda.empty_cache() is None
        assert not m.backends.mps.is_available() and not m.backends.cudnn.is_available()
        assert m.backends.cudnn.benchmark is False and m.backends.cuda.matmul.allow_tf32 is False
        m.backends.cudnn.benchmark = True
        assert m.backends.cudnn.benchmark is True
        m.backends.cudnn.benchmark = False
        m.set_float32_matmul_precision("high")
        assert m.get_float32_matmul_precision() == "high"
        m.set_float32_matmul_precision("highest")
        with pytest.raises(AssertionError):
            m.cuda.synchronize()
    assert not ember.are_deterministic_algorithms_enabled()
    ember.use_deterministic_algorithms(True)
    assert ember.are_deterministic_algorithms_enabled()
    ember.use_deterministic_algorithms(False)


def test_jit_helpers_for_eager_model_code(torch):
    # model code calls torch.jit.is_scripting()/annotate/@torch.jit.unused and torch._assert
    from typing import List
    for m in (ember, torch):
        assert m.jit.is_scripting() is False and m.jit.is_tracing() is False
        assert m.jit.annotate(List[int], []) == []
        f = m.jit.unused(lambda x: x + 1)
        assert f(1) == 2
        m._assert(True, "fine")
        with pytest.raises(AssertionError, match="boom"):
            m._assert(False, "boom")
    lin = ember.nn.Linear(2, 2)
    assert ember.jit.script(lin) is lin and ember.jit.trace(lin, ember.ones(1, 2)) is lin  # eager: unchanged
