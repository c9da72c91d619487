"""torch.mps (Apple GPUs) as PyTorch's build without MPS answers: no device; calls that need the
backend raise its RuntimeError."""


def is_available():
    return False


def device_count():
    return 0


def manual_seed(seed):
    """Seeds the MPS generator: there is none (as on a build without MPS, nothing happens)."""


def _no_mps(what):
    def f(*args, **kwargs):
        raise RuntimeError(f"Cannot execute {what}() without MPS backend.")
    f.__name__ = what
    return f


synchronize = _no_mps("deviceSynchronize")
empty_cache = _no_mps("emptyCache")
current_allocated_memory = _no_mps("getCurrentAllocatedMemory")
driver_allocated_memory = _no_mps("getDriverAllocatedMemory")
seed = get_rng_state = set_rng_state = _no_mps("getDefaultGenerator")
