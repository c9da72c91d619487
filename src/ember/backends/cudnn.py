"""torch.backends.cudnn on a CPU build: no cuDNN (``is_available()`` False, ``version()`` None);
the flags are plain attributes that programs set and read."""
import sys as _sys

from ._flags import flags_context

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None


def is_acceptable(tensor):
    return False


flags = flags_context(_sys.modules[__name__], ("enabled", "benchmark", "benchmark_limit", "deterministic",
                                               "allow_tf32"))
