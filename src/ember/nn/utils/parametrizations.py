"""nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal as parametrizations
(nn.utils.parametrize). orthogonal needs ember.linalg's matrix_exp / householder_product / qr /
solve; where this build lacks one, using that map raises a clear error."""
import math

from ... import ops as _ops
from ..modules.module import Module
from . import parametrize


def _no_grad():
    from ...autograd.grad_mode import no_grad
    return no_grad()


def _norm_except_dim(v, pow_, dim):
    if dim == -1:
        return v.norm(pow_)
    dim = dim % v.dim()
    dims = tuple(d for d in range(v.dim()) if d != dim)
    return _ops.norm(v, pow_, dims, keepdim=True)


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """w = g * v / ||v|| (the norm over every dim but ``dim``), g and v stored as
    ``parametrizations.<name>.original0`` / ``original1``."""
    _weight_norm = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, _weight_norm, unsafe=True)

    def _load_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        # a state_dict of the old nn.utils.weight_norm (name_g, name_v) loads into this one
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)
    if hasattr(module, "_register_load_state_dict_pre_hook"):
        module._register_load_state_dict_pre_hook(_load_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            from ..._creation import empty
            u = empty((h,), dtype=weight.dtype).normal_(0, 1)
            v = empty((w,), dtype=weight.dtype).normal_(0, 1)
            self.register_buffer("_u", _normalize(u, self.eps))
            self.register_buffer("_v", _normalize(v, self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with _no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(_normalize(_ops.mv(weight_mat, self._v), self.eps))
                self._v.copy_(_normalize(_ops.mv(weight_mat.t(), self._u), self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return _normalize(weight, self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = _ops.dot(u, _ops.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def _normalize(x, eps):
    return x / _ops.clamp_min(x.norm(), eps)


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """weight / sigma(weight), sigma estimated by power iteration (one step per training forward),
    its vectors kept as the buffers ``parametrizations.<name>.0._u`` / ``_v``."""
    weight = getattr(module, name, None)
    from ..._tensor import Tensor
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import _ConvTransposeNd
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ----------------------------------------------------------------------------- orthogonal


def _linalg(name):
    from ... import linalg as L
    f = getattr(L, name, None)
    if f is None:
        raise NotImplementedError(f"orthogonal: this map needs ember.linalg.{name}, which this build of ember "
                                  f"does not have yet")
    return f


class _OrthMaps:
    matrix_exp = "matrix_exp"
    cayley = "cayley"
    householder = "householder"


def _make_orthogonal(A):
    """The Q of A's QR decomposition with R's diagonal made positive (unique for full rank A)."""
    Q, R = _linalg("qr")(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _is_orthogonal(Q, eps=None):
    n, k = Q.shape[-2], Q.shape[-1]
    from ..._creation import eye
    Id = eye(k, dtype=Q.dtype)
    eps = 10.0 * n * float(__import__("numpy").finfo(Q.dtype.np).eps)
    return bool(_ops.allclose(Q.mH @ Q, Id, atol=eps))


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.dim() < 2:
            raise ValueError(f"Cannot apply orthogonal to a tensor of fewer than 2 dimensions, got {weight.dim()}")
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        from ..._creation import eye, zeros
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = _ops.cat([X, zeros(tuple(X.shape[:-2]) + (n, n - k), dtype=X.dtype)], -1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = _linalg("matrix_exp")(A)
            else:
                Id = eye(n, dtype=A.dtype)
                Q = _linalg("solve")(Id + A * -0.5, Id + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = _linalg("householder_product")(A, tau)
            # X's diagonal holds the signs (1 or -1) of the reflectors' completion; not differentiated
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().trunc().unsqueeze(-2)  # (an int cast, as PyTorch)
        if getattr(self, "base", None) is not None:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        if tuple(Q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{tuple(Q.shape)}.")
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        if n < k:
            Q = Q.mT
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            # the reflectors of Q's QR factorization, stored as geqrf gives them; the diagonal holds the
            # sign that forward multiplies each column by: R's diagonal sign, flipped where LAPACK's tau
            # is 0 (no reflection there, while forward's tau = 2 / |v|^2 reflects e_i)
            A, tau = _linalg("geqrf")(Q)
            sign = _ops.where(A.diagonal(dim1=-2, dim2=-1) < 0, -1.0, 1.0).to(A.dtype)
            sign = _ops.where(tau == 0, -sign, sign)
            A = A.clone()
            A.diagonal(dim1=-2, dim2=-1).copy_(sign)
            return A.mT if Q_init.shape[-2] < Q_init.shape[-1] else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # completed to a square orthogonal matrix by random columns, as PyTorch does
            from ..._creation import randn
            Q = _make_orthogonal(_ops.cat([Q, randn(tuple(Q.shape[:-2]) + (n, n - k), dtype=Q.dtype)], -1))
        self.base = Q
        from ..._creation import zeros_like
        neg_id = zeros_like(Q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """An orthogonal (or semi-orthogonal) weight, parametrized by the matrix exponential, the Cayley
    map or Householder reflectors of an unconstrained matrix."""
    weight = getattr(module, name, None)
    from ..._tensor import Tensor
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.dim()} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in ("matrix_exp", "cayley", "householder"):
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
                         f'{orthogonal_map}')
    need = {"matrix_exp": "matrix_exp", "cayley": "solve", "householder": "householder_product"}[orthogonal_map]
    for n in (need, "qr"):
        _linalg(n)  # a clear error now, not at the first forward, where this build's linalg lacks one
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


del math

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]
