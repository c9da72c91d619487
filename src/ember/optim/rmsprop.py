"""RMSprop (centered, momentum, weight decay, maximize)."""
import numpy as np

from .optimizer import Optimizer, _params_with_grad, _writeable, _new_state, _step_tensor


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
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
                if wd:
                    g = g + wd * a
                sq = st["square_avg"]._data
                sq *= alpha
                sq += (1 - alpha) * (g * g)
                if centered:
                    ga = st["grad_avg"]._data
                    ga += (1 - alpha) * (g - ga)
                    avg = np.sqrt(sq - ga * ga) + eps
                else:
                    avg = np.sqrt(sq) + eps
                if momentum > 0:
                    buf = st["momentum_buffer"]._data
                    buf *= momentum
                    buf += g / avg
                    a -= lr * buf
                else:
                    a -= lr * (g / avg)
                p._bump("RMSprop.step")
        return loss
