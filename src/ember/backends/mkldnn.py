"""torch.backends.mkldnn: ember has no oneDNN kernels (its convolutions are NumPy's BLAS)."""
import sys as _sys

from ._flags import flags_context

enabled = True
deterministic = False


def is_available():
    return False


flags = flags_context(_sys.modules[__name__], ("enabled", "deterministic"))
