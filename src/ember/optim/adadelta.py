"""Adadelta (Zeiler 2012), as torch.optim.Adadelta: weight decay, maximize."""
import numpy as np

from .optimizer import (Optimizer, _params_with_grad, _writeable, _new_state, _step_tensor, _closure_loss,
                        _check_nonnegative)


class Adadelta(Optimizer):
    """Adadelta."""
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_nonnegative(lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      capturable=capturable, maximize=maximize, differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p, g in _params_with_grad(group):
                a = _writeable(p)
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                if "square_avg" not in st:
                    st["step"] = _new_state(np.zeros((), np.float32))
                    st["square_avg"] = _new_state(np.zeros_like(a))
                    st["acc_delta"] = _new_state(np.zeros_like(a))
                _step_tensor(st)
                if wd:
                    g = g + wd * a
                sq, acc = st["square_avg"]._data, st["acc_delta"]._data
                sq *= rho                                   # E[g^2] = rho E[g^2] + (1 - rho) g^2
                sq += (1 - rho) * (g * g)
                delta = np.sqrt(acc + eps) / np.sqrt(sq + eps) * g
                acc *= rho                                  # E[dx^2] = rho E[dx^2] + (1 - rho) dx^2
                acc += (1 - rho) * (delta * delta)
                a -= lr * delta
                p._bump("Adadelta.step")
        return loss
