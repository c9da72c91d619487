"""In-place ops: one mechanism for all of them.

``x.op_(...)`` computes ``op(x, ...)`` and writes the result into x's memory, bumping the
version counter that x shares with its views. Without autograd or transforms it writes
directly (ufunc ``out=``). With autograd the out-of-place op is recorded (on a clone of x
when its rule needs x's old value) and x takes over the result's history; when x is a view,
its base gets a CopySlices node so gradients flow to the rest of the base as well.
"""
import numpy as np

from .. import _dispatch as D
from .. import _dtype as dt
from .. import _parallel as _P
from .._dispatch import defop, dispatch
from . import _util as U


def _check(self, name):
    gm = D.grad_mode
    if self._inference and not gm.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed. "
                           "You can make a clone to get a normal tensor before doing inplace update.")
    if gm.enabled:
        if self._rg and self._fn is None:
            raise RuntimeError(f"a leaf Variable that requires grad is being used in an in-place "
                               f"operation ({name}).")
        base = self._base
        if self._rg and base is not None and base._rg and base._fn is None:  # (detached: no)
            raise RuntimeError(f"a view of a leaf Variable that requires grad is being used in an "
                               f"in-place operation ({name}).")
    if self._meta:
        return


def _write(self, r, name):
    """Copy the result array r into self's memory, by PyTorch's casting and shape rules."""
    dst = self._data
    if r.shape != dst.shape:
        try:
            bs = np.broadcast_shapes(r.shape, dst.shape)
        except ValueError:
            bs = r.shape
        if bs != dst.shape:
            raise RuntimeError(f"{name}: output with shape {list(dst.shape)} doesn't match the broadcast "
                               f"shape {list(bs)}")
    rd = dt.FROM_NP.get(r.dtype)
    sd = dt.FROM_NP[dst.dtype]
    if rd is not None and not dt.can_cast(rd, sd):
        raise RuntimeError(f"{name}: result type {rd.name.capitalize()} can't be cast to the desired "
                           f"output type {sd.name.capitalize()}")
    if self._meta:      # no data to write (shapes and dtypes were checked)
        return
    try:
        np.copyto(dst, r, casting="unsafe")
    except ValueError as e:
        if not dst.flags.writeable:
            raise RuntimeError(f"{name}: unsupported operation: more than one element of the written-to "
                               f"tensor refers to a single memory location. Please clone() the tensor "
                               f"before performing the operation.") from None
        raise RuntimeError(f"{name}: {e}") from None


def inplace_apply(op, self, others, params, name):
    """self <- op(self, *others, **params), in place; returns self."""
    _check(self, name)
    gm = D.grad_mode
    if self._meta and not (gm.enabled and (self._rg or any(isinstance(o, D.Tensor) and o._rg for o in others))):
        # no data to write and no history to take: check what the op would produce, keep self
        r = D._meta_eval(op, (self,) + tuple(others), params)
        r = r[0] if isinstance(r, tuple) else r
        if np.broadcast_shapes(tuple(r.shape), tuple(self.shape)) != tuple(self.shape):
            raise RuntimeError(f"{name}: output with shape {list(self.shape)} doesn't match the broadcast "
                               f"shape {list(np.broadcast_shapes(tuple(r.shape), tuple(self.shape)))}")
        self._bump(name)
        return self
    gm = D.grad_mode
    Tensor = D.Tensor
    rg = gm.enabled and (self._rg or any(isinstance(o, Tensor) and o._rg for o in others))
    if not rg and D.state.simple:
        arrs = [o._data if isinstance(o, Tensor) else o for o in others]
        fast = getattr(op, "inplace_fast", None)
        dst = self._data
        try:
            if fast is not None and not params and dst.dtype is not U.BF16:  # (bfloat16: the op's own
                try:                                                           #  float32-and-round rules)
                    fast(dst, *arrs)
                except OverflowError:  # a Python int outside self's dtype: wrapped around, as PyTorch does
                    fast(dst, U.wrap_int_scalars(dst, arrs[0])[1])
                except (TypeError, ValueError):  # casting or broadcasting: let the checked path explain
                    r = op.impl(D.xp, dst, *arrs, **params)
                    _write(self, np.asarray(r), name)
            else:
                r = op.impl(D.xp, dst, *arrs, **params)
                _write(self, np.asarray(r), name)
        except Exception as e:
            raise D.op_error(op, e, (self,) + tuple(others), name) from D._cause(e)
        self._bump(name)
        return self
    src = self
    if rg and "inputs" in op.save:
        from .shape import clone
        src = clone(self)  # the rule reads self's old value, which the write destroys
    r = dispatch(op, (src,) + tuple(others), params)
    if r.dtype is not self.dtype:
        if not dt.can_cast(r.dtype, self.dtype):
            raise RuntimeError(f"{name}: result type {r.dtype.name.capitalize()} can't be cast to the "
                               f"desired output type {self.dtype.name.capitalize()}")
        r = r.to(self.dtype)
    if tuple(r.shape) != tuple(self.shape):
        if np.broadcast_shapes(tuple(r.shape), tuple(self.shape)) != tuple(self.shape):
            raise RuntimeError(f"{name}: output with shape {list(self.shape)} doesn't match the broadcast "
                               f"shape {list(np.broadcast_shapes(tuple(r.shape), tuple(self.shape)))}")
        r = r.expand(self.shape)
    _commit(self, r, name)
    return self


def _commit(self, r, name):
    """Write r's values into self and give self r's autograd/forward-mode history."""
    if self._wr is not None or r._wr is not None:
        return _commit_wrapped(self, r, name)
    _write(self, r._data, name)
    self._bump(name)
    if r._rg:
        if self._base is not None:
            _rebase_view(self, r)
        else:
            self._fn, self._nr, self._rg = r._fn, r._nr, True
    if r._fw or self._fw:
        _commit_tangents(self, r)


def _commit_tangents(self, r):
    """Forward mode: self's tangents become r's. A view's tangent is a view of its base's tangent,
    so the write goes into that memory and the base sees it (as PyTorch's forward AD does)."""
    rf = r._fw or {}
    sf = dict(self._fw or {})
    base = self._base
    for lvl in set(rf) | set(sf):
        if not lvl.alive:
            sf.pop(lvl, None)
            continue
        rt = rf.get(lvl)
        if base is None:
            if rt is None:
                sf.pop(lvl, None)
            else:
                sf[lvl] = rt
            continue
        st = sf.get(lvl)
        if st is None:
            bt = base._fw.get(lvl) if base._fw else None
            if bt is None:
                from .._creation import zeros_like
                bt = zeros_like(base)
                base._fw = {**(base._fw or {}), lvl: bt}
            if bt.stride() != base.stride():
                raise NotImplementedError("forward AD: in-place write into a view whose base's tangent has "
                                          "another memory layout is not supported; clone the base first")
            st = bt.as_strided(tuple(self.shape), self.stride(), self.storage_offset())
            sf[lvl] = st
        prev = lvl.active
        lvl.active = False
        try:
            if rt is None:
                st.zero_()
            else:
                st.copy_(rt)
        finally:
            lvl.active = prev
    self._fw = sf or None


def _commit_wrapped(self, r, name):
    """In place on a transform wrapper (vmap / func.grad level): the write goes to the wrapped
    value one level down, and self takes r's history at its own level."""
    lv, rl = self._wr, r._wr
    if rl is not None and (lv is None or rl.index > lv.index):
        kind = getattr(rl, "kind", "transform")
        raise RuntimeError(f"{name}: an in-place operation would write a value that varies at a "
                           f"{kind} level into a tensor that does not take part in it (e.g. a batched "
                           f"value into an unbatched tensor inside vmap); use the out-of-place op")
    rebase = None
    if rl is lv and r._rg and self._base is not None:
        hook = getattr(lv, "rebase_view", None)  # a view written in place: its base's history too
        if hook is not None:
            rebase = hook(self, r)
    self._val.copy_(r._val if rl is lv else r)
    self._bump(name)
    if rebase is not None:
        rebase()
    elif rl is lv and r._rg:
        self._fn, self._nr, self._rg = r._fn, r._nr, True
    if r._fw is not None:
        self._fw = r._fw


def _rebase_view(view, r):
    """view (of base) now holds r: base's history becomes CopySlices(base, r), and view's becomes a
    strided view of the new base."""
    from ..autograd.graph import record
    from .shape import as_strided_scatter_op, as_strided_op
    base = view._base
    if not base._data.flags.c_contiguous:
        base_c = base.contiguous()
        if base_c is not base:
            raise NotImplementedError("in-place ops with autograd on views of non-contiguous tensors are "
                                      "not supported in ember; clone the base first")
    geo = {"size": tuple(view.shape), "stride": view.stride(), "offset": view.storage_offset()}
    holder = record(as_strided_scatter_op, (base, r), geo, base._data)
    base._fn, base._nr, base._rg = holder._fn, 0, True
    vh = record(as_strided_op, (base,), geo, view._data)
    view._fn, view._nr, view._rg = vh._fn, 0, True


# ----------------------------------------------------------------------------- ops only used in place


def _copy_impl(xp, a, src):
    if not isinstance(src, np.ndarray):
        src = np.asarray(src)
    try:
        return xp.broadcast_to(src, a.shape).astype(a.dtype, copy=True)
    except ValueError:
        raise RuntimeError(f"copy_: the size of src {list(src.shape)} must be broadcastable to the "
                           f"destination of shape {list(a.shape)}") from None


copy_op = defop("copy", _copy_impl, save=("shapes",), family="elementwise", node_name="CopyBackwards")


@copy_op.def_vjp
def _(ctx, g):
    from .shape import sum_to
    gs = None
    if ctx.needs[1]:
        gs = sum_to(g, ctx.shapes[1])
    return (g * 0 if ctx.needs[0] else None), gs


copy_op.jvp = lambda ctx, ta, ts: (ts.expand(ctx.out.shape) if ts is not None else ctx.out * 0)
copy_op.inplace_fast = lambda dst, src: np.copyto(dst, src, casting="unsafe")

fill_op = defop("fill", lambda xp, a, value: xp.full_like(a, U.real_scalar(value, a.dtype)), family="elementwise")
fill_op.vjp = lambda ctx, g: (g * 0,) + ((g.sum(),) if len(ctx.needs) > 1 else ())
fill_op.jvp = lambda ctx, t, *rest: t * 0


def _fill_tensor_impl(xp, a, value):
    return xp.full_like(a, value)


fill_t_op = defop("fill_tensor", _fill_tensor_impl, family="elementwise", node_name="FillBackward1")
fill_t_op.vjp = lambda ctx, g: (g * 0, g.sum())
fill_t_op.jvp = lambda ctx, t, tv: (tv.expand(ctx.out.shape) if tv is not None else ctx.out * 0)


def _set_ufunc_fast():
    from . import elementwise as E
    for op in (E.add_op, E.sub_op, E.mul_op):
        uf = op.impl.ufunc
        op.inplace_fast = (lambda u: lambda dst, b: u(dst, b, out=dst, casting="same_kind") if dst.size < _P.MIN_SIZE
                           else _P.ufunc(u, dst, b, out=dst, casting="same_kind"))(uf)


_set_ufunc_fast()


# ----------------------------------------------------------------------------- the methods


def add_(self, other, *, alpha=1):
    from .elementwise import add_op
    return inplace_apply(add_op, self, (other if alpha == 1 else other * alpha,), {}, "add_")


def sub_(self, other, *, alpha=1):
    from .elementwise import sub_op
    return inplace_apply(sub_op, self, (other if alpha == 1 else other * alpha,), {}, "sub_")


def mul_(self, other):
    from .elementwise import mul_op
    return inplace_apply(mul_op, self, (other,), {}, "mul_")


def div_(self, other, *, rounding_mode=None):
    from .elementwise import div_op
    return inplace_apply(div_op, self, (other,), {} if rounding_mode is None else
                         {"rounding_mode": rounding_mode}, "div_")


def pow_(self, exponent):
    from .elementwise import pow_op
    return inplace_apply(pow_op, self, (exponent,), {}, "pow_")


def copy_(self, src, non_blocking=False):
    if not U.is_tensor(src):
        src = D._new_tensor(np.asarray(src))
    return inplace_apply(copy_op, self, (src,), {}, "copy_")


def fill_(self, value):
    if U.is_tensor(value):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        return inplace_apply(fill_t_op, self, (value,), {}, "fill_")
    return inplace_apply(fill_op, self, (), {"value": value}, "fill_")


def zero_(self):
    return inplace_apply(fill_op, self, (), {"value": 0}, "zero_")


def _inplace_via(self, fn, call, name):
    """In place through a public function (clamp_, relu_, ...): the function's op is recorded
    like any in-place op."""
    args, kwargs = call
    _check(self, name)
    gm = D.grad_mode
    if not (gm.enabled and self._rg) and D.state.simple:
        with _NoGrad():
            r = fn(self, *args, **kwargs)
        _write(self, r._data, name)
        self._bump(name)
        return self
    from .shape import clone
    r = fn(clone(self) if gm.enabled and self._rg else self, *args, **kwargs)
    if r.dtype is not self.dtype:
        r = r.to(self.dtype)
    _commit(self, r, name)
    return self


class _NoGrad:
    def __enter__(self):
        self.prev = D.grad_mode.enabled
        D.grad_mode.enabled = False

    def __exit__(self, *a):
        D.grad_mode.enabled = self.prev


INPLACE_VIA = ("clamp", "clamp_min", "clamp_max", "clip", "relu", "sigmoid", "tanh", "exp", "log",
               "neg", "abs", "sqrt", "rsqrt", "floor", "ceil", "round", "trunc", "sin", "cos",
               "reciprocal", "sign", "masked_fill", "scatter", "scatter_add", "index_add",
               "index_fill", "addcmul", "addcdiv", "lerp", "log1p", "expm1", "square", "fmod",
               "remainder", "erf", "leaky_relu", "hardtanh", "elu", "silu", "gelu", "tril", "triu",
               "nan_to_num", "frac", "logical_not", "exp2", "log2", "atan2", "maximum", "minimum",
               "floor_divide", "sigmoid", "where",
               # the rest of PyTorch's in-place twins of value-preserving ops (cumsum_, tan_, eq_, addmm_, ...)
               "cumsum", "cumprod", "tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "atanh",
               "arcsin", "arccos", "arctan", "arcsinh", "arctanh", "arctan2", "log10", "erfinv", "hypot",
               "logit", "xlogy", "sgn", "fix", "negative", "absolute", "divide", "bitwise_and", "bitwise_or",
               "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "logical_and",
               "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal",
               "less", "less_equal", "not_equal", "addmm", "addmv", "addbmm", "baddbmm", "addr", "index_copy")


def masked_scatter_(self, mask, source):
    from .indexing import masked_scatter
    return _inplace_via(self, lambda s: masked_scatter(s, mask, source), ((), {}), "masked_scatter_")


def fill_diagonal_(self, fill_value, wrap=False):
    n = min(self.shape)
    idx = np.arange(n)
    spec = tuple(idx for _ in range(self.dim()))
    if wrap and self.dim() == 2 and self.shape[0] > self.shape[1] + 1:
        # a tall matrix: the diagonal starts again every (cols + 1) rows (PyTorch's wrap=True)
        cols = self.shape[1]
        flat = np.arange(0, self.shape[0] * cols, cols + 1)
        spec = (flat // cols, flat % cols)
    from .indexing import index_put_op
    return inplace_apply(index_put_op, self, (D._new_tensor(np.asarray(fill_value, self._data.dtype)),),
                         {"spec": spec}, "fill_diagonal_")


# random fills: PyTorch's CPU samplers on its streams (ember._cpu_rng), elements in PyTorch's
# iteration order; written through copy_ (no gradient to self)

def _draw_like(self, make):
    """An array laid out like self filled in PyTorch's iteration order with make(n) values. A complex
    tensor is filled through its real view, as PyTorch fills it: 2n values of the real dtype,
    real and imaginary parts interleaved (``make`` then draws for the real dtype)."""
    a = self._data
    if a.dtype.kind == "c":
        rd = a.real.dtype
        real_make = make
        make = lambda n: np.ascontiguousarray(real_make(2 * n), rd).view(a.dtype)  # noqa: E731
    if a.flags.c_contiguous:
        return make(a.size).reshape(a.shape)
    from .._creation import _fill
    return _fill(np.empty_like(a), make)


def _float_dtype_check(self, name):
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError(f"{name}: expected a floating point or complex tensor, got {self.dtype}")


def _continuous_check(self, dist):
    """cauchy_/exponential_ on a tensor that is not floating: PyTorch's RuntimeError."""
    if not self.dtype.is_floating_point:
        name = U.torch_scalar_name(self._data)
        raise RuntimeError(f"{dist} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {name}")


def _no_kernel(self, kernel, integers):
    """PyTorch's NotImplementedError where its CPU kernel has no case for the tensor's dtype: it has
    the floating dtypes, and the integer ones (not bool) when ``integers``."""
    if not (self.dtype.is_floating_point or integers and self._data.dtype.kind in "iu"):
        name = U.torch_scalar_name(self._data)
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")


def _real_np(self):
    """The NumPy dtype draws are made in: the tensor's, or its parts' for a complex tensor."""
    d = self._data.dtype
    return d if d.kind != "c" else self._data.real.dtype


def _meta_noop(fill):
    """A random fill of a 'meta' tensor draws nothing (and allocates nothing): it returns self."""
    import functools

    @functools.wraps(fill)
    def f(self, *args, **kwargs):
        return self if self._meta else fill(self, *args, **kwargs)
    return f


@_meta_noop
def uniform_(self, a=0.0, b=1.0, *, generator=None):
    from .._creation import _mt, _uniform_values
    _float_dtype_check(self, "uniform_")
    a, b = float(a), float(b)
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    mt = _mt(generator)
    d = _real_np(self)
    dst = _direct_target(self, "uniform_")
    if dst is not None:
        _uniform_values(mt, dst.size, d, a, b, dst)
        return _filled(self, "uniform_")
    return _random_fill(self, _draw_like(self, lambda n: _uniform_values(mt, n, d, a, b)), "uniform_")


@_meta_noop
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    from .._creation import _mt, _normal_values
    _float_dtype_check(self, "normal_")
    if not std >= 0.0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    mt = _mt(generator)
    d = _real_np(self)
    if self.dtype.is_complex:  # each part N(mean, std^2 / 2): the complex value has variance std^2
        std = std / 2 ** 0.5
    contig = self._data.flags.c_contiguous
    dst = _direct_target(self, "normal_")
    if dst is not None:
        _normal_values(mt, dst.size, d, mean, std, True, dst)
        return _filled(self, "normal_")
    return _random_fill(self, _draw_like(self, lambda n: _normal_values(mt, n, d, mean, std, contig)), "normal_")


@_meta_noop
def bernoulli_(self, p=0.5, *, generator=None):
    from .._creation import _mt, bernoulli
    if U.is_tensor(p):
        from .._creation import _iter_view
        mt = _mt(generator)
        pd = p._data.dtype if p._data.dtype in (np.float32, np.float64) else np.float32
        a = np.empty_like(self._data, dtype=np.bool_)
        v = _iter_view(a)
        u = (mt.uniform_f64 if pd == np.float64 else mt.uniform_f32)(a.size).reshape(v.shape)
        v[...] = u < _iter_view(np.broadcast_to(p._data, a.shape)).astype(pd, copy=False)
        return _random_fill(self, a, "bernoulli_")
    p = float(p)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    mt = _mt(generator)
    return _random_fill(self, _draw_like(self, lambda n: mt.uniform_f64(n) < p), "bernoulli_")


@_meta_noop
def exponential_(self, lambd=1.0, *, generator=None):
    from .._creation import _mt, _exponential_values
    _continuous_check(self, "Exponential")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    mt = _mt(generator)
    d = self._data.dtype
    return _random_fill(self, _draw_like(self, lambda n: _exponential_values(mt, n, d, float(lambd))),
                        "exponential_")


@_meta_noop
def random_(self, from_=0, to=None, *, generator=None):
    from .._creation import _mt, _randint_array
    mt = _mt(generator)
    d = self._data.dtype
    if to is None and from_ == 0 and not isinstance(from_, bool):
        # random_(): [0, 2**mantissa digits] for floats, [0, max] for integers
        if d.kind == "f":
            hi = (1 << (np.finfo(d).nmant + 1)) + 1
        elif d == np.bool_:
            hi = 2
        else:
            hi = int(np.iinfo(d).max) + 1
        if hi > (1 << 32):
            make = lambda n: (mt.u64(n) % np.uint64(hi)).astype(d)  # noqa: E731
        else:
            make = lambda n: (mt.u32(n) % np.uint64(hi)).astype(d)  # noqa: E731
        return _random_fill(self, _draw_like(self, make), "random_")
    if to is None:
        from_, to = 0, from_
    from_, to = int(from_), int(to)
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    return _random_fill(self, _draw_like(self, lambda n: _randint_array(mt, from_, to, n, d)), "random_")


@_meta_noop
def geometric_(self, p, *, generator=None):
    from .._creation import _mt, _libm
    import math
    _no_kernel(self, "geometric_cpu", True)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    mt = _mt(generator)
    lq = math.log1p(-p)
    return _random_fill(self, _draw_like(self, lambda n: np.ceil(_libm(math.log, mt.uniform_f64(n)) / lq)),
                        "geometric_")


@_meta_noop
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    from .._creation import _mt, _libm, _fma64
    import math
    _continuous_check(self, "Cauchy")
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    mt = _mt(generator)
    return _random_fill(self, _draw_like(self, lambda n: _fma64(
        _libm(math.tan, math.pi * (mt.uniform_f64(n) - 0.5)), float(sigma), float(median))), "cauchy_")


@_meta_noop
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    from .._creation import _mt, _libm, _fma64
    import math
    _no_kernel(self, "log_normal_cpu", False)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    mt = _mt(generator)
    return _random_fill(self, _draw_like(self, lambda n: _libm(math.exp, _fma64(
        mt.normal_scalar(n), float(std), float(mean)))), "log_normal_")


def _vmap_different(fn):
    """An in-place sampler on a tensor batched by vmap(randomness='different') fills the whole batch
    in one draw (its physical values, the batch dim first), as PyTorch does."""
    import functools

    @functools.wraps(fn)
    def f(self, *args, **kwargs):
        w = self._wr
        if w is not None and getattr(w, "kind", None) == "vmap" and getattr(w, "randomness", None) == "different":
            w._drawing = True
            try:
                fn(self._val, *args, **kwargs)
            finally:
                w._drawing = False
            return self
        return fn(self, *args, **kwargs)
    return f


uniform_ = _vmap_different(uniform_)
normal_ = _vmap_different(normal_)
bernoulli_ = _vmap_different(bernoulli_)
exponential_ = _vmap_different(exponential_)
random_ = _vmap_different(random_)
geometric_ = _vmap_different(geometric_)
cauchy_ = _vmap_different(cauchy_)
log_normal_ = _vmap_different(log_normal_)


def _direct_target(self, name):
    """self's memory as a flat array a sampler may write its values into directly, sparing a
    temporary and a copy: where _random_fill would copy them straight in (no autograd to record, no
    transform listening) and self is a contiguous float32 or float64 tensor (PyTorch's iteration
    order is then memory order). Else None. Runs _random_fill's checks first."""
    a = self._data
    if a.dtype not in (_F32, _F64) or not a.flags.c_contiguous or not a.size:
        return None
    _check(self, name)
    return None if _recorded(self) else a.reshape(-1)


def _recorded(self):
    """Whether a write into self goes through the dispatcher: autograd records it, or a transform
    listens."""
    return D.grad_mode.enabled and self._rg or not D.state.simple


def _filled(self, name):
    self._bump(name)
    return self


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _random_fill(self, values, name):
    _check(self, name)
    if self._meta:
        return self
    src = D._new_tensor(np.asarray(values).astype(self._data.dtype, copy=False))
    if _recorded(self):
        return inplace_apply(copy_op, self, (src,), {}, name)
    np.copyto(self._data, src._data, casting="unsafe")
    return _filled(self, name)


# ----------------------------------------------------------------------------- batching rules (vmap)

from ._batching import _materialize, elementwise_rule  # noqa: E402


def copy_like_rule(op, vals, bd, params, size):
    """copy/fill_tensor: the destination takes the batch when the source has it."""
    vals, bd = list(vals), list(bd)
    if not bd[0] and any(bd[1:]):
        vals[0] = _materialize(vals[0], size)
        bd[0] = True
    return elementwise_rule(op, vals, bd, params, size)


copy_op.batch = fill_t_op.batch = copy_like_rule
