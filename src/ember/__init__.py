"""ember: a deep-learning framework on NumPy whose public API mirrors PyTorch's.

``import ember as torch`` and a PyTorch program runs with the same numbers.
"""
__version__ = "0.1.0"

import warnings as _warnings

# NumPy's floating-point warnings raised inside ember's kernels (x / 0, log(0), overflow): PyTorch
# returns inf/nan silently, and so does ember. Only warnings attributed to ember's own modules
# are silenced; the user's NumPy code keeps its settings.
_warnings.filterwarnings("ignore", message=r"(divide by zero|invalid value|overflow|underflow) encountered",
                         category=RuntimeWarning, module=r"ember(\.|$)")

from . import _malloc  # noqa: F401,E402  (glibc's malloc keeps tensor buffers for reuse: _malloc.py)
from . import _blas  # noqa: E402
_blas._openblas()  # (found at import, before any thread of the program calls it: its idle threads are
#                    told to sleep, which restarts them: _blas.short_spin)
from . import _dispatch  # noqa: F401  (the registry and the dispatch path)
from ._dtype import (dtype, float16, float32, float64, int8, int16, int32, int64, uint8,  # noqa: F401
                     bool_ as bool, promote_types, get_default_dtype, set_default_dtype, finfo, iinfo)
from ._dtype import complex64, complex128  # noqa: F401,E402
cfloat = complex64
cdouble = complex128
from ._tensor import Tensor, Size, device  # noqa: F401
from ._memory_format import (memory_format, contiguous_format, channels_last,  # noqa: F401
                             channels_last_3d, preserve_format)
from ._creation import *  # noqa: F401,F403
from ._creation import (Generator, default_generator, manual_seed, seed, initial_seed,  # noqa: F401
                        get_rng_state, set_rng_state, range_ as range)
from . import random  # noqa: F401  (ember.random: fork_rng and the default generator's state)
from . import ops as _ops
from .ops import *  # noqa: F401,F403
# the registry's Op objects (``abs_op``, ...) are ember's internals, not torch names: they stay in
# ember.ops and ember._dispatch.REGISTRY, out of the public namespace
for _k in [k for k in globals() if k.endswith("_op") and isinstance(globals()[k], _dispatch.Op)] + ["aten"]:
    del globals()[_k]
# ... nor are the helpers the star imports bring along: batching rules, the dispatch machinery, the op
# family submodules, and functions torch has only in torch.nn.functional (gelu, silu, ...). The names
# torch has not (tests/test_surface.py compares with dir(torch)):
for _k in """
    D EW IDX LIN RED REGISTRY U VIEW as_strided_backward_rule as_strided_rule
    as_strided_scatter_rule batched_index calculus cat_rule cj composite constant_pad contiguous
    defop dim_shift_rule dispatch dt einsum_rule elementwise elementwise_rule elu empty_array expand
    expand_rule fallback_rule gather_like_rule gelu getitem hardsigmoid hardswish hardtanh
    histograms index_add_rule index_backward_rule index_put_rule index_rule index_select_rule
    indexing inplace is_complex_t leaky_relu linear linear_rule logsigmoid masked_fill_rule
    matmul_rule mish native_dropout_backward native_norms nonzero_rule not_for_complex np numeric
    order_stats permute_rule range_ reduce relu6 repeat repeat_rule scatter_extreme
    searchsorted_rule setitem shape silu slice_dim softplus softsign spectral string sum_to
    sum_to_size to_dtype view view_dtype view_rule
""".split():
    del globals()[_k]
globals().update(_ops._PRIVATE_OPS)  # torch._softmax_backward_data and the like (issue 15)
from ._printing import set_printoptions  # noqa: F401
from ._serialization import save, load  # noqa: F401
from ._dtype import bfloat16  # noqa: F401  (ml_dtypes' bfloat16)
from . import serialization  # noqa: F401  (torch.serialization: add_safe_globals, safe_globals, ...)
from . import __config__  # noqa: F401  (ember.__config__.show(), as torch's)
from . import _tensor_methods  # noqa: F401  (conversions: .to, .float, .double, ...)
globals().update(_tensor_methods._LEGACY)  # FloatTensor, LongTensor, ... (legacy constructors and types)
resize_as_ = _tensor_methods.resize_as_  # torch.resize_as_(input, the_template): the Tensor method as a function
zero_ = Tensor.zero_  # torch.zero_(input): the same, for zero_
from . import autograd  # noqa: F401
# torch.linalg (the star import from .ops bound the name to ops.linalg, which `from . import`
# would return)
linalg = __import__("importlib").import_module(".linalg", __name__)
globals().update(linalg.TORCH_FUNCTIONS)  # torch.det, torch.svd, torch.cholesky_solve, ...
from . import fft  # noqa: F401,E402  (torch.fft)
from . import signal  # noqa: F401,E402  (torch.signal.windows)
from .autograd import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: F401
                       is_grad_enabled, is_inference_mode_enabled)
from .autograd import is_anomaly_enabled, is_anomaly_check_nan_enabled  # noqa: F401

half = float16
float = float32
double = float64
short = int16
int = int32
long = int64

cpu = device("cpu")


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def numel(input):
    return input.numel()


def result_type(tensor1, tensor2):
    from .ops._util import result_dtype
    a = tensor1._data if isinstance(tensor1, Tensor) else tensor1
    b = tensor2._data if isinstance(tensor2, Tensor) else tensor2
    return result_dtype(a, b)


def can_cast(from_, to):
    from ._dtype import can_cast as _cc
    return _cc(from_, to)


def is_nonzero(input):
    if input.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no' if input.numel() == 0 else 'more than one'} "
                           "values is ambiguous")
    return input.item() != 0  # (``bool`` is ember.bool, the dtype, in this module)


def set_num_threads(n):
    """Threads of ember's intra-op pool (large elementwise, copy, normalisation and optimizer
    kernels) and of the BLAS under NumPy (OpenBLAS), kept in step; starts from OMP_NUM_THREADS. A
    value that is not a positive int raises RuntimeError, as PyTorch's does.

    Differences from PyTorch: the pool's workers join a kernel only while another core is idle
    (OpenMP's dynamic adjustment: other processes' load, read from /proc/stat at most every 0.2 s, must
    leave about 1.5 cores free), so on a busy machine a kernel may run on one thread where PyTorch's
    would use all n; OMP_DYNAMIC=false in the environment turns this off (large kernels then always
    use the n threads)."""
    from ._parallel import set_num_threads as _set
    _set(n)


def get_num_threads():
    from ._parallel import get_num_threads as _get
    return _get()


def is_autocast_enabled(device_type=None):
    return False


def _assert(condition, message):
    """torch._assert, which model code (torchvision's) calls: assert that survives python -O."""
    if not condition:
        raise AssertionError(message)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """torch.compile's entry point; usable as a decorator too.

    Differences from PyTorch: ember runs eagerly and has no graph compiler, so the model or function
    comes back unchanged (the same numbers, eager speed)."""
    if model is None:
        return lambda m: m
    if not callable(model):
        raise RuntimeError(f"compile: expected a callable (a Module or a function), got {type(model).__name__}")
    return model


_matmul_precision = ["highest"]
_deterministic = [False]


def set_float32_matmul_precision(precision):
    """Accepted for PyTorch programs: NumPy's float32 matmul has one precision, so this changes nothing."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: expected 'highest', 'high' or 'medium'")
    _matmul_precision[0] = precision


def get_float32_matmul_precision():
    return _matmul_precision[0]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """ember's kernels are deterministic already; the flag is kept for are_deterministic_algorithms_enabled."""
    _deterministic[0] = not not mode


def are_deterministic_algorithms_enabled():
    return _deterministic[0]


def get_default_device():
    """The device factory functions create tensors on: the CPU (ember runs on the CPU)."""
    return cpu


def set_default_device(device):
    """As torch.set_default_device on a CPU-only build: None and 'cpu' are accepted (tensors are
    created on the CPU already).

    Differences from PyTorch: 'cuda' raises AssertionError at once, where PyTorch's CPU-only build
    raises it at the first allocation; 'meta' as a default raises NotImplementedError where PyTorch
    accepts it (pass ``device='meta'`` to the factories instead)."""
    if device is None:
        return
    d = device if isinstance(device, str) else str(device)
    kind = d.split(":", 1)[0]
    if kind == "cpu":
        return
    if kind == "cuda":
        raise AssertionError("Torch not compiled with CUDA enabled")
    if kind == "meta":
        raise NotImplementedError("set_default_device('meta') is not supported by ember: pass device='meta' "
                                  "to the factory functions (ember.empty(..., device='meta'), nn.Linear(..., "
                                  "device='meta'))")
    raise RuntimeError(f"set_default_device: ember runs on the CPU, there is no {kind!r} device")


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any DLPack producer (PyTorch, NumPy, JAX, ...)."""
    from .utils.dlpack import from_dlpack as _f
    return _f(ext_tensor)


def _lazy(name):
    import importlib
    return importlib.import_module("." + name, __name__)


_LAZY = ("nn", "optim", "func", "fx", "profiler", "utils", "models", "datasets", "distributed",
         "trace_analysis", "testing", "cuda", "backends", "jit", "amp", "accelerator", "xpu", "mps",
         "_dynamo", "functorch", "onnx", "special", "distributions", "masked", "_C")


def __getattr__(name):
    if name in _LAZY:
        mod = _lazy(name)
        globals()[name] = mod
        return mod
    if name == "autocast":
        from .amp import autocast
        return autocast
    if name == "vmap":
        from .func import vmap
        return vmap
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


from . import _docs  # noqa: E402  (the registry functions' docstrings, from one table)
_docs.apply()
