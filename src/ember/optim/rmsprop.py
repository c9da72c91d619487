"""RMSprop (centered, momentum, weight decay, maximize)."""
import numpy as np

from .optimizer import (Optimizer, _params_with_grad, _writeable, _new_state,
                        _step_tensor, _closure_loss, _check_nonnegative, _real_view)


class RMSprop(Optimizer):
    """RMSprop (centered, momentum)."""
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
            for p, g in _params_with_grad(group):
                a = _writeable(p)
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                if "square_avg" not in st:
                    st["step"] = _new_state(np.zeros((), np.float32))
                    st["square_avg"] = _new_state(np.zeros_like(a))
                    if momentum > 0:
                        st["momentum_buffer"] = _new_state(np.zeros_like(a))
                    if centered:
                        st["grad_avg"] = _new_state(np.zeros_like(a))
                _step_tensor(st)
                a, g = _real_view(a), _real_view(g, False)  # (a complex parameter: two real ones)
                if wd:
                    g = g + wd * a
                sq = _real_view(st["square_avg"]._data)
                sq *= alpha
                sq += (1 - alpha) * (g * g)
                if centered:
                    ga = _real_view(st["grad_avg"]._data)
                    ga += (1 - alpha) * (g - ga)
                    avg = np.sqrt(sq - ga * ga) + eps
                else:
                    avg = np.sqrt(sq) + eps
                if momentum > 0:
                    buf = _real_view(st["momentum_buffer"]._data)
                    buf *= momentum
                    buf += g / avg
                    a -= lr * buf
                else:
                    a -= lr * (g / avg)
                p._bump("RMSprop.step")
        return loss
