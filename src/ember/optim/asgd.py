"""ASGD (averaged SGD, Polyak & Juditsky 1992), as torch.optim.ASGD: the running average of the
parameters is the state's ``ax``."""
import numpy as np

from .optimizer import (Optimizer, _params_with_grad, _writeable, _new_state, _step_tensor, _closure_loss,
                        _check_nonnegative)


class ASGD(Optimizer):
    """Averaged stochastic gradient descent."""
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_nonnegative(lr=lr, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0, wd = (group[k] for k in ("lr", "lambd", "alpha", "t0", "weight_decay"))
            for p, g in _params_with_grad(group):
                a = _writeable(p)
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                if "ax" not in st:
                    st["step"] = _new_state(np.zeros((), np.float32))
                    st["eta"] = _new_state(np.asarray(lr, np.float32))
                    st["mu"] = _new_state(np.ones((), np.float32))
                    st["ax"] = _new_state(np.zeros_like(a))
                step = _step_tensor(st)
                if wd:
                    g = g + wd * a
                eta, mu = float(st["eta"]._data), float(st["mu"]._data)
                a *= 1 - lambd * eta                      # decay, then the gradient step
                a -= eta * g
                ax = st["ax"]._data
                if mu != 1:
                    ax += (a - ax) * mu
                else:
                    ax[...] = a
                st["eta"]._data = np.asarray(lr / ((1 + lambd * lr * step) ** alpha), np.float32)
                st["mu"]._data = np.asarray(1 / max(1, step - t0), np.float32)
                p._bump("ASGD.step")
        return loss
