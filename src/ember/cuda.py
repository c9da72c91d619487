"""ember.cuda: ember runs on the CPU only. The queries answer as PyTorch's CPU build does
(``is_available()`` is False, no devices), the seeding and cache calls do nothing (there is no CUDA
generator or cache), and the calls that need a device fail as PyTorch's CPU build fails."""


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def manual_seed(seed):
    """Seeds the CUDA generators: there are none, so nothing happens (as on PyTorch's CPU build)."""


manual_seed_all = manual_seed


def empty_cache():
    """Frees cached CUDA memory: there is none."""


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def _no_cuda(*args, **kwargs):
    raise AssertionError("ember has no CUDA support: tensors live on the 'cpu' device")


synchronize = current_device = get_device_name = set_device = get_device_properties = _no_cuda
