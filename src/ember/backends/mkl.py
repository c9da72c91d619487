"""torch.backends.mkl: ember's BLAS is NumPy's (OpenBLAS), not MKL."""


def is_available():
    return False
