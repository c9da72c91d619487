"""torch.special: the special functions (registry ops of ember/ops/special.py and their aliases
among ember's existing functions), with PyTorch's names and signatures."""
from .ops import special as _SP
from .ops import elementwise as _E
from .ops import reduce as _R

erf = _E.erf
erfc = _SP.erfc
erfcx = _SP.erfcx
erfinv = _E.erfinv
expit = _E.sigmoid
exp2 = _E.exp2
expm1 = _E.expm1
log1p = _E.log1p
gammaln = _SP.lgamma
digamma = psi = _SP.digamma
polygamma = _SP.polygamma
i0 = _SP.i0
i0e = _SP.i0e
i1 = _SP.i1
i1e = _SP.i1e
ndtr = _SP.ndtr
ndtri = _SP.ndtri
log_ndtr = _SP.log_ndtr
xlogy = _E.xlogy
xlog1py = _SP.xlog1py
zeta = _SP.zeta
sinc = _SP.sinc
entr = _SP.entr
gammainc = _SP.igamma
gammaincc = _SP.igammac


def logit(input, eps=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    return _E.logit(input, eps)


def multigammaln(input, p):
    """The log of the multivariate gamma function of dimension p."""
    return _SP.mvlgamma(input, p)


def round(input, *, decimals=0):
    """Round to the nearest integer (half to even), or to decimals digits."""
    return _E.round(input, decimals=decimals)


def softmax(input, dim, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _R.softmax(input, dim)


def log_softmax(input, dim, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _R.log_softmax(input, dim)


def logsumexp(input, dim, keepdim=False):
    return _R.logsumexp(input, dim, keepdim)


globals().update(_SP.SPECIAL_ONLY)  # bessel_j0 ... airy_ai, the orthogonal polynomials

__all__ = sorted(k for k in globals() if not k.startswith("_"))
