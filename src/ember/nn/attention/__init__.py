"""torch.nn.attention: which kernels scaled_dot_product_attention may use.

ember has one attention kernel, the math one (softmax(q k^T * scale + mask) v in ember ops). As on
PyTorch's CPU build, the math and flash backends can run (PyTorch's CPU flash kernel computes the
same function); a selection of only the CUDA-only backends (efficient, cuDNN) or the overrideable
one leaves no viable kernel, and scaled_dot_product_attention raises PyTorch's error.
"""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __repr__(self):
        return f"<SDPBackend.{self.name}: {self.value}>"

    __str__ = lambda self: f"SDPBackend.{self.name}"  # noqa: E731


_ALL = (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION,
        SDPBackend.OVERRIDEABLE)
_CPU_CAPABLE = {SDPBackend.MATH, SDPBackend.FLASH_ATTENTION}
_enabled = set(_ALL)


def _check_viable():
    """Called by scaled_dot_product_attention: PyTorch's error when no CPU-capable backend is on."""
    if not (_enabled & _CPU_CAPABLE):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")


def _backends_enabled():
    return [b for b in _ALL if b in _enabled]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block only ``backends`` (one SDPBackend or a list) may run."""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    try:
        backends = list(backends)
    except TypeError:
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances") from None
    for b in backends:
        if not isinstance(b, SDPBackend):
            raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances")
    global _enabled
    previous = set(_enabled)
    _enabled = set(backends)
    try:
        yield {}
    finally:
        _enabled = previous
