"""ember.backends: the switches PyTorch programs set (cudnn.benchmark, cuda.matmul.allow_tf32, ...).
ember computes with NumPy on the CPU, so none of these backends is present: the flags can be set and
read, as on PyTorch's CPU build, and change nothing."""
import types


def _false():
    return False


cudnn = types.SimpleNamespace(is_available=_false, enabled=True, benchmark=False, deterministic=False,
                              allow_tf32=True, version=lambda: None)
mps = types.SimpleNamespace(is_available=_false, is_built=_false)
mkldnn = types.SimpleNamespace(is_available=_false, enabled=True)
cuda = types.SimpleNamespace(is_built=_false,
                             matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                                          allow_bf16_reduced_precision_reduction=True))
