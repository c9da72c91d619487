import math

import numpy as np

import ember
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property
from .._creation import _numpy_rng

__all__ = ["VonMises"]


def _log_modified_bessel_i0(x):
    return ember.special.i0e(x).log() + x


class VonMises(Distribution):
    """The von Mises (circular normal) distribution of mean angle ``loc`` and ``concentration``.
    Sampling is Best & Fisher's rejection method (in float64); it has no rsample.

    Differences from PyTorch: samples are reproducible under manual_seed but are not PyTorch's draws (another
    rejection sampler); the distribution is the same."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        batch_shape = self.loc.shape
        super().__init__(batch_shape, ember.Size(), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * ember.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_i0(self.concentration)

    @lazy_property
    def _loc(self):
        return self.loc.to(ember.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(ember.float64)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        _proposal_r = (1 + rho ** 2) / (2 * rho)
        # second order Taylor expansion around 0 for small kappa
        _proposal_r_taylor = 1 / kappa + kappa
        return ember.where(kappa < 1e-5, _proposal_r_taylor, _proposal_r)

    def sample(self, sample_shape=ember.Size()):
        shape = tuple(self._extended_shape(sample_shape))
        rng = _numpy_rng()
        loc = np.broadcast_to(self._loc.detach().numpy(), shape)
        kappa = np.broadcast_to(self._concentration.detach().numpy(), shape)
        r = np.broadcast_to(self._proposal_r.detach().numpy(), shape)
        x = np.empty(shape, np.float64)
        done = np.zeros(shape, bool)
        while not done.all():
            u = rng.random((3,) + shape)
            u1, u2, u3 = u[0], u[1], u[2]
            z = np.cos(math.pi * u1)
            f = (1 + r * z) / (r + z)
            c = kappa * (r - f)
            accept = ((c * (2 - c) - u2) > 0) | (np.log(c / u2) + 1 - c >= 0)
            new = accept & ~done
            x[new] = (np.sign(u3 - 0.5) * np.arccos(f))[new]
            done |= accept
        out = np.mod(x + math.pi + loc, 2 * math.pi) - math.pi
        return ember.from_numpy(out.astype(self.loc.detach().numpy().dtype))

    def expand(self, batch_shape, _instance=None):
        try:
            return super().expand(batch_shape)
        except NotImplementedError:
            validate_args = self.__dict__.get("_validate_args")
            loc = self.loc.expand(batch_shape)
            concentration = self.concentration.expand(batch_shape)
            return type(self)(loc, concentration, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return 1 - (ember.special.i1e(self.concentration) / ember.special.i0e(self.concentration))

    def entropy(self):
        k = self.concentration
        return (-k * ember.special.i1e(k) / ember.special.i0e(k) + math.log(2 * math.pi)
                + _log_modified_bessel_i0(k))
