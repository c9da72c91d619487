"""RAdam (rectified Adam, Liu et al. 2019), as torch.optim.RAdam: weight decay coupled or decoupled."""
import math

import numpy as np

from .optimizer import (Optimizer, _params_with_grad, _writeable, _new_state, _step_tensor, _closure_loss,
                        _check_nonnegative, _check_betas)


class RAdam(Optimizer):
    """Rectified Adam."""
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_nonnegative(lr=lr, eps=eps, weight_decay=weight_decay)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, foreach=foreach,
                                      maximize=maximize, capturable=capturable, differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            rho_inf = 2 / (1 - b2) - 1
            for p, g in _params_with_grad(group):
                a = _writeable(p)
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                if "exp_avg" not in st:
                    st["step"] = _new_state(np.zeros((), np.float32))
                    st["exp_avg"] = _new_state(np.zeros_like(a))
                    st["exp_avg_sq"] = _new_state(np.zeros_like(a))
                step = _step_tensor(st)
                if wd:
                    if group["decoupled_weight_decay"]:
                        a *= 1 - lr * wd
                    else:
                        g = g + wd * a
                m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
                m += (1 - b1) * (g - m)
                v *= b2
                v += (1 - b2) * (g * g)
                bc1 = 1 - b1 ** step
                bc2 = 1 - b2 ** step
                rho_t = rho_inf - 2 * step * (b2 ** step) / bc2
                if rho_t > 5.0:   # the variance is tractable: the rectified adaptive step
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    a -= (lr / bc1 * rect * math.sqrt(bc2)) * (m / (np.sqrt(v) + eps))
                else:             # early steps: SGD with momentum
                    a -= (lr / bc1) * m
                p._bump("RAdam.step")
        return loss
