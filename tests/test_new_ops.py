"""Issue 15's new ops against PyTorch: every sample PyTorch's own op_db has for them (forward values,
shapes and dtypes in float64/float32/integers, reverse-mode gradients in float64, the errors PyTorch
raises), and float64 finite differences, forward mode and vmap on ember's side."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")
from ember import func as efunc  # noqa: E402
import os  # noqa: E402

# samples per op and dtype in the default run; EMBER_OPDB_FULL=1 runs every sample (CI's full sweep)
CAP = None if os.environ.get("EMBER_OPDB_FULL") else 12


def _op_db():
    # imported on first use, not at collection: torch.testing._internal disables torch.backends' global
    # flags when it loads, which other test modules set
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    return op_db

# OpInfo names (with "/variant" where op_db splits one) that this issue added to ember
NEW_OPS = [
    "acosh", "copysign", "gcd", "lcm", "nextafter", "frexp", "deg2rad", "rad2deg", "logaddexp2", "ldexp",
    "isposinf", "isneginf", "rsub", "positive", "__rdiv__",
    "atleast_1d", "atleast_2d", "atleast_3d", "hsplit", "vsplit", "dsplit", "split_with_sizes",
    "split_with_sizes_copy", "unsafe_split", "unsafe_chunk", "diagflat", "alias_copy", "as_strided_copy",
    "diagonal_copy", "expand_copy", "narrow_copy", "permute_copy", "squeeze_copy", "t_copy", "transpose_copy",
    "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy", "select_scatter", "slice_scatter",
    "diagonal_scatter", "as_strided_scatter", "constant_pad_nd", "fill", "combinations", "unravel_index",
    "nonzero_static", "mode", "nanmedian", "trapezoid", "trapz", "cumulative_trapezoid", "gradient", "histc",
    "histogram", "histogramdd", "scatter_reduce/prod", "scatter_reduce/amax", "scatter_reduce/amin",
    "index_reduce/prod", "index_reduce/mean", "index_reduce/amax", "index_reduce/amin",
    "put", "unique_consecutive", "renorm", "searchsorted", "bucketize",
    "masked.sum", "masked.prod", "masked.amax", "masked.amin", "masked.argmax", "masked.argmin", "masked.mean",
    "masked.median", "masked.norm", "masked.var", "masked.std", "masked.softmax", "masked.log_softmax",
    "masked.softmin", "masked.normalize", "masked.logaddexp", "masked.logsumexp", "masked.cumsum", "masked.cumprod",
    "linspace", "logspace", "linspace/tensor_overload", "logspace/tensor_overload", "rand_like", "randn_like",
    "randint_like", "new_empty_strided", "empty_permuted", "scalar_tensor", "resize_", "resize_as_",
    "native_layer_norm", "native_batch_norm", "native_group_norm", "_softmax_backward_data",
    "_native_batch_norm_legit", "_batch_norm_with_update", "native_dropout_backward",
    # ops ember had, now taking every argument op_db's samples pass (fweights/aweights, output_size,
    # tensor sections, out_int32/sorter)
    "cov", "repeat_interleave", "tensor_split",
    "grid_sampler_2d", "grid_sampler_3d", "_segment_reduce/lengths", "_segment_reduce/offsets",
]

# random or uninitialized values: shapes, dtypes and strides are compared, not the values
SHAPE_ONLY = {"rand_like", "randn_like", "randint_like", "new_empty_strided", "empty_permuted", "resize_",
              "resize_as_"}

# PyTorch's index among equal values is an implementation detail (an unstable sort on large inputs):
# ember's must point at an element holding the returned value
INDEX_BY_VALUE = {"mode"}

# PyTorch's own gradients are wrong here (its op_db marks them expectedFailure): ember's are checked
# against float64 finite differences instead
GRAD_BY_FINITE_DIFFERENCES = {
    "as_strided_scatter": "PyTorch 2.13 gives the input gradient of the wrong positions "
                          "(op_db: test_fn_grad and test_forward_mode_AD expectedFailure)",
}

_DT = {getattr(torch, n): getattr(ember, n) for n in
       ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")}
_DTYPES = (torch.float64, torch.float32, torch.int64, torch.int32, torch.bool)
if not os.environ.get("EMBER_OPDB_FULL"):
    _DTYPES = (torch.float64, torch.float32, torch.int64)


def _conv(x, rg=None):
    if isinstance(x, torch.Tensor):
        t = ember.from_numpy(x.detach().numpy().copy())
        if rg is not None and x.requires_grad:
            t.requires_grad_(True)
            rg.append((x, t))
        return t
    if isinstance(x, torch.dtype):
        return _DT[x]
    if isinstance(x, torch.device):
        return "cpu"
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_conv(i, rg) for i in x)
    if isinstance(x, dict):
        return {k: _conv(v, rg) for k, v in x.items()}
    return x


def _flat(o):
    if isinstance(o, (tuple, list)):
        return [y for x in o for y in _flat(x)]
    return [o]


def _resolve(name):
    obj = ember
    for p in name.split("."):
        obj = getattr(obj, p, None)
        if obj is None:  # (an op PyTorch has only under torch.ops.aten: ember's is in ember.ops)
            return getattr(ember.Tensor, name, None) or getattr(ember.ops, name, None)
    return obj


def _opinfo(name):
    base, _, variant = name.partition("/")
    found = [o for o in _op_db() if o.name == base and (variant or not o.variant_test_name)
             and (not variant or o.variant_test_name == variant)]
    assert len(found) == 1, f"no single OpInfo {name}: {found}"
    return found[0]


def _check_close(te, tt, where):
    fe, ft = _flat(te), _flat(tt)
    assert len(fe) == len(ft), f"{where}: {len(fe)} outputs, PyTorch {len(ft)}"
    for a, b in zip(fe, ft):
        if not isinstance(b, torch.Tensor):
            assert a == b or (isinstance(a, float) and np.isnan(a) and np.isnan(b)), f"{where}: {a} vs {b}"
            continue
        assert isinstance(a, ember.Tensor), f"{where}: got {type(a).__name__}"
        assert tuple(a.shape) == tuple(b.shape), f"{where}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        assert str(a.dtype)[6:] == str(b.dtype)[6:], f"{where}: dtype {a.dtype} vs {b.dtype}"
        an, bn = a.detach().numpy(), b.detach().numpy()
        if bn.dtype.kind == "f":
            tol = 1e-7 if bn.dtype == np.float64 else 1e-4
            np.testing.assert_allclose(an, bn, rtol=tol, atol=tol, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(an, bn, err_msg=where)


def _gradcheck_sample(fn, s):
    """Reverse and forward mode of ember's fn on one float64 sample against finite differences."""
    leaves = _split(s)

    def f(*vals):
        return _call(None, fn, s, vals, _conv)
    assert ember.autograd.gradcheck(f, tuple(_conv(x).requires_grad_() for x in leaves), check_forward_ad=True)


def _describe(s):
    def d(x):
        return f"T{tuple(x.shape)}{str(x.dtype)[6:]}" if isinstance(x, torch.Tensor) else repr(x)
    return f"input={d(s.input) if not isinstance(s.input, (list, tuple)) else [d(i) for i in s.input]} " \
           f"args={[d(a) for a in s.args]} kwargs={ {k: d(v) for k, v in s.kwargs.items()} }"


@pytest.mark.parametrize("name", NEW_OPS)
def test_op_db_samples(name):
    opinfo = _opinfo(name)
    fn = _resolve(opinfo.name)
    assert fn is not None, f"ember has no {opinfo.name}"
    ran = 0
    for dt in _DTYPES:
        if dt not in opinfo.supported_dtypes("cpu"):
            continue
        grad = opinfo.supports_autograd and dt == torch.float64
        for s in list(opinfo.sample_inputs("cpu", dt, requires_grad=grad))[:CAP]:
            where = f"{opinfo.name} {dt} {_describe(s)}"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    tt = opinfo.op(s.input, *s.args, **s.kwargs)
                except Exception:
                    with pytest.raises(Exception):
                        fn(_conv(s.input), *_conv(s.args), **_conv(s.kwargs))
                    continue
                rg = []
                te = fn(_conv(s.input, rg), *_conv(s.args, rg), **_conv(s.kwargs, rg))
            if opinfo.name in SHAPE_ONLY:
                for a, b in zip(_flat(te), _flat(tt)):
                    assert tuple(a.shape) == tuple(b.shape) and str(a.dtype)[6:] == str(b.dtype)[6:], where
                    if b.numel():
                        assert a.stride() == b.stride(), f"{where}: strides {a.stride()} vs {b.stride()}"
                ran += 1
                continue
            if opinfo.name in INDEX_BY_VALUE:
                vals, idx = te
                x = _conv(s.input)
                d = s.args[0] if s.args else s.kwargs.get("dim", -1)
                if x.dim():
                    picked = x.gather(d, idx.unsqueeze(d) if idx.dim() < x.dim() else idx)
                    picked = picked.squeeze(d) if idx.dim() < x.dim() else picked
                    np.testing.assert_array_equal(picked.detach().numpy(), vals.detach().numpy(), err_msg=where)
                te, tt = te[0], tt[0]
            _check_close(te, tt, where)
            ran += 1
            touts = [o for o in _flat(tt) if isinstance(o, torch.Tensor) and o.requires_grad]
            if not grad or not touts or not rg:
                continue
            if opinfo.name in GRAD_BY_FINITE_DIFFERENCES:
                _gradcheck_sample(fn, s)
                continue
            eouts = [a for a, b in zip(_flat(te), _flat(tt)) if isinstance(b, torch.Tensor) and b.requires_grad]
            if not all(isinstance(a, ember.Tensor) and a.requires_grad for a in eouts):
                # ember records no gradient: PyTorch's must be "not implemented" too
                with pytest.raises(RuntimeError, match="not implemented"):
                    torch.autograd.grad([o.sum() for o in touts], [t for t, _ in rg])
                continue
            gen = torch.Generator().manual_seed(0)
            gs = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in touts]
            tg = torch.autograd.grad(touts, [t for t, _ in rg], gs, allow_unused=True)
            eg = ember.autograd.grad(eouts, [e for _, e in rg], [ember.from_numpy(g.numpy().copy()) for g in gs],
                                     allow_unused=True)
            for a, b in zip(eg, tg):
                if b is None:
                    assert a is None or not a.numpy().any(), where
                elif a is None:
                    assert not b.numpy().any(), f"{where}: no gradient, PyTorch's is nonzero"
                else:
                    tol = (1e-6, 1e-7) if b.dtype == torch.float64 else (1e-4, 1e-5)  # (float32 weights)
                    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol[0], atol=tol[1],
                                               err_msg=f"gradient of {where}")
    assert ran, f"{opinfo.name}: no sample ran"


def _float64_samples(opinfo, n=4):
    if torch.float64 not in opinfo.supported_dtypes("cpu"):
        return []
    return list(opinfo.sample_inputs("cpu", torch.float64, requires_grad=False))[:n]


def _split(s):
    """(tensor leaves of input + args, rebuild) for a sample."""
    leaves = []

    def walk(x):
        if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
            leaves.append(x)
        elif isinstance(x, (tuple, list)):
            for i in x:
                walk(i)
    walk(s.input)
    walk(s.args)
    return leaves


def _rebuild(x, it, lib_conv):
    if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
        return next(it)
    if isinstance(x, (tuple, list)):
        return type(x)(_rebuild(i, it, lib_conv) for i in x)
    return lib_conv(x)


def _call(opinfo, fn, s, vals, lib_conv):
    it = iter(vals)
    inp = _rebuild(s.input, it, lib_conv)
    args = _rebuild(tuple(s.args), it, lib_conv)
    out = fn(inp, *args, **lib_conv(s.kwargs))
    return tuple(o for o in _flat(out) if o.dtype.is_floating_point)


@pytest.mark.parametrize("name", NEW_OPS)
def test_forward_mode_matches_torch(name):
    opinfo = _opinfo(name)
    if not opinfo.supports_forward_ad:
        pytest.skip("PyTorch has no forward mode for it")
    fn = _resolve(opinfo.name)
    ran = 0
    if opinfo.name in GRAD_BY_FINITE_DIFFERENCES:
        pytest.skip(GRAD_BY_FINITE_DIFFERENCES[opinfo.name] + " (finite differences in test_op_db_samples)")
    for s in _float64_samples(opinfo):
        leaves = _split(s)
        if not leaves:
            continue
        gen = torch.Generator().manual_seed(1)
        tans = [torch.randn(x.shape, dtype=x.dtype, generator=gen) for x in leaves]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                _, tt = torch.func.jvp(lambda *v: _call(opinfo, opinfo.op, s, v, lambda x: x), tuple(leaves), tuple(tans))
            except Exception:
                continue
            _, te = efunc.jvp(lambda *v: _call(opinfo, fn, s, v, _conv), tuple(_conv(x) for x in leaves),
                              tuple(_conv(t) for t in tans))
        _check_close(list(te), list(tt), f"jvp of {opinfo.name} {_describe(s)}")
        ran += 1
    if not ran:
        pytest.skip("no sample PyTorch runs forward mode on")


@pytest.mark.parametrize("name", NEW_OPS)
def test_vmap_matches_torch(name):
    if name in SHAPE_ONLY:
        pytest.skip("random or uninitialized values (resize_ is in place on its input, which vmap does not allow)")
    opinfo = _opinfo(name)
    fn = _resolve(opinfo.name)
    ran = 0
    for s in _float64_samples(opinfo):
        leaves = _split(s)
        if not leaves:
            continue
        gen = torch.Generator().manual_seed(2)
        # the first floating input batched (3 different values), the rest shared
        b0 = torch.stack([leaves[0]] + [torch.randn(leaves[0].shape, dtype=leaves[0].dtype, generator=gen)
                                         for _ in range(2)])
        rest = leaves[1:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                tt = torch.func.vmap(lambda x: _call(opinfo, opinfo.op, s, (x, *rest), lambda v: v))(b0)
            except Exception:
                continue
            erest = [_conv(x) for x in rest]
            te = efunc.vmap(lambda x: _call(opinfo, fn, s, (x, *erest), _conv))(_conv(b0))
        _check_close(list(te), list(tt), f"vmap of {opinfo.name} {_describe(s)}")
        ran += 1
    if not ran:
        pytest.skip("no sample PyTorch vmaps")


def test_detach_under_vmap_keeps_the_batch():
    # Tensor.detach() of a vmap-wrapped tensor used to lose the batch (NaN), which made logaddexp NaN under vmap
    x = ember.randn(3, 4, dtype=ember.float64)
    y = ember.randn(4, dtype=ember.float64)
    np.testing.assert_array_equal(efunc.vmap(lambda a: (a * 2).detach())(x).numpy(), (x * 2).numpy())
    np.testing.assert_allclose(efunc.vmap(lambda a: ember.logaddexp(a, y))(x).numpy(),
                               torch.logaddexp(torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy())).numpy())
    g = efunc.vmap(efunc.grad(lambda a: (a.detach() * a).sum()))(x)
    np.testing.assert_allclose(g.numpy(), x.numpy())  # the detached factor is a constant
    assert not efunc.vmap(lambda a: a.detach())(x.requires_grad_()).requires_grad


@pytest.mark.parametrize("name", NEW_OPS)
def test_error_inputs_raise(name):
    """Every error input op_db has for the op: ember raises where PyTorch raises, the same exception type."""
    opinfo = _opinfo(name)
    fn = _resolve(opinfo.name)
    try:
        errs = list(opinfo.error_inputs("cpu"))
    except Exception:
        errs = []
    if not errs:
        pytest.skip("op_db has no error inputs for it")
    for e in errs:
        s = e.sample_input
        if any(isinstance(t, torch.Tensor) and (t.device.type != "cpu" or t.dtype not in _DT)
               for t in _flat([s.input, list(s.args), list(s.kwargs.values())])):
            continue  # (meta-device and complex error inputs: ember has neither)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(e.error_type):
                fn(_conv(s.input), *_conv(s.args), **_conv(s.kwargs))


@pytest.mark.parametrize("case", [
    ("copysign_", lambda m: m.tensor([1.0, -2.0, 3.0]), (-1.0,), {}),
    ("gcd_", lambda m: m.tensor([4, 6, 0]), (lambda m: m.tensor([6, 9, 5]),), {}),
    ("deg2rad_", lambda m: m.tensor([90.0, 180.0]), (), {}),
    ("put_", lambda m: m.zeros(2, 2), (lambda m: m.tensor([0, 3]), lambda m: m.tensor([5.0, 6.0])), {}),
    ("index_reduce_", lambda m: m.ones(5), (0, lambda m: m.tensor([0, 2, 0]), lambda m: m.tensor([2.0, 3.0, 4.0]), "prod"),
     {"include_self": False}),
    ("renorm_", lambda m: m.tensor([[3.0, 4.0], [0.3, 0.4]]), (2, 0, 1.0), {}),
], ids=lambda c: c[0])
def test_inplace_twins(case):
    name, make, args, kwargs = case
    outs = []
    for m in (ember, torch):
        x = make(m)
        a = [v(m) if callable(v) else v for v in args]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = getattr(x, name)(*a, **kwargs)
        assert r is x
        outs.append(x.numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)
