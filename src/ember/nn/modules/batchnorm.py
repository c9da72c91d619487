"""BatchNorm1d/2d: batch statistics in training (updating running stats), running stats in eval."""
from .module import Module
from ..parameter import Parameter
from .. import functional as F
from .. import init
from ..._creation import empty, zeros, ones, tensor
from ... import _dtype as dt
from ...autograd.grad_mode import no_grad


def _affine_parameters(module, shape, affine, bias, dtype, device):
    """weight and bias of shape ``shape`` (bias only when ``bias``), or None for both when not
    ``affine``; initialised by ``_reset_affine``."""
    module.register_parameter("weight", Parameter(empty(shape, dtype=dtype, device=device)) if affine else None)
    module.register_parameter("bias", Parameter(empty(shape, dtype=dtype, device=device))
                              if affine and bias else None)


def _reset_affine(module):
    """Every normalisation layer starts as the identity: weight ones, bias zeros."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, num_features, affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        """Running mean to zeros, running variance to ones, the batch count to zero."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """Reset the running statistics, the weight to ones and the bias to zeros."""
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                and not self.num_batches_tracked._meta else tensor(0, dtype=dt.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs, assign)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            nbt = self.num_batches_tracked
            if nbt._wr is not None:  # a transform's wrapper (vmap over stacked buffers): through the op
                nbt.add_(1)
            elif not nbt._meta:
                nbt._data[...] += 1
                nbt._bump("num_batches_tracked")
            if self.momentum is None:
                eaf = 1.0 / max(float(nbt), 1.0)
            else:
                eaf = self.momentum
        if input._meta or (self.running_mean is not None and self.running_mean._meta):
            eaf = 0.0  # meta tensors have no values: there are no statistics to update
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            bn_training, eaf, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) input, with running statistics."""
    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) input, with running statistics."""
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"{type(self).__name__}: expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) input, with running statistics."""
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"{type(self).__name__}: expected 5D input (got {input.dim()}D input)")
