"""torch.accelerator, PyTorch's device-agnostic API, as its CPU-only build answers: no accelerator
(``is_available()`` False, ``current_accelerator()`` None, ``device_count()`` 0); the calls that need
a device raise PyTorch's error."""

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream",
           "device_count", "device_index", "empty_cache", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize", "get_device_capability"]


def is_available():
    return False


def current_accelerator(check_available=False):
    return None


def device_count():
    return 0


def _none(*args, **kwargs):
    raise RuntimeError("Cannot access accelerator device when none is available.")


(current_device_idx, current_device_index, set_device_idx, set_device_index, current_stream, set_stream,
 synchronize, empty_cache, get_memory_info, memory_allocated, max_memory_allocated, memory_reserved,
 max_memory_reserved, memory_stats, reset_accumulated_memory_stats, reset_peak_memory_stats,
 get_device_capability) = (_none,) * 17


class device_index:
    """``with torch.accelerator.device_index(i):``: None is accepted (and does nothing) as in
    PyTorch; an index needs a device."""

    def __init__(self, device, /):
        if device is not None:
            _none()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
