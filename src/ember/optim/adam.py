"""Adam and AdamW (amsgrad, maximize, weight decay coupled or decoupled)."""
import math

import numpy as np

from .. import _parallel as _P
from .optimizer import (Optimizer, _params_with_grad, _writeable, _new_state,
                        _step_tensor, _scratch, _closure_loss, _check_nonnegative, _check_betas, _real_view)


def _update(a, g, m, v, t, mv, lr, b1, b2, eps, wd, decoupled, bc1, bc2_sqrt):
    """One parameter's Adam(W) update, elementwise in its arrays (mv: AMSGrad's max, or None)."""
    if wd:
        if decoupled:
            a *= 1 - lr * wd
        else:
            g = g + wd * a
    np.subtract(g, m, out=t)        # m = lerp(m, g, 1 - b1)
    t *= 1 - b1
    m += t
    v *= b2                         # v = b2 v + (1 - b2) g^2
    np.multiply(g, g, out=t)
    t *= 1 - b2
    v += t
    if mv is not None:
        np.maximum(mv, v, out=mv)
        np.sqrt(mv, out=t)
    else:
        np.sqrt(v, out=t)
    t /= bc2_sqrt                   # denom = sqrt(v) / sqrt(bc2) + eps
    t += eps
    np.divide(m, t, out=t)
    t *= lr / bc1
    a -= t


class Adam(Optimizer):
    """Adam (amsgrad, maximize, weight_decay added to the gradient)."""
    _decoupled_default = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=None):
        _check_nonnegative(lr=lr, eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        if decoupled_weight_decay is None:
            decoupled_weight_decay = self._decoupled_default
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = group["lr"]
            b1, b2 = group["betas"]
            eps = group["eps"]
            wd = group["weight_decay"]
            amsgrad = group["amsgrad"]
            decoupled = group.get("decoupled_weight_decay", False)
            for p, g in _params_with_grad(group):
                a = _writeable(p)
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                if "exp_avg" not in st:
                    st["step"] = _new_state(np.zeros((), np.float32))
                    st["exp_avg"] = _new_state(np.zeros_like(a))
                    st["exp_avg_sq"] = _new_state(np.zeros_like(a))
                    if amsgrad:
                        st["max_exp_avg_sq"] = _new_state(np.zeros_like(a))
                step = _step_tensor(st)
                a, g = _real_view(a), _real_view(g, False)  # (a complex parameter: two real ones)
                m = _real_view(st["exp_avg"]._data)
                v = _real_view(st["exp_avg_sq"]._data)
                t = _scratch(self, p, a)
                mv = _real_view(st["max_exp_avg_sq"]._data) if amsgrad else None
                if g.shape != a.shape:
                    g = np.broadcast_to(g, a.shape)
                hyper = (lr, b1, b2, eps, wd, decoupled, 1 - b1 ** step, math.sqrt(1 - b2 ** step))
                if a.size < _P.MIN_SIZE:
                    _update(a, g, m, v, t, mv, *hyper)
                else:  # big: on every intra-op thread, a slice of the tensors each
                    _P.apply(_update, (a, g, m, v, t, mv), *hyper)
                p._bump(type(self).__name__ + ".step")
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay."""
    _decoupled_default = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
