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


class _CudaAmp:
    """torch.cuda.amp: its GradScaler disables itself here (no CUDA device), as on PyTorch's CPU build."""

    @staticmethod
    def GradScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                   enabled=True):
        from .amp import GradScaler
        return GradScaler("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    @staticmethod
    def autocast(enabled=True, dtype=None, cache_enabled=True):
        from .amp import autocast
        return autocast("cuda", dtype, enabled, cache_enabled)


amp = _CudaAmp()


def is_bf16_supported(including_emulation=True):
    return False
