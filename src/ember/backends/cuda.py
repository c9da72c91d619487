"""torch.backends.cuda on a CPU build: not built; the matmul and SDPA switches are plain flags."""
import types

matmul = types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                               allow_bf16_reduced_precision_reduction=True)
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built():
    return False


def flash_sdp_enabled():
    return _sdp["flash"]


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def math_sdp_enabled():
    return _sdp["math"]


def cudnn_sdp_enabled():
    return _sdp["cudnn"]


def enable_flash_sdp(enabled):
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled):
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled):
    _sdp["math"] = bool(enabled)


def enable_cudnn_sdp(enabled):
    _sdp["cudnn"] = bool(enabled)


def preferred_linalg_library(backend=None):
    return "default"
