"""SparseAdam: Adam for sparse gradients (nn.Embedding(sparse=True)). ember's gradients are dense
(it has no sparse tensors), and PyTorch's SparseAdam refuses dense gradients, so a step with a
gradient raises PyTorch's error; the constructor checks its arguments as PyTorch's does."""
from .optimizer import Optimizer, _params_with_grad, _closure_loss, _check_nonnegative, _check_betas


class SparseAdam(Optimizer):
    """Adam for sparse gradients; ember has no sparse tensors, so a step with a dense gradient raises, as
    PyTorch's does."""
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_nonnegative(lr=lr, eps=eps)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            if _params_with_grad(group):
                raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss
