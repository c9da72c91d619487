"""Rprop (resilient backpropagation), as torch.optim.Rprop: per-element step sizes grown or shrunk
by the sign agreement of successive gradients."""
import numpy as np

from .optimizer import (Optimizer, _params_with_grad, _writeable, _new_state, _step_tensor, _closure_loss,
                        _check_nonnegative)


class Rprop(Optimizer):
    """Resilient backpropagation (signs of the gradient only)."""
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        _check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            (etaminus, etaplus), (smin, smax) = group["etas"], group["step_sizes"]
            for p, g in _params_with_grad(group):
                a = _writeable(p)
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                if "prev" not in st:
                    st["step"] = _new_state(np.zeros((), np.float32))
                    st["prev"] = _new_state(np.zeros_like(a))
                    st["step_size"] = _new_state(np.full_like(a, group["lr"]))
                _step_tensor(st)
                prev, size = st["prev"]._data, st["step_size"]._data
                agree = np.sign(g * prev)
                factor = np.where(agree > 0, etaplus, np.where(agree < 0, etaminus, 1.0)).astype(a.dtype)
                size *= factor
                np.clip(size, smin, smax, out=size)
                g = np.where(agree < 0, 0, g).astype(a.dtype)   # a sign change: no step, forget the gradient
                a -= np.sign(g) * size
                prev[...] = g
                p._bump("Rprop.step")
        return loss
