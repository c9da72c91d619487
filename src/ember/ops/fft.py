"""Discrete Fourier transforms: three primitives on pocketfft (scipy.fft), as PyTorch's

* ``fft_c2c``: complex -> complex over ``dims`` (forward or inverse);
* ``fft_r2c``: real -> complex, the last of ``dims`` halved to n // 2 + 1 (onesided);
* ``fft_c2r``: complex half-spectrum -> real, the last of ``dims`` of length ``last_n``.

``norm`` is PyTorch's: "backward" scales the inverse by 1/n, "forward" the forward transform,
"ortho" both by 1/sqrt(n). Every transform of ``ember.fft`` is one of them after its input is
cropped or zero-padded to the requested sizes (ember ops, so that part differentiates too).

Derivative rules (PyTorch's convention for complex gradients): each transform is linear, so the
jvp applies the same transform to the tangent, and the vjp applies the adjoint, which is the
opposite transform with the dual normalisation ("backward" <-> "forward"): c2c's adjoint is c2c in
the other direction; r2c's is the zero-padded full spectrum sent through the inverse c2c (real
part); c2r's is r2c of the gradient with the bins that stand for two (all but DC and Nyquist)
doubled.
"""
import numpy as np
import scipy.fft as _sfft

from .. import _dispatch as D
from .. import _dtype as dt
from .._dispatch import defop, dispatch
from . import _util as U
from ._batching import _shift

FFT = "fft"
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _check_norm(norm):
    if norm is None:
        return "backward"
    if norm not in _DUAL:
        raise RuntimeError(f"Invalid normalization mode: \"{norm}\"")
    return norm


def _float_input(name, a, complex_ok=True):
    """The array in a floating/complex dtype PyTorch's CPU FFT accepts (integers: the default dtype)."""
    k = a.dtype.kind
    if k in "iub":
        return a.astype(dt.get_default_dtype().np)
    if a.dtype == np.float16:
        raise RuntimeError(f"{name}: Unsupported dtype Half")
    if k == "c" and not complex_ok:
        raise RuntimeError(f"{name} expects a real input tensor, but got {dt.FROM_NP[a.dtype].name}")
    return a


def _c2c_impl(xp, a, dims, forward, norm):
    a = _float_input("fft_c2c", a)
    if not len(dims):
        return a.astype(np.result_type(a.dtype, np.complex64))
    if len(dims) == 1:  # (the 1-d entry points skip the n-d argument handling)
        return (_sfft.fft if forward else _sfft.ifft)(a, axis=dims[0], norm=norm)
    return (_sfft.fftn if forward else _sfft.ifftn)(a, axes=dims, norm=norm)


def _r2c_impl(xp, a, dims, norm):
    a = _float_input("fft_r2c", a, complex_ok=False)
    if len(dims) == 1:
        return _sfft.rfft(a, axis=dims[0], norm=norm)
    return _sfft.rfftn(a, axes=dims, norm=norm)


def _c2r_impl(xp, a, dims, norm, last_n):
    a = _float_input("fft_c2r", a)
    if a.dtype.kind != "c":
        a = a.astype(dt.FROM_NP[a.dtype].to_complex().np)
    if len(dims) == 1:
        return _sfft.irfft(a, n=last_n, axis=dims[0], norm=norm)
    s = [a.shape[d] for d in dims[:-1]] + [last_n]
    return _sfft.irfftn(a, s=s, axes=dims, norm=norm)


c2c_op = defop("fft_c2c", _c2c_impl, family=FFT)
r2c_op = defop("fft_r2c", _r2c_impl, save=("shapes",), family=FFT)
c2r_op = defop("fft_c2r", _c2r_impl, family=FFT)


@c2c_op.def_vjp
def _(ctx, g):
    p = ctx.params
    return dispatch(c2c_op, (g,), {"dims": p["dims"], "forward": not p["forward"], "norm": _DUAL[p["norm"]]})


c2c_op.jvp = lambda ctx, t: dispatch(c2c_op, (t,), ctx.params)


def _pad_dim(x, dim, size):
    """x zero-padded (or cropped) at the end of ``dim`` to ``size``."""
    n = x._data.shape[dim]
    if n == size:
        return x
    from .shape import constant_pad
    pad = [0, 0] * (x.dim() - 1 - dim) + [0, size - n]
    return constant_pad(x, pad)


@r2c_op.def_vjp
def _(ctx, g):
    p = ctx.params
    dims = p["dims"]
    last = dims[-1]
    full = _pad_dim(g, last, ctx.shapes[0][last])
    r = dispatch(c2c_op, (full,), {"dims": dims, "forward": False, "norm": _DUAL[p["norm"]]})
    from .complex import real
    return real(r)


r2c_op.jvp = lambda ctx, t: dispatch(r2c_op, (t,), ctx.params)


def _half_weights(n, m, like):
    """The weights of the onesided bins of a length-n real signal (m = n // 2 + 1 stored): 1 for DC
    and (n even) Nyquist, 2 for the others, which stand for a bin and its mirror image."""
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0 and m > 1:
        w[-1] = 1.0
    from .._creation import tensor
    return tensor(w, dtype=like.dtype.to_real())


@c2r_op.def_vjp
def _(ctx, g):
    p = ctx.params
    dims = p["dims"]
    r = dispatch(r2c_op, (g,), {"dims": dims, "norm": _DUAL[p["norm"]]})
    n = p["last_n"]
    w = _half_weights(n, r.shape[dims[-1]], r)
    shape = [1] * r.dim()
    shape[dims[-1]] = w.shape[0]
    return r * w.reshape(shape)


c2r_op.jvp = lambda ctx, t: dispatch(c2r_op, (t,), ctx.params)


def _fft_batch(op, vals, bd, params, size):
    p = dict(params)
    p["dims"] = tuple(_shift(tuple(params["dims"])))
    return dispatch(op, tuple(vals), p), True


for _op in (c2c_op, r2c_op, c2r_op):
    _op.batch = _fft_batch


# ----------------------------------------------------------------------------- the public functions


def _dims_and_sizes(name, x, s, dim, default_all):
    """PyTorch's rules for (s, dim): the transformed dims (wrapped, in order) and their sizes
    (None where the input's size stands)."""
    shape = x._data.shape  # (the array's shape: Size indexing costs a Python call per item)
    nd = len(shape)
    if dim is not None:
        if isinstance(dim, int):
            dim = (dim,)
        if nd == 0 and dim:
            raise IndexError(f"{name}: Dimension specified as {dim[0]} but tensor has no dimensions")
        dims = tuple(U.wrap_dim(d, nd, name) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{name}: dims must be unique (got {list(dim)})")
        if s is not None:
            s = tuple(s)
            if len(s) != len(dims):
                raise RuntimeError(f"{name}: When given, dim and shape arguments must have the same length "
                                   f"(got s={list(s)}, dim={list(dim)})")
    elif s is not None:
        s = tuple(s)
        if len(s) > nd:
            raise RuntimeError(f"{name}: Got shape with {len(s)} values but input tensor only has {nd} "
                               f"dimensions.")
        dims = tuple(range(nd - len(s), nd))
    else:
        dims = tuple(range(nd)) if default_all else ()
    sizes = list(s) if s is not None else [None] * len(dims)
    for v in sizes:
        if v is not None and v != -1 and v < 1:
            raise RuntimeError(f"{name}: Invalid number of data points ({v}) specified")
    sizes = [None if v == -1 else v for v in sizes]
    for d, v in zip(dims, sizes):
        if v is None and shape[d] < 1:
            raise RuntimeError(f"{name}: Invalid number of data points ({shape[d]}) specified (input of shape "
                               f"{list(shape)}, dim {d})")
    return dims, sizes


def _resize(x, dims, sizes):
    for d, n in zip(dims, sizes):
        if n is not None and n != x._data.shape[d]:
            x = _pad_dim(x, d, n)
    return x


def _as_input(name, x, real=False):
    if not U.is_tensor(x):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    k = x._data.dtype.kind
    if real and k == "c":
        raise RuntimeError(f"{name} expects a real input tensor, but got {x.dtype.name}")
    if k in "iub":
        x = x.to(dt.get_default_dtype())
    elif x._data.dtype == np.float16:
        raise RuntimeError(f"{name}: Unsupported dtype Half")
    return x


def _c2c(name, x, s, dim, norm, forward, default_all=True):
    norm = _check_norm(norm)
    x = _as_input(name, x)
    dims, sizes = _dims_and_sizes(name, x, s, dim, default_all)
    x = _resize(x, dims, sizes)
    if not x.is_complex():
        x = x.to(x.dtype.to_complex())
    return dispatch(c2c_op, (x,), {"dims": dims, "forward": forward, "norm": norm})


def _r2c(name, x, s, dim, norm, forward=True, default_all=True):
    """rfftn (forward) or ihfftn (not forward: the conjugate of rfftn with the dual norm)."""
    norm = _check_norm(norm)
    x = _as_input(name, x, real=True)
    if x.dtype is U.dt.bfloat16:  # (PyTorch's CPU FFTs take float16 but not bfloat16)
        raise RuntimeError("Unsupported dtype BFloat16")
    dims, sizes = _dims_and_sizes(name, x, s, dim, default_all)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = _resize(x, dims, sizes)
    r = dispatch(r2c_op, (x,), {"dims": dims, "norm": norm if forward else _DUAL[norm]})
    if not forward:
        from .complex import conj
        r = conj(r)
    return r


def _c2r(name, x, s, dim, norm, forward=False, default_all=True):
    """irfftn (not forward) or hfftn (forward: irfftn of the conjugate with the dual norm)."""
    norm = _check_norm(norm)
    x = _as_input(name, x)
    dims, sizes = _dims_and_sizes(name, x, s, dim, default_all)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = dims[-1]
    last_n = sizes[-1] if sizes[-1] is not None else 2 * (x._data.shape[last] - 1)
    if last_n < 1:
        raise RuntimeError(f"{name}: Invalid number of data points ({last_n}) specified")
    x = _resize(x, dims, sizes[:-1] + [last_n // 2 + 1])
    if not x.is_complex():
        x = x.to(x.dtype.to_complex())
    if forward:
        from .complex import conj
        x = conj(x)
    return dispatch(c2r_op, (x,), {"dims": dims, "norm": _DUAL[norm] if forward else norm, "last_n": last_n})


def _one(n):
    return None if n is None else (n,)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    return U.write_out(_c2c("fft.fft", input, _one(n), dim, norm, True), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    return U.write_out(_c2c("fft.ifft", input, _one(n), dim, norm, False), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return U.write_out(_c2c("fft.fft2", input, s, dim, norm, True), out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return U.write_out(_c2c("fft.ifft2", input, s, dim, norm, False), out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    return U.write_out(_c2c("fft.fftn", input, s, dim, norm, True), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    return U.write_out(_c2c("fft.ifftn", input, s, dim, norm, False), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    return U.write_out(_r2c("fft.rfft", input, _one(n), dim, norm), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    return U.write_out(_c2r("fft.irfft", input, _one(n), dim, norm), out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return U.write_out(_r2c("fft.rfft2", input, s, dim, norm), out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return U.write_out(_c2r("fft.irfft2", input, s, dim, norm), out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    return U.write_out(_r2c("fft.rfftn", input, s, dim, norm), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    return U.write_out(_c2r("fft.irfftn", input, s, dim, norm), out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    return U.write_out(_c2r("fft.hfft", input, _one(n), dim, norm, forward=True), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    return U.write_out(_r2c("fft.ihfft", input, _one(n), dim, norm, forward=False), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return U.write_out(_c2r("fft.hfft2", input, s, dim, norm, forward=True), out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return U.write_out(_r2c("fft.ihfft2", input, s, dim, norm, forward=False), out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    return U.write_out(_c2r("fft.hfftn", input, s, dim, norm, forward=True), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    return U.write_out(_r2c("fft.ihfftn", input, s, dim, norm, forward=False), out)


def _freq(name, k, n, d, dtype, requires_grad):
    if n < 0:
        raise RuntimeError(f"{name}: Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = dtype or dt.get_default_dtype()
    with np.errstate(invalid="ignore", divide="ignore"):  # (rfftfreq(0) is [nan], as PyTorch's)
        r = D._new_tensor(np.asarray(k / (n * d), dtype=np.float64).astype(dtype.np))
    if requires_grad:
        r.requires_grad_(True)
    return r


def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)"""
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]) if n > 0 else np.zeros(0)
    return _freq("fft.fftfreq", k, n, d, dtype, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """[0, 1, ..., n // 2] / (d * n)"""
    k = np.arange(0, n // 2 + 1) if n >= 0 else np.zeros(0)
    return _freq("fft.rfftfreq", k, n, d, dtype, requires_grad)


def _shift_dims(x, dim):
    if dim is None:
        return tuple(range(x.dim()))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(U.wrap_dim(d, x.dim(), "fftshift") for d in dim)


def _no_dims(name, input, dims):
    if not dims:  # (PyTorch's roll without shifts)
        raise RuntimeError(f"{name}: `shifts` required (no dims to shift in a tensor of shape "
                           f"{list(input.shape)})")
    return False


def fftshift(input, dim=None):
    dims = _shift_dims(input, dim)
    if _no_dims("fft.fftshift", input, dims):
        return input.clone()
    return input.roll(tuple(input.shape[d] // 2 for d in dims), dims)


def ifftshift(input, dim=None):
    dims = _shift_dims(input, dim)
    if _no_dims("fft.ifftshift", input, dims):
        return input.clone()
    return input.roll(tuple((input.shape[d] + 1) // 2 for d in dims), dims)


__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
           "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]
