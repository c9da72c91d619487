"""The few names of PyTorch's C extension module that Python programs use directly: here they are
ember's own Python classes (ember has no C extension)."""
from .ops.linalg_solve import LinAlgError as _LinAlgError  # noqa: F401  (torch._C._LinAlgError)
