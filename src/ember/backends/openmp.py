"""torch.backends.openmp: ember does not run OpenMP kernels of its own."""


def is_available():
    return False
