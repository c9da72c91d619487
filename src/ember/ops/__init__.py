"""The op registry's families and the public functions built on them; this module also binds
the Tensor methods and operators, so each rule lives in one place."""
import builtins as _builtins

import numpy as np

from .. import _dispatch as D
from .._dispatch import REGISTRY, dispatch
from .._tensor import Tensor
from . import elementwise as _E
from . import reduce as _R
from . import shape as _S
from . import indexing as _I
from . import linalg as _L
from . import inplace as _IP
from . import composite as _C
from . import complex as _CX
from . import fft as _FFT  # noqa: F401  (the transforms; public as ember.fft)
del fft  # (ember.fft is the public module, not this submodule)
from . import spectral as _SP  # noqa: F401  (stft, istft, the window functions)
from . import nn as _NN  # noqa: F401  (nn kernels: conv, pool, norm, embedding)
del nn  # the submodule attribute must not leak into `from ember.ops import *` (ember.nn is the nn package)
from . import loss as _LOSS  # noqa: F401,E402  (the fused cross-entropy primitives)
del loss
from . import special as _SP  # noqa: E402  (special functions: gamma, Bessel, zeta, polynomials)
del special  # (ember.special is the public torch.special module, not this family file)
from . import rnn as _RNN  # noqa: F401,E402  (the fused LSTM layer)
from . import attention as _ATTN  # noqa: F401,E402  (scaled_dot_product_attention's primitive)
del attention
del rnn  # (not a torch namespace name: keep it out of `from ember.ops import *`)
from .elementwise import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .shape import sum_to  # noqa: F401
from .complex import *  # noqa: F401,F403
from .spectral import *  # noqa: F401,F403

# ops whose derivative formulas are real-only in PyTorch: gradients through complex outputs raise
for _name in ("silu", "nan_to_num", "embedding"):
    REGISTRY[_name].real_grad_only = True

_public = {}
for _m in (_E, _R, _S, _I, _L, _C, _CX):
    for _k, _v in vars(_m).items():
        if not _k.startswith("_") and callable(_v) and not _k.endswith("_op") and getattr(_v, "__module__", "").startswith("ember.ops"):
            _public[_k] = _v
_public.update({_k: getattr(_SP, _k) for _k in _SP.__all__})  # (its torch.* names only)
globals().update(_public)

# issue 15's missing ops: new family files, each adding its public functions here
from . import numeric as _NUM  # noqa: E402
from . import layout as _LAY  # noqa: E402
from . import order_stats as _ORD  # noqa: E402
from . import calculus as _CALC  # noqa: E402
from . import histograms as _HIST  # noqa: E402
from . import scatter_extreme as _SRED  # noqa: E402
from . import native_norms as _NATIVE  # noqa: E402
_NEW_FAMILIES = (_NUM, _LAY, _ORD, _CALC, _HIST, _SRED, _NATIVE)
for _m in _NEW_FAMILIES:
    for _k, _v in vars(_m).items():
        if not _k.startswith("_") and callable(_v) and not _k.endswith("_op") and getattr(_v, "__module__", "").startswith("ember.ops"):
            _public[_k] = _v
            globals()[_k] = _v
# private names real programs call (torch._softmax_backward_data, ...): bound on ember itself by __init__
_PRIVATE_OPS = {k: getattr(_NATIVE, k) for k in ("_native_batch_norm_legit", "_batch_norm_with_update",
                                                 "_softmax_backward_data")}
_PRIVATE_OPS["_segment_reduce"] = _SRED.segment_reduce  # (op_db's name for torch.segment_reduce)

# ----------------------------------------------------------------------------- operators

_add, _sub, _mul, _div = _E.add_op, _E.sub_op, _E.mul_op, _E.div_op


def _radd(self, other):
    return dispatch(_add, (other, self))


def _rsub(self, other):
    return dispatch(_sub, (other, self))


def _rmul(self, other):
    return dispatch(_mul, (other, self))


def _rdiv(self, other):
    if type(other) in (int, float) and self._data.dtype.kind == "f":
        # PyTorch computes `n / t` as t.reciprocal() * n: the same values, and its graph
        # (MulBackward0 over ReciprocalBackward0)
        return dispatch(_mul, (dispatch(_E.reciprocal_op, (self,)), other))
    return dispatch(_div, (other, self))


def _matmul(self, other):
    return dispatch(_L.matmul_op, (self, other))


def _rmatmul(self, other):
    return dispatch(_L.matmul_op, (other, self))


def _pow(self, exponent):
    return dispatch(_E.pow_op, (self, exponent))


def _rpow(self, base):
    return dispatch(_E.pow_op, (base, self))


def _floordiv(self, other):
    return dispatch(_E.floor_divide_op, (self, other))


def _rfloordiv(self, other):
    return dispatch(_E.floor_divide_op, (other, self))


def _mod(self, other):
    return dispatch(_E.remainder_op, (self, other))


def _rmod(self, other):
    return dispatch(_E.remainder_op, (other, self))


def _invert(self):
    if self.dtype.name == "bool":
        return dispatch(_E.logical_not_op, (self,))
    if self._data.dtype.kind not in "iu":
        raise TypeError(f"bitwise_not (~): only implemented on integer and Boolean tensors, got {self.dtype}")
    return dispatch(_E.bitwise_not_op, (self,))


def _and(self, other):
    return dispatch(_E.bitwise_and_op, (self, other))


def _or(self, other):
    return dispatch(_E.bitwise_or_op, (self, other))


def _xor(self, other):
    return dispatch(_E.bitwise_xor_op, (self, other))


_NUMBERS = (Tensor, int, float, bool, _builtins.complex, np.generic, np.ndarray)  # (ops.complex is the function)


def _eq(self, other):
    if other is None or not isinstance(other, _NUMBERS):
        return False
    return dispatch(_E.eq_op, (self, other))


def _ne(self, other):
    if other is None or not isinstance(other, _NUMBERS):
        return True
    return dispatch(_E.ne_op, (self, other))


def _inplace_op(fn):
    def method(self, other):
        return fn(self, other)
    return method


_ops = {
    "__add__": lambda self, other: dispatch(_add, (self, other)),
    "__radd__": _radd,
    "__sub__": lambda self, other: dispatch(_sub, (self, other)),
    "__rsub__": _rsub,
    "__mul__": lambda self, other: dispatch(_mul, (self, other)),
    "__rmul__": _rmul,
    "__truediv__": lambda self, other: dispatch(_div, (self, other)),
    "__rtruediv__": _rdiv,
    "__floordiv__": _floordiv,
    "__rfloordiv__": _rfloordiv,
    "__mod__": _mod,
    "__rmod__": _rmod,
    "__pow__": _pow,
    "__rpow__": _rpow,
    "__matmul__": _matmul,
    "__rmatmul__": _rmatmul,
    "__neg__": lambda self: dispatch(_E.neg_op, (self,)),
    "__pos__": lambda self: self,
    "__abs__": lambda self: dispatch(_E.abs_op, (self,)),
    "__invert__": _invert,
    "__and__": _and, "__rand__": _and,
    "__or__": _or, "__ror__": _or,
    "__xor__": _xor, "__rxor__": _xor,
    "__lshift__": lambda self, other: dispatch(_E.bitwise_left_shift_op, (self, other)),
    "__rlshift__": lambda self, other: dispatch(_E.bitwise_left_shift_op, (other, self)),
    "__rshift__": lambda self, other: dispatch(_E.bitwise_right_shift_op, (self, other)),
    "__rrshift__": lambda self, other: dispatch(_E.bitwise_right_shift_op, (other, self)),
    "__eq__": _eq,
    "__ne__": _ne,
    "__lt__": lambda self, other: dispatch(_E.lt_op, (self, other)),
    "__le__": lambda self, other: dispatch(_E.le_op, (self, other)),
    "__gt__": lambda self, other: dispatch(_E.gt_op, (self, other)),
    "__ge__": lambda self, other: dispatch(_E.ge_op, (self, other)),
    "__getitem__": _I.getitem,
    "__setitem__": _I.setitem,
    "__iadd__": lambda self, other: _IP.add_(self, other),
    "__isub__": lambda self, other: _IP.sub_(self, other),
    "__imul__": lambda self, other: _IP.mul_(self, other),
    "__itruediv__": lambda self, other: _IP.div_(self, other),
    "__ipow__": lambda self, other: _IP.pow_(self, other),
}
for _k, _v in _ops.items():
    setattr(Tensor, _k, _v)

# ----------------------------------------------------------------------------- methods

_METHODS = [
    # elementwise
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "float_power",
    "maximum", "minimum", "fmax", "fmin", "atan2", "arctan2", "clamp", "clip", "clamp_min", "clamp_max",
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "asin",
    "acos", "atan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "asinh", "atanh", "reciprocal",
    "sigmoid", "erf", "erfinv", "abs", "absolute", "sign", "sgn", "floor", "ceil", "trunc", "fix",
    "frac", "round", "relu", "neg", "negative", "square", "isnan", "isinf", "isfinite", "nan_to_num",
    "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_not", "bitwise_and",
    "bitwise_left_shift", "bitwise_right_shift",
    "bitwise_or", "bitwise_xor", "eq", "ne", "lt", "le", "gt", "ge", "greater", "less",
    "greater_equal", "less_equal", "not_equal", "lerp", "addcmul", "addcdiv", "hypot", "logit",
    "xlogy", "logaddexp", "isclose", "allclose", "equal", "where", "subtract", "multiply", "divide",
    # reductions
    "sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "all",
    "any", "count_nonzero", "var", "std", "logsumexp", "softmax", "log_softmax", "cumsum", "cumprod",
    "norm", "dist", "aminmax",
    # shape
    "view", "reshape", "permute", "transpose", "swapaxes", "swapdims", "t", "movedim", "moveaxis",
    "expand", "broadcast_to", "sum_to_size", "squeeze", "unsqueeze", "flatten", "unflatten", "select",
    "narrow", "unbind", "split", "chunk", "tensor_split", "diagonal", "as_strided", "repeat", "tile",
    "repeat_interleave", "flip", "fliplr", "flipud", "roll", "rot90", "tril", "triu", "clone",
    "contiguous",
    # indexing
    "gather", "scatter", "scatter_add", "scatter_reduce", "take_along_dim", "index_select", "index_add",
    "index_fill", "masked_fill", "masked_select", "masked_scatter", "take", "nonzero", "argwhere",
    "sort", "argsort", "msort", "topk", "kthvalue", "median", "unique", "bincount", "index_put",
    # linalg
    "matmul", "mm", "bmm", "mv", "dot", "inner", "vdot", "outer", "ger", "addmm", "addmv", "baddbmm",
    "addbmm", "addr", "kron", "cross", "trace", "diag", "diag_embed",
    # composites
    "diff", "quantile", "nanquantile", "asinh", "atanh", "arcsinh", "arctanh", "ravel", "index_copy", "isin",
    "logcumsumexp", "cummax", "cummin", "signbit", "heaviside", "cov", "corrcoef",
    # complex
    "conj", "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "angle", "sgn", "isreal",
    "stft", "istft",
]
_public.update({_k: getattr(_SP, _k) for _k in _SP.__all__})
for _name in _METHODS:
    if _name in _public:
        setattr(Tensor, _name, _public[_name])
_METHODS_NEW = [  # issue 15's ops that are Tensor methods too
    "acosh", "arccosh", "copysign", "gcd", "lcm", "nextafter", "frexp", "deg2rad", "rad2deg", "logaddexp2",
    "ldexp", "isposinf", "isneginf", "positive",
    "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk",
    "diagflat", "select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter",
    "mode", "nanmedian", "histc", "histogram", "trapezoid", "trapz", "cumulative_trapezoid",
    "index_reduce", "put", "unique_consecutive", "renorm",
]
for _name in _METHODS_NEW:
    if _name in _public:
        setattr(Tensor, _name, _public[_name])
Tensor.__rdiv__ = _NUM._rdiv_method
Tensor.unfold = _C._tensor_unfold
# special functions: x.polygamma(n) takes n second, the others as the functions
for _name in ("lgamma", "digamma", "mvlgamma", "erfc", "i0", "sinc", "igamma", "igammac"):
    setattr(Tensor, _name, _public[_name])
Tensor.polygamma = lambda self, n: _SP.polygamma(n, self)


def _view_as(self, other):
    return _S.view(self, tuple(other.shape))


def _reshape_as(self, other):
    return _S.reshape(self, tuple(other.shape))


def _expand_as(self, other):
    return _S.expand(self, tuple(other.shape))


def _type_as(self, other):
    return _S.to_dtype(self, other.dtype)


def _where_method(self, condition, other):
    """Tensor.where(condition, other) is where(condition, self, other): self is the input, not the condition."""
    return _public["where"](condition, self, other)


Tensor.where = _where_method
Tensor.view_as = _view_as
Tensor.reshape_as = _reshape_as
Tensor.expand_as = _expand_as
Tensor.type_as = _type_as
Tensor.T = property(lambda self: _S.permute(self, *reversed(range(self.dim()))))
Tensor.mT = property(lambda self: _S.transpose(self, -2, -1))


def _H(self):
    if self.dim() != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""))
    return _CX.conj(_S.transpose(self, 0, 1))  # (real: PyTorch's TransposeBackward0 alone)


Tensor.H = property(_H)
Tensor.mH = property(lambda self: _CX.conj(_S.transpose(self, -2, -1)))
Tensor.adjoint = lambda self: _CX.conj(_S.transpose(self, -2, -1))
Tensor.real = property(_CX.real, lambda self, v: _CX.real(self).copy_(v))
Tensor.imag = property(_CX.imag, lambda self, v: _CX.imag(self).copy_(v))

# in place
for _name in ("add_", "sub_", "mul_", "div_", "pow_", "copy_", "fill_", "zero_", "uniform_", "normal_",
              "bernoulli_", "exponential_", "random_", "geometric_", "cauchy_", "log_normal_",
              "fill_diagonal_", "masked_scatter_"):
    setattr(Tensor, _name, getattr(_IP, _name))
Tensor.true_divide_ = _IP.div_
Tensor.multiply_ = _IP.mul_
Tensor.subtract_ = _IP.sub_
Tensor.index_put_ = _I.index_put_


def _mk_inplace(fname):
    fn = _public[fname]

    def method(self, *args, **kwargs):
        return _IP._inplace_via(self, fn, (args, kwargs), fname + "_")
    method.__name__ = fname + "_"
    return method


for _name in _IP.INPLACE_VIA:
    if _name in _public:
        setattr(Tensor, _name + "_", _mk_inplace(_name))
for _name in ("lgamma", "digamma", "mvlgamma", "erfc", "i0", "sinc", "igamma", "igammac"):
    setattr(Tensor, _name + "_", _mk_inplace(_name))
Tensor.polygamma_ = lambda self, n: _IP._inplace_via(self, lambda s: _SP.polygamma(n, s), ((), {}), "polygamma_")


def sum_to(g, shape):  # noqa: F811 - re-exported for the autograd engine
    return _S.sum_to(g, shape)


# issue 15: the in-place twins of the new ops (x.copysign_(y), x.index_reduce_(...), x.put_(...), ...)
for _name in ("copysign", "gcd", "lcm", "nextafter", "ldexp", "deg2rad", "rad2deg", "acosh", "arccosh", "renorm",
              "put", "index_reduce"):
    if _name in _public:
        setattr(Tensor, _name + "_", _mk_inplace(_name))

from .._aten import aten  # noqa: E402,F401  (torch.ops.aten: ATen names over the public functions)
