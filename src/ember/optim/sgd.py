"""SGD with momentum, dampening, Nesterov, weight decay and maximize."""
import numpy as np

from .. import _parallel as _P

from .optimizer import (Optimizer, required, _writeable, _new_state, _scratch, _closure_loss,
                        _check_nonnegative)


def _update(a, g, b, tmp, old, lr, momentum, dampening, nesterov):
    """One parameter's update, elementwise (the momentum buffer b is None without momentum; old:
    b holds the last step's buffer, to be moved on by g)."""
    if old:
        b *= momentum
        if dampening:
            b += (1 - dampening) * g
        else:
            b += g
    if b is not None:
        g = g + momentum * b if nesterov else b
    np.multiply(g, lr, out=tmp)
    a -= tmp


class SGD(Optimizer):
    """Stochastic gradient descent (momentum, dampening, Nesterov, weight decay)."""
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        _check_nonnegative(momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            lr = group["lr"]
            momentum = group["momentum"]
            dampening = group["dampening"]
            wd = group["weight_decay"]
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            for p in group["params"]:
                gt = p._grad
                if gt is None:
                    continue
                g = gt._data
                a = p._data
                if g.dtype != a.dtype:
                    raise RuntimeError(f"{p.dtype} parameter has a gradient of dtype {gt.dtype}")
                if not a.flags.writeable:
                    a = _writeable(p)
                if maximize:
                    g = -g
                if wd:
                    g = g + wd * a
                b, old = None, False
                if momentum:
                    st = state[p]
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = st["momentum_buffer"] = _new_state(np.array(g, copy=True))
                    else:
                        old = True
                        buf._bump()
                    b = buf._data
                tmp = _scratch(self, p, a)  # a -= lr * g without a fresh temporary
                if a.size < _P.MIN_SIZE:
                    _update(a, g, b, tmp, old, lr, momentum, dampening, nesterov)
                else:  # big: on every intra-op thread, a slice of the tensors each
                    _P.apply(_update, (a, g, b, tmp), old, lr, momentum, dampening, nesterov)
                p._bump("SGD.step")
        return loss
