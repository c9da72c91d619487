"""ember.random: the default CPU generator's seed and state (torch.random's API)."""
import contextlib

from ._creation import (default_generator, get_rng_state, initial_seed, manual_seed,  # noqa: F401
                        seed, set_rng_state)

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
           "default_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cpu"):
    """Restores the CPU generator's state on exit: random draws inside the block do not advance the
    stream outside it. ember has the CPU only, so ``devices`` must be empty or None."""
    if device_type not in ("cpu", "cuda"):
        raise RuntimeError(f"{_caller}: device_type {device_type!r} is not available in this build (ember "
                           "runs on the CPU)")
    if not enabled:
        yield
        return
    if devices:
        # PyTorch's CPU-only build answers the same way: there is no CUDA state to fork
        raise AssertionError("Torch not compiled with CUDA enabled (ember runs on the CPU: "
                             f"{_caller}({_devices_kw}={list(devices)}) has no device state to fork)")
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
