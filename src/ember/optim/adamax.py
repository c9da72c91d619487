"""Adamax (Adam with the infinity norm, Kingma & Ba 2015), as torch.optim.Adamax."""
import numpy as np

from .optimizer import (Optimizer, _params_with_grad, _writeable, _new_state, _step_tensor, _closure_loss,
                        _check_nonnegative, _check_betas)


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm)."""
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_nonnegative(lr=lr, eps=eps, weight_decay=weight_decay)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p, g in _params_with_grad(group):
                a = _writeable(p)
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                if "exp_avg" not in st:
                    st["step"] = _new_state(np.zeros((), np.float32))
                    st["exp_avg"] = _new_state(np.zeros_like(a))
                    st["exp_inf"] = _new_state(np.zeros_like(a))
                step = _step_tensor(st)
                if wd:
                    g = g + wd * a
                m, u = st["exp_avg"]._data, st["exp_inf"]._data
                m += (1 - b1) * (g - m)                     # m = lerp(m, g, 1 - b1)
                np.maximum(u * b2, np.abs(g) + eps, out=u)  # u = max(b2 u, |g| + eps)
                a -= (lr / (1 - b1 ** step)) * (m / u)
                p._bump("Adamax.step")
        return loss
