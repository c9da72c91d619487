"""torch.masked: reductions and normalizations that skip masked-out elements (strided tensors with a
boolean ``mask``; MaskedTensor is not provided). The ops are in ember/ops/masked.py."""
from .ops.masked import (sum, prod, amax, amin, argmax, argmin, mean, var, std, cumsum, cumprod,  # noqa: F401
                         median, logsumexp, logaddexp, norm, normalize, softmax, log_softmax, softmin)
