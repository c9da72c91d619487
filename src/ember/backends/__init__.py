"""ember.backends: the switches PyTorch programs set (cudnn.benchmark, cuda.matmul.allow_tf32, ...).

ember computes with NumPy on the CPU, so none of the GPU backends is present: their flags can be
set and read, as on PyTorch's CPU build, and change nothing; the queries answer as that build
answers (``cudnn.is_available()`` and ``mps.is_available()`` are False). Each backend is a real
submodule, so ``import ember.backends.cudnn as cudnn`` works as with torch."""
from . import cpu, cuda, cudnn, mha, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mha", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
