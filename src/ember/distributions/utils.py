"""Helpers shared by the distributions (torch.distributions.utils)."""
from functools import update_wrapper
from numbers import Number

import ember

euler_constant = 0.57721566490153286060


def broadcast_all(*values):
    """The arguments as tensors of one broadcast shape: numbers become tensors of the dtype of the
    tensor arguments (the default dtype when there are none)."""
    if not all(ember.is_tensor(v) or isinstance(v, Number) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(ember.is_tensor(v) for v in values):
        ref = next((v for v in values if ember.is_tensor(v)), None)
        dtype = ref.dtype if ref is not None else ember.get_default_dtype()
        values = [v if ember.is_tensor(v) else ember.tensor(v, dtype=dtype) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device=None):
    return ember.randn(tuple(shape), dtype=dtype)


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` right-most dims of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs):
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """A property computed once per instance on first use (the result replaces the descriptor
    in the instance's dict); under a class it returns itself, as PyTorch's does."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    rows, cols = ember.tril_indices(n, n, offset=diag)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag=0):
    n = int((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2)
    mat = ember.zeros(tuple(vec.shape[:-1]) + (n, n), dtype=vec.dtype)
    rows, cols = ember.tril_indices(n, n, offset=diag)
    mat[..., rows, cols] = vec
    return mat


class BinaryProbsLogits:
    """The ``probs``/``logits`` pair of a distribution given either one (the other is derived on
    first use) and the shape of the one given: shared by Bernoulli, Binomial, NegativeBinomial and
    LogitRelaxedBernoulli."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()
