"""torch.xpu (Intel GPUs) as PyTorch's build without XPU answers: nothing available; calls that
need a device raise its AssertionError."""


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def manual_seed(seed):
    """Seeds the XPU generators: there are none (as on PyTorch's CPU build, nothing happens)."""


manual_seed_all = manual_seed


def empty_cache():
    """Frees cached XPU memory: there is none."""


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def _not_compiled(*args, **kwargs):
    raise AssertionError("Torch not compiled with XPU enabled")


init = current_device = set_device = synchronize = get_device_name = get_device_properties = _not_compiled
