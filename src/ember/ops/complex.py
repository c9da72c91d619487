"""Complex-number primitives: real/imag and view_as_real/view_as_complex (views), complex(),
conj_physical, angle, sgn; and the functions around them (conj, polar, isreal, ...).

Autograd follows PyTorch's convention: for a real loss L of a complex z = x + iy, the gradient is
dL/dx + i dL/dy (twice the conjugate Wirtinger derivative dL/dz*), so gradient descent works
unchanged. A holomorphic f has vjp ``g * conj(f'(z))`` and jvp ``t * f'(z)``; a real input of a
complex result gets the real part of its gradient (the autograd engine does that).

PyTorch's lazy conjugate bit is not modelled: ``conj()`` of a complex tensor is an eager copy
(``conj_physical``), so ``is_conj()`` is always False and ``resolve_conj()`` returns its input.
Values and gradients are the same; the difference shows only when writing into ``z.conj()`` in
place, which in PyTorch writes through to ``z``.
"""
import numpy as np

from .. import _dispatch as D
from .. import _dtype as dt
from .._dispatch import defop, dispatch
from . import _util as U
from ._batching import elementwise_rule

EW = "elementwise"
_nd = np.ndarray
_pycomplex = complex  # (the public ``complex`` below shadows the builtin)


def not_for_complex(kernel, a):
    """PyTorch's error for a kernel without a complex implementation."""
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{U.torch_scalar_name(a.dtype)}'")


def is_complex_t(x):
    """Is x a complex tensor or a Python complex number?"""
    if type(x) is _pycomplex:
        return True
    return isinstance(x, D.Tensor) and x._data.dtype.kind == "c"


def cj(x):
    """conj(x) for complex tensors and numbers; x itself otherwise (the rules' helper)."""
    if type(x) is _pycomplex:
        return x.conjugate()
    if isinstance(x, D.Tensor) and x._data.dtype.kind == "c":
        return dispatch(conj_physical_op, (x,))
    return x


def _view(a, shape, strides, dtype, offset=0):
    """An ndarray of ``dtype`` over ``a``'s memory (any strides), keeping ``a`` alive."""
    class _Holder:
        pass
    h = _Holder()
    h.keep = a
    h.__array_interface__ = {"shape": tuple(shape), "typestr": np.dtype(dtype).str, "version": 3,
                             "data": (a.__array_interface__["data"][0] + offset, not a.flags.writeable),
                             "strides": tuple(strides)}
    return np.asarray(h)


# ----------------------------------------------------------------------------- real / imag (views)


def _real_impl(xp, a):
    if a.dtype.kind != "c":
        return a
    return a.real


def _imag_impl(xp, a):
    if a.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return a.imag


real_op = defop("real", _real_impl, view=True, family=EW)
imag_op = defop("imag", _imag_impl, view=True, family=EW)
real_op.vjp = lambda ctx, g: g.to(g.dtype.to_complex())
real_op.jvp = lambda ctx, t: dispatch(real_op, (t,))
imag_op.vjp = lambda ctx, g: g * 1j
imag_op.jvp = lambda ctx, t: dispatch(imag_op, (t,))


def real(input):
    if not input.is_complex():
        return input
    return dispatch(real_op, (input,))


def imag(input):
    return dispatch(imag_op, (input,))


# ----------------------------------------------------------------------------- view_as_real / view_as_complex


def _view_as_real_impl(xp, a):
    if a.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    r = a.real
    return np.lib.stride_tricks.as_strided(r, a.shape + (2,), r.strides + (r.itemsize,),
                                           writeable=a.flags.writeable)


def _view_as_complex_impl(xp, a):
    if a.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor "
                           f"of scalar type: {U.torch_scalar_name(a.dtype)} ({a.dtype})")
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    isz = a.itemsize
    if a.strides[-1] != isz:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any((s // isz) % 2 for s, n in zip(a.strides[:-1], a.shape[:-1]) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    cdt = np.complex64 if a.dtype == np.float32 else np.complex128
    return _view(a, a.shape[:-1], a.strides[:-1], cdt)


view_as_real_op = defop("view_as_real", _view_as_real_impl, view=True, family=EW)
view_as_complex_op = defop("view_as_complex", _view_as_complex_impl, view=True, family=EW)
view_as_real_op.vjp = lambda ctx, g: complex(g.select(-1, 0), g.select(-1, 1))
view_as_real_op.jvp = lambda ctx, t: dispatch(view_as_real_op, (t,))
view_as_complex_op.vjp = lambda ctx, g: dispatch(view_as_real_op, (g,))
view_as_complex_op.jvp = lambda ctx, t: complex(t.select(-1, 0), t.select(-1, 1))


def view_as_real(input):
    return dispatch(view_as_real_op, (input,))


def view_as_complex(input):
    return dispatch(view_as_complex_op, (input,))


def _last_dim_rule(op, vals, bd, params, size):
    # the batch dim is first and the op acts on the last: an unbatched input needs nothing
    return dispatch(op, tuple(vals), params), True


view_as_real_op.batch = view_as_complex_op.batch = _last_dim_rule


# ----------------------------------------------------------------------------- complex(), conj, angle, sgn


def _complex_impl(xp, re, im):
    if re.dtype != im.dtype:
        raise RuntimeError(f"Expected object of scalar type {U.torch_scalar_name(re.dtype)} but got scalar type "
                           f"{U.torch_scalar_name(im.dtype)} for second argument ({re.dtype} and {im.dtype})")
    if re.dtype.kind != "f":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{U.torch_scalar_name(re.dtype)} and {U.torch_scalar_name(im.dtype)} "
                           f"({re.dtype} and {im.dtype})")
    cdt = dt.FROM_NP[re.dtype].to_complex().np
    try:
        shape = np.broadcast_shapes(re.shape, im.shape)
    except ValueError:
        raise U.broadcast_error("complex", re, im) from None
    out = np.empty(shape, cdt)
    out.real = re
    out.imag = im
    return out


complex_op = defop("complex", _complex_impl, bcast=True, family=EW)


@complex_op.def_vjp
def _(ctx, g):
    n = ctx.needs
    return (dispatch(real_op, (g,)) if n[0] else None), (dispatch(imag_op, (g,)) if n[1] else None)


@complex_op.def_jvp
def _(ctx, tr, ti):
    if ti is None:
        return tr.to(tr.dtype.to_complex())
    if tr is None:
        return ti * 1j
    return dispatch(complex_op, (tr, ti))


def complex(real, imag, *, out=None):
    return U.write_out(dispatch(complex_op, (real, imag)), out)


conj_physical_op = defop("conj_physical", lambda xp, a: xp.conjugate(a) if a.dtype.kind == "c" else a.copy(),
                         family=EW)
conj_physical_op.vjp = lambda ctx, g: dispatch(conj_physical_op, (g,))
conj_physical_op.jvp = lambda ctx, t: dispatch(conj_physical_op, (t,))


def conj_physical(input):
    return dispatch(conj_physical_op, (input,))


def conj(input):
    """The complex conjugate; a real tensor is returned as is (PyTorch's conj is then a no-op view)."""
    if input._data.dtype.kind != "c":
        return input
    return dispatch(conj_physical_op, (input,))


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


def is_conj(input):
    return False


def is_neg(input):
    return False


def _angle_impl(xp, a):
    if a.dtype.kind == "c":
        return xp.angle(a)
    a = U.to_float(a)
    r = xp.where(a < 0, np.pi, 0.0).astype(a.dtype)
    return xp.where(xp.isnan(a), a, r)


angle_op = defop("angle", _angle_impl, save=("inputs",), family=EW)


def _safe_abs2(z):
    a2 = dispatch(real_op, (z,)) ** 2 + dispatch(imag_op, (z,)) ** 2
    return a2, a2 == 0


@angle_op.def_vjp
def _(ctx, g):
    z = ctx.inputs[0]
    if not z.is_complex():
        return g * 0
    # dθ/dx = -y/|z|², dθ/dy = x/|z|²: the gradient g (-y + ix)/|z|² = g i z / |z|² (0 at z = 0)
    a2, zero = _safe_abs2(z)
    from .elementwise import where
    return where(zero, 0.0, g * 1j * z / where(zero, 1.0, a2))


@angle_op.def_jvp
def _(ctx, t):
    z = ctx.inputs[0]
    if not z.is_complex():
        return t * 0
    a2, zero = _safe_abs2(z)
    from .elementwise import where
    return where(zero, 0.0, dispatch(imag_op, (cj(z) * t,)) / where(zero, 1.0, a2))


def angle(input):
    return dispatch(angle_op, (input,))


def _sgn_impl(xp, a):
    if a.dtype.kind != "c":
        return xp.sign(a) if a.dtype.kind != "b" else a.copy()
    r = xp.abs(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = a / xp.where(r == 0, 1, r)
    return s


sgn_op = defop("sgn", _sgn_impl, save=("inputs", "out"), family=EW)


def _sgn_lin(ctx, v, adjoint):
    z = ctx.inputs[0]
    if not z.is_complex():
        return v * 0
    s = ctx.out
    r = z.abs()
    from .elementwise import where
    c = dispatch(real_op, ((v * cj(s)) if adjoint else (cj(s) * v),))
    return where(r == 0, 0.0, (v - c * s) / where(r == 0, 1.0, r))


sgn_op.vjp = lambda ctx, g: _sgn_lin(ctx, g, True)
sgn_op.jvp = lambda ctx, t: _sgn_lin(ctx, t, False)


def sgn(input):
    if input._data.dtype.kind != "c":
        from .elementwise import sign
        return sign(input)
    return dispatch(sgn_op, (input,))


# ----------------------------------------------------------------------------- composites


def polar(abs, angle, *, out=None):
    U.no_lowp("polar_cpu", abs, angle)
    if abs.dtype is not angle.dtype:
        raise RuntimeError(f"Expected object of scalar type {U.torch_scalar_name(abs._data)} but got scalar type "
                           f"{U.torch_scalar_name(angle._data.dtype)} for second argument")
    return U.write_out(complex(abs * angle.cos(), abs * angle.sin()), out)


def isreal(input):
    if input._data.dtype.kind != "c":
        from .._creation import ones_like
        from .. import _dtype
        return ones_like(input, dtype=_dtype.bool_)
    return dispatch(imag_op, (input,)) == 0


def is_complex(input):
    return input.is_complex()


for _op in (real_op, imag_op, complex_op, conj_physical_op, angle_op, sgn_op):
    _op.batch = elementwise_rule

__all__ = ["real", "imag", "view_as_real", "view_as_complex", "complex", "conj", "conj_physical",
           "resolve_conj", "resolve_neg", "is_conj", "is_neg", "angle", "sgn", "polar", "isreal", "is_complex"]
