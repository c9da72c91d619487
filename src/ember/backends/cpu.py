"""torch.backends.cpu: what the CPU offers to the kernels ember runs (NumPy's BLAS decides)."""


def get_cpu_capability():
    """The widest vector instruction set the CPU has, named as PyTorch names it ("AVX512", "AVX2",
    "DEFAULT"): read from the CPU's flags, the set NumPy's own kernels can use."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
    except ImportError:  # NumPy 1.x
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as feats
        except ImportError:
            return "DEFAULT"
    if feats.get("AVX512F") and feats.get("AVX512BW") and feats.get("AVX512VL"):
        return "AVX512"
    if feats.get("AVX2"):
        return "AVX2"
    return "DEFAULT"
