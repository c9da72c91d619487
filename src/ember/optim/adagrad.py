"""Adagrad."""
import numpy as np

from .optimizer import (Optimizer, _params_with_grad, _writeable, _new_state,
                        _step_tensor, _scratch, _closure_loss, _check_nonnegative, _real_view)


class Adagrad(Optimizer):
    """Adagrad."""
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:  # Adagrad's state exists from the start, as in PyTorch
            for p in group["params"]:
                st = self.state[p]
                st["step"] = _new_state(np.zeros((), np.float32))
                st["sum"] = _new_state(np.full_like(p._data, group["initial_accumulator_value"]))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, lr_decay, eps, wd = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
            for p, g in _params_with_grad(group):
                a = _writeable(p)
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                step = _step_tensor(st)
                a, g = _real_view(a), _real_view(g, False)  # (a complex parameter: two real ones)
                if wd:
                    g = g + wd * a
                clr = lr / (1 + (step - 1) * lr_decay)
                s = _real_view(st["sum"]._data)
                t = _scratch(self, p, a)
                np.multiply(g, g, out=t)
                s += t
                np.sqrt(s, out=t)
                t += eps
                np.divide(g, t, out=t)
                t *= clr
                a -= t
                p._bump("Adagrad.step")
        return loss
