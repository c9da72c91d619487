"""NAdam (Adam with Nesterov momentum, Dozat 2016), as torch.optim.NAdam: momentum decay, weight
decay coupled or decoupled."""

import numpy as np

from .optimizer import (Optimizer, _params_with_grad, _writeable, _new_state, _step_tensor, _closure_loss,
                        _check_nonnegative, _check_betas)


class NAdam(Optimizer):
    """Adam with Nesterov momentum (NAdam)."""
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_nonnegative(lr=lr, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      foreach=foreach, maximize=maximize, capturable=capturable,
                                      differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            psi = group["momentum_decay"]
            for p, g in _params_with_grad(group):
                a = _writeable(p)
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                if "exp_avg" not in st:
                    st["step"] = _new_state(np.zeros((), np.float32))
                    st["mu_product"] = _new_state(np.ones((), np.float32))
                    st["exp_avg"] = _new_state(np.zeros_like(a))
                    st["exp_avg_sq"] = _new_state(np.zeros_like(a))
                step = _step_tensor(st)
                if wd:
                    if group["decoupled_weight_decay"]:
                        a *= 1 - lr * wd
                    else:
                        g = g + wd * a
                mu = b1 * (1.0 - 0.5 * 0.96 ** (step * psi))
                mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
                mu_product = float(st["mu_product"]._data) * mu
                st["mu_product"]._data = np.asarray(mu_product, np.float32)
                m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
                m += (1 - b1) * (g - m)
                v *= b2
                v += (1 - b2) * (g * g)
                denom = np.sqrt(v / (1 - b2 ** step)) + eps
                a -= (lr * (1 - mu) / (1 - mu_product)) * (g / denom)
                a -= (lr * mu_next / (1 - mu_product * mu_next)) * (m / denom)
                p._bump("NAdam.step")
        return loss
