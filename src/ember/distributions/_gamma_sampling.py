"""Standard gamma draws and their pathwise (implicit reparameterisation) derivative.

A sample x ~ Gamma(alpha, 1) is a function of alpha through the CDF: F(x; alpha) = u for a fixed
uniform u, so dx/dalpha = -(dF/dalpha) / (dF/dx), with dF/dx the density. SciPy gives F (the
regularised incomplete gamma P) but not dF/dalpha: it is taken here by a Richardson-extrapolated
central difference in alpha, in float64, on log P (or log Q = log(1 - P) in the upper tail, so
that neither cancels), and divided by the density in log space (neither underflows for tiny x)."""
import numpy as np
import scipy.special as _sp

import ember
from .._creation import _numpy_rng


def _dlog(fn, a, x):
    """d/da log fn(a, x), central differences with one Richardson step (error O(h^4))."""
    h = np.maximum(1e-3 * a, 1e-6)
    h = np.minimum(h, 0.5 * a)

    def central(step):
        return (np.log(fn(a + step, x)) - np.log(fn(a - step, x))) / (2 * step)
    d1, d2 = central(h), central(h / 2)
    return (4 * d2 - d1) / 3


def standard_gamma_grad(x, alpha):
    """dx/dalpha of standard gamma samples ``x`` (NumPy arrays), in float64."""
    x = np.asarray(x, np.float64)
    a = np.asarray(alpha, np.float64)
    x, a = np.broadcast_arrays(x, a)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        logpdf = (a - 1) * np.log(x) - x - _sp.gammaln(a)
        p = _sp.gammainc(a, x)
        upper = p > 0.5
        lower_grad = -np.exp(np.log(p) - logpdf) * _dlog(_sp.gammainc, a, x)      # -P dlogP/da / pdf
        upper_grad = np.exp(np.log1p(-p) - logpdf) * _dlog(_sp.gammaincc, a, x)   # +Q dlogQ/da / pdf
        return np.where(upper, upper_grad, lower_grad)


class _StandardGamma(ember.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        a = alpha.detach().numpy().astype(np.float64)
        x = _numpy_rng().standard_gamma(a)
        tiny = np.finfo(alpha.detach().numpy().dtype).tiny
        x = np.maximum(x, tiny).astype(alpha.detach().numpy().dtype)
        out = ember.from_numpy(x)
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        g = standard_gamma_grad(x.detach().numpy(), alpha.detach().numpy())
        return grad * ember.from_numpy(g.astype(x.detach().numpy().dtype))


def standard_gamma(alpha):
    """Gamma(alpha, 1) draws (the shape of ``alpha``), differentiable in alpha (pathwise)."""
    if alpha.requires_grad and ember.is_grad_enabled():
        return _StandardGamma.apply(alpha)
    with ember.no_grad():
        return _StandardGamma.forward(_NoCtx(), alpha)


class _NoCtx:
    def save_for_backward(self, *a):
        pass
