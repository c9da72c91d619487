"""Complex tensors against PyTorch: dtypes and promotion, printing, the complex-specific functions and
their views, every op of the sample database on complex inputs (values, errors and gradients of real
losses), gradcheck, forward mode and vmap."""
import os

import numpy as np
import pytest

import ember
import ember.nn  # noqa: F401  (registers the nn primitives used by op_db entries)
import ember.nn.functional  # noqa: F401
from ember.autograd import gradcheck, gradgradcheck

from op_db import ENTRIES, flat_outputs, sample_list

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
         "complex128"]


def _np(t):
    t = t.detach()
    if hasattr(t, "resolve_conj"):
        t = t.resolve_conj()
    return t.numpy()


def _same_dtype(a, b):
    return str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]


def _assert_close(a, b, tol=1e-6):
    assert tuple(a.shape) == tuple(b.shape), (tuple(a.shape), tuple(b.shape))
    assert _same_dtype(a, b), (a.dtype, b.dtype)
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol, equal_nan=True)


# ----------------------------------------------------------------------------- dtypes


def test_dtypes_and_aliases():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert ember.complex64.is_complex and not ember.complex64.is_floating_point
    assert ember.complex128.to_real() is ember.float64 and ember.float32.to_complex() is ember.complex64
    assert ember.finfo(ember.complex64).eps == ember.finfo(ember.float32).eps
    z = ember.tensor([1 + 2j])
    assert z.is_complex() and ember.is_complex(z) and not z.is_floating_point()
    assert z.element_size() == 8 and ember.zeros(2, dtype=ember.cdouble).element_size() == 16


def test_python_complex_data_takes_the_default_complex_dtype(torch):
    for default in ("float32", "float64"):
        ember.set_default_dtype(getattr(ember, default))
        torch.set_default_dtype(getattr(torch, default))
        try:
            for data in (1j, [1 + 2j, 3.0], [[1, 2j]], [True, 1.5j]):
                assert _same_dtype(ember.tensor(data), torch.tensor(data)), data
            assert _same_dtype(ember.full((2,), 1j), torch.full((2,), 1j))
        finally:
            torch.set_default_dtype(torch.float32)


def _operand(lib, name, kind):
    d = getattr(lib, "bool" if name == "bool" else name)
    if kind == "dim":
        return lib.ones(2, dtype=d)
    return lib.ones((), dtype=d)


@pytest.mark.parametrize("a", NAMES)
def test_promotion_table_matches_torch(torch, a):
    """result_type over tensors with dims, zero-dim tensors and Python numbers, as torch.result_type;
    complex32 (float16 with a complex operand) is not an ember dtype: that combination raises."""
    scalars = [True, 2, 2.5, 1j]
    for b in NAMES:
        for kb in ("dim", "zero"):
            for ka in ("dim", "zero"):
                x, y = _operand(torch, a, ka), _operand(torch, b, kb)
                want = torch.result_type(x, y)
                ex, ey = _operand(ember, a, ka), _operand(ember, b, kb)
                if want == torch.complex32:
                    with pytest.raises(RuntimeError, match="complex32"):
                        ember.result_type(ex, ey)
                    continue
                got = ember.result_type(ex, ey)
                assert got.name == str(want).split(".")[-1], (a, ka, b, kb, got, want)
        tp = torch.promote_types(getattr(torch, a if a != "bool" else "bool"), getattr(torch, b))
        if tp != torch.complex32:
            ep = ember.promote_types(getattr(ember, a), getattr(ember, b))
            assert ep.name == str(tp).split(".")[-1], (a, b)
    for s in scalars:
        want = torch.result_type(_operand(torch, a, "dim"), s)
        if want == torch.complex32:
            continue
        assert ember.result_type(_operand(ember, a, "dim"), s).name == str(want).split(".")[-1], (a, s)


def test_arithmetic_promotes_as_torch(torch):
    for mk in (lambda m: m.ones(2, dtype=m.float64) + 1j, lambda m: m.arange(3) * 1j,
               lambda m: m.ones(2) * m.tensor(1j, dtype=m.complex128),
               lambda m: m.ones(2, dtype=m.complex64) + m.ones(2, dtype=m.float64),
               lambda m: m.ones(2, dtype=m.complex64) / m.tensor(2.0, dtype=m.float64),
               lambda m: m.tensor([1 + 1j]) ** 2, lambda m: 2 ** m.tensor([1j])):
        _assert_close(mk(ember), mk(torch))


def test_complex_into_real_out_is_an_error():
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.add(ember.ones(2, dtype=ember.complex64), 1, out=ember.zeros(2))


def test_cast_to_real_keeps_the_real_part_with_a_warning():
    z = ember.tensor([1 + 2j, -3 - 4j])
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        r = z.to(ember.float32)
    np.testing.assert_array_equal(r.numpy(), [1.0, -3.0])


def test_printing_matches_torch(torch):
    cases = [lambda m: m.tensor([[1.5 + 2j, -30 - 4.25j], [0, 1j]]),
             lambda m: m.tensor([1 + 2j, 3 - 4j]),
             lambda m: m.tensor([1e10 + 2j, 3 - 1j]),
             lambda m: m.tensor([[1 + 2j, -11.25 - 0.5j]] * 2, dtype=m.complex128),
             lambda m: m.tensor(-2.5 - 1j),
             lambda m: m.zeros(0, dtype=m.complex64),
             lambda m: m.tensor([1 + 2j, float("nan") + 1j]),
             lambda m: m.tensor([1 + 2j], requires_grad=True)]
    for mk in cases:
        assert repr(mk(ember)) == repr(mk(torch)).replace("torch.", "ember.")


# ----------------------------------------------------------------------------- views and the complex functions


def test_real_and_imag_are_writable_views():
    z = ember.tensor([[1 + 2j, 3 - 4j], [5 + 6j, 7 - 8j]])
    re, im = z.real, z.imag
    assert re.dtype is ember.float32 and re.stride() == (4, 2) and im.stride() == (4, 2)
    assert re.storage_offset() == 0 and im.storage_offset() == 1
    re[0, 0] = 10.0
    im.mul_(2)
    np.testing.assert_array_equal(z.numpy(), [[10 + 4j, 3 - 8j], [5 + 12j, 7 - 16j]])
    assert z._version > 0  # writes through the views bump the base's version counter
    z.real = ember.zeros(2, 2)
    np.testing.assert_array_equal(z.numpy().real, 0)
    x = ember.ones(3)
    assert x.real is x  # real of a real tensor is the tensor itself
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        x.imag


def test_view_as_real_and_complex_are_views(torch):
    z = ember.tensor([1 + 2j, 3 - 4j, 5j])
    r = ember.view_as_real(z)
    assert tuple(r.shape) == (3, 2) and r.stride() == (2, 1) and r.dtype is ember.float32
    r[1, 1] = 9.0
    assert z[1].item() == 3 + 9j
    t = z.unsqueeze(0).expand(2, 3).transpose(0, 1)  # non-contiguous: view_as_real still views it
    assert ember.view_as_real(t).stride() == tuple(torch.view_as_real(
        torch.tensor([1 + 2j, 3 - 4j, 5j]).unsqueeze(0).expand(2, 3).transpose(0, 1)).stride())
    x = ember.arange(12, dtype=ember.float64).reshape(3, 2, 2)
    c = ember.view_as_complex(x)
    assert c.dtype is ember.complex128 and tuple(c.shape) == (3, 2)
    c[0, 0] = 7 + 7j
    assert x[0, 0].tolist() == [7.0, 7.0]
    for bad, msg in ((lambda m: m.ones(2, 3), "last dimension of size 2"),
                     (lambda m: m.ones(2, 2).t(), "last dimension with stride 1"),
                     (lambda m: m.ones(3, 3)[:, 1:], "stride divisible by 2"),
                     (lambda m: m.ones(3, 2, dtype=m.int64), "float and double")):
        with pytest.raises(RuntimeError, match=msg):
            ember.view_as_complex(bad(ember))
        with pytest.raises(RuntimeError):
            torch.view_as_complex(bad(torch))
    with pytest.raises(RuntimeError, match="only supported for complex tensors"):
        ember.view_as_real(ember.ones(2))


def test_conj_family(torch):
    z = ember.tensor([1 + 2j, -3 - 4j])
    c = z.conj()
    np.testing.assert_array_equal(c.numpy(), [1 - 2j, -3 + 4j])
    # ember's conj is an eager copy: no lazy conjugate bit to resolve
    assert not c.is_conj() and c.resolve_conj() is c and not z.is_neg() and z.resolve_neg() is z
    np.testing.assert_array_equal(ember.conj_physical(z).numpy(), c.numpy())
    x = ember.ones(2)
    assert x.conj() is x and ember.conj_physical(x) is not x
    m = ember.tensor([[1 + 1j, 2j], [3, 4 - 1j]])
    np.testing.assert_array_equal(m.mH.numpy(), m.numpy().conj().T)
    np.testing.assert_array_equal(m.H.numpy(), m.numpy().conj().T)
    np.testing.assert_array_equal(m.adjoint().numpy(), m.numpy().conj().T)


@pytest.mark.parametrize("case", [
    lambda m: m.angle(m.tensor([1 + 1j, -1, 0, -2j, 0j])),
    lambda m: m.angle(m.tensor([-1.0, 0.0, 2.0, float("nan")])),
    lambda m: m.angle(m.tensor([-1, 0, 2])),
    lambda m: m.abs(m.tensor([3 + 4j, -1j, 0j], dtype=m.complex128)),
    lambda m: m.sgn(m.tensor([3 + 4j, 0j, -2j])),
    lambda m: m.sgn(m.tensor([-2.0, 0.0, 3.0])),
    lambda m: m.polar(m.tensor([1.0, 2.0]), m.tensor([0.5, -3.0])),
    lambda m: m.complex(m.tensor([1.0, 2.0], dtype=m.float64), m.tensor([[3.0], [4.0]], dtype=m.float64)),
    lambda m: m.isreal(m.tensor([1 + 0j, 1j, 2])),
    lambda m: m.isreal(m.tensor([1.0, 2.0])),
    lambda m: m.tensor([1 + 2j, 3j]) == m.tensor([1 + 2j, 3]),
    lambda m: m.tensor([1 + 2j, 3j]).sum(),
    lambda m: m.tensor([1 + 2j, 3j]).mean(),
    lambda m: m.tensor([1 + 2j, 3j, 2 - 1j]).var(),
    lambda m: m.tensor([1 + 2j, 3j, 2 - 1j]).std(),
    lambda m: m.tensor([3 + 4j, 1j]).norm(),
    lambda m: m.linalg.vector_norm(m.tensor([3 + 4j, 1j]), 1),
    lambda m: m.vdot(m.tensor([1 + 2j, 3j]), m.tensor([2 - 1j, 1 + 1j])),
    lambda m: m.dot(m.tensor([1 + 2j, 3j]), m.tensor([2 - 1j, 1 + 1j])),
    lambda m: m.tensor([[1 + 2j, 3j]]) @ m.tensor([[2 - 1j], [1 + 1j]]),
    lambda m: m.tensor([1 + 2j, 3j]).exp().log(),
    lambda m: m.tensor([1 + 2j, 3j]).sigmoid(),
    lambda m: m.tensor([1 + 2j, 3j]).prod(),
    lambda m: m.tensor([1 + 2j, 3j, 1 - 1j]).cumprod(0),
    lambda m: m.where(m.tensor([True, False]), m.tensor([1j, 2j]), 0.5),
    lambda m: m.cat([m.tensor([1j]), m.tensor([2.0])]),
    lambda m: m.stack([m.tensor([1j]), m.tensor([2j])]).flip(0).roll(1, 0),
])
def test_complex_functions_match_torch(torch, case):
    _assert_close(case(ember), case(torch))


# ----------------------------------------------------------------------------- every op on complex inputs

_EXPECTED_GAPS = {
}


def _complex_args(s, rng):
    fl = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    return fl, [np.asarray(a + 1j * rng.uniform(-2, 2, a.shape)) if i in fl else a for i, a in enumerate(s.args)]


def _run(lib, e, s, args, grad_at=()):
    ins = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            t = lib.from_numpy(np.array(a, copy=True))
            if i in grad_at:
                t.requires_grad_(True)
            ins.append(t)
        else:
            ins.append(a)
    f = e.torch_call() if lib.__name__ == "torch" else e.fn
    return ins, f(lib, *ins, **s.kwargs)


# EMBER_COMPLEX_FULL=1: every sample of every op (the default run takes the first 3 of ops whose first
# sample has a float input)
_FULL = bool(os.environ.get("EMBER_COMPLEX_FULL"))
SWEEP = [e for e in ENTRIES if e.oracle and any(
    isinstance(a, np.ndarray) and a.dtype.kind == "f" for s in sample_list(e)[:None if _FULL else 1] for a in s.args)]


@pytest.mark.parametrize("entry", SWEEP, ids=[e.name for e in SWEEP])
def test_op_on_complex_input_matches_torch(torch, entry):
    """The op's samples with complex inputs: ember computes what PyTorch computes (values, dtypes), or
    raises where PyTorch raises (its NotImplementedError for a missing kernel is a RuntimeError), and
    the gradient of a real loss of the outputs agrees with torch.autograd's."""
    gap = _EXPECTED_GAPS.get(entry.op) or _EXPECTED_GAPS.get(entry.name)
    if gap:
        pytest.skip(gap)
    for k, s in enumerate(sample_list(entry)[:None if _FULL else 3]):
        rng = np.random.default_rng(k)
        fl, args = _complex_args(s, rng)
        try:
            _, to = _run(torch, entry, s, args)
            terr = None
        except Exception as ex:  # noqa: BLE001 - the oracle decides what is an error
            terr = ex
        if terr is not None:
            with pytest.raises(RuntimeError if isinstance(terr, RuntimeError) else type(terr)):
                _run(ember, entry, s, args)
            continue
        _, eo = _run(ember, entry, s, args)
        eo, to = flat_outputs(eo), flat_outputs(to)
        assert len(eo) == len(to)
        for a, b in zip(eo, to):
            if hasattr(b, "dtype"):
                _assert_close(a, b)
        if not entry.grad or not s.grad:
            continue
        diff = [i for i in fl if i not in s.nondiff]
        if not diff:
            continue
        try:
            ti, to = _run(torch, entry, s, args, diff)
        except RuntimeError as ex:  # e.g. "silu does not support automatic differentiation for ... complex"
            with pytest.raises(RuntimeError, match="complex"):
                _run(ember, entry, s, args, diff)
            assert "complex" in str(ex)
            continue
        to = [o for o in flat_outputs(to) if hasattr(o, "requires_grad") and o.requires_grad]
        if not to:
            continue
        ei, eo = _run(ember, entry, s, args, diff)
        eo = [o for o in flat_outputs(eo) if hasattr(o, "requires_grad") and o.requires_grad]
        ws = [rng.standard_normal(tuple(o.shape) + ((2,) if o.is_complex() else ())) for o in to]

        def loss(lib, outs):
            tot = 0
            for o, w in zip(outs, ws):
                if o.is_complex():
                    o = lib.view_as_real(o.resolve_conj() if hasattr(o, "is_conj") and o.is_conj() else o)
                tot = tot + (o * lib.from_numpy(w)).sum()
            return tot
        tg = torch.autograd.grad(loss(torch, to), [ti[i] for i in diff], allow_unused=True)
        eg = ember.autograd.grad(loss(ember, eo), [ei[i] for i in diff], allow_unused=True)
        for a, b in zip(eg, tg):
            if b is None:
                assert a is None or not np.any(_np(a))
                continue
            _assert_close(a, b)


def test_ops_without_complex_kernels_raise_as_torch():
    z = ember.tensor([1 + 1j, 2j])
    for f, err, msg in ((lambda: z < z, NotImplementedError, "lt_cpu"),
                        (lambda: z.max(), NotImplementedError, "max_all"),
                        (lambda: z.max(0), RuntimeError, "does not support complex"),
                        (lambda: z.argmax(), RuntimeError, "does not support complex"),
                        (lambda: z.clamp(0, 1), NotImplementedError, "clamp is not supported for complex"),
                        (lambda: z.relu(), NotImplementedError, "clamp is not supported for complex"),
                        (lambda: z.sort(), RuntimeError, "Sort does not support complex"),
                        (lambda: z.sign(), NotImplementedError, "torch.sgn"),
                        (lambda: z.floor(), NotImplementedError, "floor is not supported for complex"),
                        (lambda: ember.maximum(z, z), RuntimeError, "maximum not implemented for complex"),
                        (lambda: z.softmax(0), NotImplementedError, "softmax"),
                        (lambda: z.erf(), NotImplementedError, "erf"),
                        (lambda: z % 2, NotImplementedError, "remainder")):
        with pytest.raises(err, match=msg):
            f()


_NO_COMPLEX_KERNEL = {  # ops PyTorch's CPU build refuses for complex input with NotImplementedError
    "median": lambda L, F, x: L.median(x.flatten()),
    "median_dim": lambda L, F, x: L.median(x, 1),
    "nanmedian": lambda L, F, x: L.nanmedian(x),
    "kthvalue": lambda L, F, x: L.kthvalue(x.flatten(), 2),
    "histc": lambda L, F, x: L.histc(x),
    "histc_range": lambda L, F, x: L.histc(x, min=0, max=1),
    "max_pool1d": lambda L, F, x: F.max_pool1d(x[0], 2),
    "max_pool1d_indices": lambda L, F, x: F.max_pool1d(x[0], 2, return_indices=True),
    "max_pool2d": lambda L, F, x: F.max_pool2d(x, 2),
    "max_pool3d": lambda L, F, x: F.max_pool3d(x[None], 2),
    "avg_pool3d": lambda L, F, x: F.avg_pool3d(x[None], 2),
    "adaptive_max_pool2d": lambda L, F, x: F.adaptive_max_pool2d(x, 2),
    "adaptive_max_pool2d_uneven": lambda L, F, x: F.adaptive_max_pool2d(x, 3),
    "interpolate": lambda L, F, x: F.interpolate(x, scale_factor=2),
    "interpolate_1d": lambda L, F, x: F.interpolate(x[0], scale_factor=2),
    "interpolate_bilinear": lambda L, F, x: F.interpolate(x, scale_factor=2, mode="bilinear"),
    "interpolate_area_3d": lambda L, F, x: F.interpolate(x[None], scale_factor=2, mode="area"),
    "prelu": lambda L, F, x: F.prelu(x, x.new_ones(1)),
}


@pytest.mark.parametrize("name", sorted(_NO_COMPLEX_KERNEL))
def test_ops_without_complex_kernels_name_torchs_kernel(torch, name):
    """NotImplementedError naming the CPU kernel PyTorch names (was ember's own RuntimeError)."""
    msgs = []
    for L in (ember, torch):
        x = L.randn(1, 2, 4, 4, dtype=L.complex64)
        with pytest.raises(NotImplementedError) as info:
            _NO_COMPLEX_KERNEL[name](L, L.nn.functional, x)
        msgs.append(str(info.value).split("'")[0])   # '"kernel" not implemented for '
    assert msgs[0] == msgs[1], msgs


# ----------------------------------------------------------------------------- autograd


def test_requires_grad_and_backward_rules_for_complex():
    z = ember.tensor([1 + 2j], requires_grad=True)
    assert z.requires_grad
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (z * z).sum().backward()
    with pytest.raises(RuntimeError, match="floating point and complex"):
        ember.tensor([1, 2]).requires_grad_()


def _real_loss_cases():
    return [
        ("abs2", lambda m, x, y: (m.complex(x, y).abs() ** 2).sum()),
        ("conj_mul", lambda m, x, y: (m.complex(x, y) * m.complex(x, y).conj()).real.sum()),
        ("exp_angle", lambda m, x, y: (m.complex(x, y).exp().angle() * x).sum()),
        ("matmul", lambda m, x, y: (m.complex(x, y) @ m.complex(y, x).mT).abs().sum()),
        ("div_sqrt", lambda m, x, y: ((m.complex(x, y) + 3) / (m.complex(y, x) + 2j)).sqrt().imag.sum()),
        ("real_times_complex", lambda m, x, y: (x * m.complex(y, x).tanh()).real.sum()),
        ("scalar_mul", lambda m, x, y: (x * (2 - 1j)).imag.sum() + (y * 1j).abs().sum()),
        ("fft_power", lambda m, x, y: (m.fft.fft(m.complex(x, y)).abs() ** 2).mean()),
        ("rfft_phase", lambda m, x, y: m.fft.rfft(x * y, norm="ortho").angle().cos().sum()),
        ("polar", lambda m, x, y: m.view_as_real(m.polar(x.abs() + 0.1, y)).pow(2).sum()),
        ("view_as_complex", lambda m, x, y: m.view_as_complex(m.stack([x, y], -1)).pow(3).real.sum()),
        ("var", lambda m, x, y: m.complex(x, y).var() + m.complex(y, x).std(0).sum()),
        ("vdot", lambda m, x, y: m.vdot(m.complex(x, y).reshape(-1), m.complex(y, y).reshape(-1)).abs()),
    ]


@pytest.mark.parametrize("name,f", _real_loss_cases(), ids=[c[0] for c in _real_loss_cases()])
def test_real_loss_through_complex_intermediates_matches_torch(torch, name, f):
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(xs, requires_grad=True)
        y = lib.tensor(ys, requires_grad=True)
        out = f(lib, x, y)
        out.backward()
        grads.append((out.detach(), x.grad, y.grad))
    for a, b in zip(*grads):
        _assert_close(a, b, 1e-9)


def _complex_inputs(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(ember.tensor(rng.standard_normal(s) + 1j * rng.standard_normal(s), requires_grad=True)
                 for s in shapes)


@pytest.mark.parametrize("f", [
    lambda z: z * z.conj() + z.exp(),
    lambda z: (z.abs() + 1).log() * z.angle(),
    lambda z: z.sgn() / (z + 3),
    lambda z: ember.view_as_real(z.sin() @ z.mT),
    lambda z: z.real * z.imag + z.sqrt(),
    lambda z: z.prod(0) + z.cumsum(1).sum(0),
    lambda z: ember.fft.ifft2(z * z, norm="forward"),
    # (PyTorch's own forward-mode tangent of complex logcumsumexp is nan; ember's matches differences)
    lambda z: ember.logcumsumexp(z, 0) + ember.logaddexp(z, z.flip(0) * 1j),
])
def test_gradcheck_complex128(f):
    z, = _complex_inputs((3, 3))
    assert gradcheck(f, (z,), check_forward_ad=True)
    assert gradgradcheck(f, (z,))


def test_gradcheck_catches_a_non_conjugated_rule():
    """A backward that forgets PyTorch's conjugate (g * f'(z) instead of g * conj(f'(z))) must fail."""
    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            z, = ctx.saved_tensors
            return g * 2 * z  # wrong: the conjugate is missing

    z, = _complex_inputs((4,))
    with pytest.raises(ember.autograd.GradcheckError):
        gradcheck(Square.apply, (z,))


def test_complex_fixes_found_by_the_op_db_sweep(torch):
    """Regressions from tests/test_torch_op_db_complex.py: each was a silent wrong answer."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 5, 4)) + 1j * rng.standard_normal((3, 5, 4))
    # the nuclear norm of a complex matrix is the sum of its singular values (not of its moduli')
    for x, kw in ((a[0], {}), (a, {"dim": (1, 2)}), (a, {"dim": (0, 2), "keepdim": True})):
        _assert_close(ember.norm(ember.from_numpy(x), "nuc", **kw), torch.norm(torch.from_numpy(x), "nuc", **kw))
    for L in (ember, torch):  # (over every dim of a 3-d input: refused)
        with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
            L.norm(L.from_numpy(a), "nuc")
    # complex QR in forward mode: R's diagonal stays real, so its tangent is real there
    t = rng.standard_normal((5, 4)) + 1j * rng.standard_normal((5, 4))
    for L in (ember, torch):
        _, got = L.func.jvp(L.linalg.qr, (L.from_numpy(a[0]),), (L.from_numpy(t),))
        if L is ember:
            mine = got
    for g, w in zip(mine, got):
        _assert_close(g, w, 1e-9)
    # istft: the window's gradient runs through the overlap-added squared window (the divisor) too,
    # and under vmap that divisor is the batched window's
    spec = rng.standard_normal((5, 6)) + 1j * rng.standard_normal((5, 6))
    w = rng.uniform(0.5, 1.5, 8)
    grads = []
    for L in (ember, torch):
        wt = L.from_numpy(w.copy()).requires_grad_(True)
        y = L.istft(L.from_numpy(spec), 8, window=wt)
        (y * L.arange(y.shape[-1], dtype=L.float64)).sum().backward()
        grads.append(wt.grad)
    _assert_close(*grads, 1e-9)
    cw = w + 1j * rng.uniform(0.5, 1.5, 8)  # a complex window: the divisor is its complex square's overlap-add
    spec2 = rng.standard_normal((8, 6)) + 1j * rng.standard_normal((8, 6))
    _assert_close(ember.istft(ember.from_numpy(spec2), 8, window=ember.from_numpy(cw), return_complex=True),
                  torch.istft(torch.from_numpy(spec2), 8, window=torch.from_numpy(cw), return_complex=True), 1e-12)
    ws = ember.from_numpy(np.stack([w, w[::-1].copy()]))
    got = ember.func.vmap(lambda v: ember.istft(ember.from_numpy(spec), 8, window=v))(ws)
    _assert_close(got, ember.stack([ember.istft(ember.from_numpy(spec), 8, window=v) for v in ws]), 1e-12)
    # true division by a Python complex number (it raised TypeError)
    for L in (ember, torch):
        got = [L.tensor(1 + 1j) / (2 + 3j), L.tensor([1.0, 2.0], dtype=L.float64) / (2 + 3j), L.tensor([1, 2]) / 1j]
        if L is ember:
            mine = got
    for g, w in zip(mine, got):
        _assert_close(g, w)
    # acosh's complex derivative where Re z < 0 (1 / sqrt(z^2 - 1) had the wrong sign there)
    zs = [-2 + 0.5j, -0.3 - 2j, 2 + 1j]
    grads = []
    for L in (ember, torch):
        x = L.tensor(zs, dtype=L.complex128).requires_grad_(True)
        L.view_as_real(L.acosh(x)).sum().backward()
        grads.append(x.grad)
    _assert_close(*grads, 1e-12)
    # complex to bool is "nonzero in either part" (the cast took the real part)
    v = [1j, float("nan") * 1j, 0j, 1e-30j]
    assert ember.tensor(v).bool().tolist() == torch.tensor(v).bool().tolist() == [True, True, False, True]
    # complex logsumexp is the principal log (imaginary part in (-pi, pi]), as PyTorch's
    for v in ([-1.2 - 7.58j], [1 + 10j, 2 + 20j]):
        _assert_close(ember.logsumexp(ember.tensor(v), 0), torch.logsumexp(torch.tensor(v), 0))
    # masked.median of a non-floating input returns the input's dtype (through the default float
    # dtype, as PyTorch), and refuses a fully masked slice
    z = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    _assert_close(ember.masked.median(ember.from_numpy(z), 0), torch.masked.median(torch.from_numpy(z), 0))
    _assert_close(ember.masked.median(ember.tensor([3, 1, 2]), 0), torch.masked.median(torch.tensor([3, 1, 2]), 0))
    with pytest.raises(ValueError, match="fully masked"):
        ember.masked.median(ember.tensor([[3, 1], [2, 2]]), 1, mask=ember.tensor([[True, True], [False, False]]))


def test_forward_mode_on_complex_matches_torch(torch):
    rng = np.random.default_rng(1)
    zs = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    ts = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    fs = [lambda m, z: z.exp() * z.conj(), lambda m, z: z.abs(), lambda m, z: m.fft.fft(z).angle(),
          lambda m, z: m.view_as_real(z * 1j).sum(0), lambda m, z: (z / (z.abs() + 1)).sgn()]
    for f in fs:
        _, te = ember.func.jvp(lambda z: f(ember, z), (ember.tensor(zs),), (ember.tensor(ts),))
        _, tt = torch.func.jvp(lambda z: f(torch, z), (torch.tensor(zs),), (torch.tensor(ts),))
        _assert_close(te, tt, 1e-9)


def test_vmap_over_complex_matches_a_loop():
    rng = np.random.default_rng(2)
    z = ember.tensor(rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3)))

    def f(v):
        return ember.view_as_real(v.conj() * v.exp()).sum(-1) + v.abs() + v.real

    got = ember.func.vmap(f)(z)
    want = ember.stack([f(row) for row in z])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    g = ember.func.vmap(ember.func.grad(lambda v: (v * v.conj()).real.sum()))(z)
    np.testing.assert_allclose(g.numpy(), 2 * z.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,kw", [("SGD", {"momentum": 0.5}), ("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
                                     ("AdamW", {}), ("RMSprop", {"momentum": 0.5, "centered": True}),
                                     ("Adagrad", {"lr_decay": 0.1})])
def test_optimizers_on_complex_parameters_match_torch(torch, name, kw):
    """Adaptive optimizers treat a complex parameter as two real ones (PyTorch's view_as_real)."""
    start = np.array([[1 + 2j, -0.5 + 1j, 3j]], dtype=np.complex64)
    res = []
    for lib in (ember, torch):
        q = lib.nn.Parameter(lib.tensor(start.copy()))
        opt = getattr(lib.optim, name)([q], lr=0.1, **kw)
        for _ in range(3):
            opt.zero_grad()
            ((q - (1 + 1j)).abs() ** 2).sum().backward()
            opt.step()
        res.append(q.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [
    lambda m: (lambda z: (z.__setitem__(0, 1j), z)[1])(m.zeros(3, dtype=m.cfloat)),
    lambda m: (lambda z: (z.__setitem__(0, 1j), z)[1])(m.zeros(3)),
    lambda m: (lambda z: (z.__setitem__(0, 1 + 0j), z)[1])(m.zeros(3)),
    lambda m: m.zeros(3).masked_fill(m.tensor([True, False, True]), 2j),
    lambda m: m.full_like(m.zeros(2), 1 + 1j),
    lambda m: m.full((2,), 1 + 1j, dtype=m.float32),
    lambda m: m.zeros(2).fill_(1j),
    lambda m: m.zeros(2).fill_(1 + 0j),
    lambda m: m.arange(4, dtype=m.cfloat),
    lambda m: m.tensor([1 + 1j]) == 1 + 1j,
    lambda m: m.tensor([1 + 1j, 3j]).float_power(2),
    lambda m: m.tensor([1 + 1j, 3j]).logit(),
    lambda m: m.tensor([1 + 1j, 3j]).logaddexp(m.tensor([1j, 0])),
    lambda m: m.tensor([1 + 1j, 3j]).xlogy(2),
    lambda m: m.tensor([1 + 1j, 3j]).hypot(m.tensor([1j, 0])),
    lambda m: m.tensor([1 + 1j, 3j]).nansum(),
    lambda m: m.tensor([1 + 1j, 3j]).logcumsumexp(0),
    lambda m: m.tensor([1 + 1j, 3j]).cummax(0)[0],
    lambda m: m.tensor([[1 + 1j, 3j]]).cov(),
    lambda m: m.tensor([[1 + 1j, 3j, 2], [1, 0, 2j]]).cov(),
    lambda m: m.tensor([[1 + 1j, 3j], [2, 1j]]).corrcoef(),
    # composites that once cast complex input to float32 (a silent loss of the imaginary part)
    lambda m: m.gradient(m.tensor([[1 + 2j, 3 - 1j, 0.5j], [2, -1 + 1j, 4j]]))[1],
    lambda m: m.gradient(m.tensor([1 + 2j, 3 - 1j, 0.5j, 2j]), edge_order=2)[0],
    lambda m: m.trapezoid(m.tensor([[1 + 2j, 3 - 1j, 0.5j], [2, -1 + 1j, 4j]])),
    lambda m: m.cumulative_trapezoid(m.tensor([1 + 2j, 3 - 1j, 0.5j]), dx=0.5),
    lambda m: m.ldexp(m.tensor([1 + 2j, 3 - 1j]), m.tensor([1, 3])),
    lambda m: m.masked.mean(m.tensor([[1 + 2j, 3 - 1j, 0.5j]]), 1, mask=m.tensor([[True, False, True]])),
    lambda m: m.masked.var(m.tensor([[1 + 2j, 3 - 1j, 0.5j]]), 1, mask=m.tensor([[True, True, True]])),
    lambda m: m.masked.std(m.tensor([[1 + 2j, 3 - 1j, 0.5j, 1]]), mask=m.tensor([[True, False, True, True]])),
    lambda m: m.masked.logsumexp(m.tensor([[1 + 2j, 3 - 1j, 0.5j]]), 1, mask=m.tensor([[True, False, True]])),
    lambda m: m.logcumsumexp(m.tensor([[1 + 2j, 0.5j], [2 - 1j, 4j], [1000 + 1j, 3j]]) * 3, 0),
    lambda m: m.renorm(m.tensor([[1 + 2j, 3 - 1j], [0.5j, 0.1]]), 2, 0, 1.0),
    lambda m: m.deg2rad(m.tensor([1 + 2j])),
    lambda m: m.rad2deg(m.tensor([1 + 2j])),
    lambda m: m.signbit(m.tensor([1 + 2j])),
    lambda m: m.isposinf(m.tensor([1 + 2j])),
    lambda m: m.isneginf(m.tensor([1 + 2j])),
    lambda m: m.nn.Linear(2, 2).to(m.cfloat).weight.detach().imag,
    lambda m: m.nn.Linear(2, 2, dtype=m.cdouble).float().weight.detach().abs() * 0,
])
def test_composites_and_scalars_on_complex_match_torch(torch, case):
    """Composite functions and Python complex scalars: PyTorch's values, or its error (a complex value
    into a real tensor raises unless its imaginary part is 0)."""
    try:
        want = case(torch)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(RuntimeError if isinstance(e, RuntimeError) else type(e)):
            case(ember)
        return
    _assert_close(case(ember), want, 1e-5)


def test_random_fills_of_complex_tensors():
    """rand/randn/uniform_/normal_ fill both parts, as PyTorch (randn and normal_: each part has half the
    variance, so the complex value has the asked-for variance; normal_'s mean goes to both parts)."""
    z = ember.zeros(100000, dtype=ember.cfloat).normal_(1.0, 2.0)
    for part in (z.real, z.imag):
        assert abs(part.mean().item() - 1.0) < 0.03 and abs(part.std().item() - 2 ** 0.5) < 0.03
    u = ember.zeros(100000, dtype=ember.cdouble).uniform_(1.0, 2.0)
    for part in (u.real, u.imag):
        assert 1.0 <= part.min().item() and part.max().item() < 2.0 and abs(part.mean().item() - 1.5) < 0.01
    r = ember.randn(100000, dtype=ember.cfloat)
    assert r.dtype is ember.cfloat and abs((r.abs() ** 2).mean().item() - 1.0) < 0.03
    q = ember.rand(1000, dtype=ember.cdouble)
    assert 0 <= q.imag.min().item() and q.imag.max().item() < 1 and q.imag.std().item() > 0.2
    w = ember.nn.Linear(3, 2, dtype=ember.cfloat).weight
    assert w.dtype is ember.cfloat and w.imag.abs().sum().item() > 0


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("grad", [False, True])
def test_scatter_and_index_reduce_on_complex_match_torch(torch, reduce, include_self, grad):
    """scatter_reduce on complex: values for sum/prod/mean, NotImplementedError for amax/amin (no complex
    ordering), and PyTorch's RuntimeError when a gradient is needed (its derivative is real-only);
    index_reduce has no complex kernel at all."""
    rng = np.random.default_rng(5)
    x, src = (rng.standard_normal((2, 5)) + 1j * rng.standard_normal((2, 5)) for _ in range(2))
    idx = np.array([[0, 1, 1, 3, 0], [4, 4, 2, 2, 2]])

    def f(m):
        a = m.tensor(x).requires_grad_(grad)
        return a.scatter_reduce(1, m.tensor(idx), m.tensor(src), reduce, include_self=include_self)

    def g(m):
        a = m.tensor(x).requires_grad_(grad)
        return a.index_reduce(1, m.tensor([0, 1, 1, 3, 0]), m.tensor(src), reduce if reduce != "sum" else "prod",
                              include_self=include_self)
    def h(m):  # a 1-d input: PyTorch's other kernel
        a = m.tensor(x[0]).requires_grad_(grad)
        return a.index_reduce(0, m.tensor([0, 1, 1, 3, 0]), m.tensor(src[0]), reduce if reduce != "sum" else "mean",
                              include_self=include_self)
    for case in (f, g, h):
        try:
            want = case(torch)
        except Exception as e:  # noqa: BLE001 - the oracle decides what is an error
            with pytest.raises(type(e), match=str(e).split("\n")[0][:40].replace('"', '.').replace("(", ".")):
                case(ember)
            continue
        _assert_close(case(ember), want, 1e-12)


@pytest.mark.parametrize("shape", [(1, 4, 3), (1, 4, 3, 3), (1, 4, 2, 2, 2)])
def test_local_response_norm_refuses_complex_as_torch(torch, shape):
    z = np.ones(shape, np.complex64)
    with pytest.raises(NotImplementedError) as te:
        torch.nn.functional.local_response_norm(torch.tensor(z), 2)
    kernel = str(te.value).split('"')[1]
    with pytest.raises(NotImplementedError, match=kernel):
        ember.nn.functional.local_response_norm(ember.tensor(z), 2)


def _z(m):
    return m.tensor(np.array([[1 + 2j, 3 - 1j, 0.5j], [2, -1 + 1j, 4j]]))


@pytest.mark.parametrize("case", [
    lambda m: m.masked.amax(_z(m), 1),
    lambda m: m.masked.amin(_z(m), 1, mask=m.tensor([[True, False, True], [True, True, False]])),
    lambda m: m.masked.argmax(_z(m), 1),
    lambda m: m.masked.argmin(_z(m), 1, mask=m.tensor([[True, False, True], [True, True, False]])),
    lambda m: m.unique(_z(m)),
    lambda m: m.unique_consecutive(_z(m)),
    lambda m: m.isin(_z(m), _z(m)),
    lambda m: m.unravel_index(_z(m), (2, 3)),
    lambda m: m.nn.functional.adaptive_avg_pool2d(_z(m)[None], 1),
    lambda m: m.nn.functional.adaptive_avg_pool2d(_z(m)[None], (1, 2)),
    lambda m: m.nn.functional.adaptive_avg_pool1d(_z(m), 1),
    lambda m: m.nn.functional.adaptive_avg_pool1d(_z(m), 2),
    lambda m: m.nn.functional.adaptive_avg_pool3d(_z(m)[None, None], 1),
    lambda m: m.nn.functional.adaptive_avg_pool3d(_z(m)[None, None], (1, 1, 2)),
    lambda m: m.nn.functional.embedding_bag(m.tensor([[0, 1]]), _z(m)),
    lambda m: m.cdist(_z(m), _z(m)),
    lambda m: m.nn.functional.glu(m.ones(2, 4, dtype=m.cdouble)),
    lambda m: m.nn.functional.pdist(_z(m)),
    lambda m: m.nn.functional.cosine_similarity(_z(m), _z(m)),
    lambda m: m.nn.functional.hardshrink(_z(m)),
    lambda m: m.tril_indices(3, 3, dtype=m.cfloat),
    lambda m: m.triu_indices(3, 3, dtype=m.cdouble),
    lambda m: m.segment_reduce(_z(m)[0], "sum", lengths=m.tensor([1, 2])),
    lambda m: m.cummax(_z(m)[0, 0], 0)[0],
    lambda m: m.cummin(_z(m), 0)[0],
])
def test_ops_refusing_complex_raise_as_torch(torch, case):
    """Ops without complex kernels in PyTorch's CPU build raise its exception type (or compute where it
    computes: a 1x1 adaptive average, a 0-dim cummax)."""
    _same_as_torch(torch, case)


@pytest.mark.parametrize("case", [
    lambda m: m.nn.functional.soft_margin_loss(_z(m), _z(m).flip(1)),
    lambda m: m.nn.functional.soft_margin_loss(_z(m), _z(m).flip(1), reduction="none"),
    lambda m: m.nn.functional.soft_margin_loss(_z(m).requires_grad_(), _z(m)),
    lambda m: m.masked.logaddexp(_z(m), _z(m).flip(0)),
    lambda m: m.masked.logaddexp(_z(m), _z(m), input_mask=m.ones(2, 3, dtype=m.bool)),
    lambda m: m.mode(m.tensor(1 + 2j)).values,
    lambda m: m.mode(_z(m)).values,
    lambda m: m.nn.functional.adaptive_avg_pool1d(m.zeros(0, 2, 3, dtype=m.cfloat), 2),
])
def test_more_complex_edges_match_torch(torch, case):
    _same_as_torch(torch, case)


def _same_as_torch(torch, case):
    """case(ember) raises PyTorch's exception type where case(torch) raises, else equals its value."""
    try:
        want = case(torch)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            case(ember)
        return
    _assert_close(case(ember), want, 1e-12)


@pytest.mark.parametrize("order", [0, 1])
def test_complex_logaddexp_and_logcumsumexp_take_torchs_branch(torch, order):
    """No overflow at large real parts, the imaginary part not wrapped, PyTorch's operand on a tie of
    real parts (logaddexp: the first; logcumsumexp: the new element); gradients too."""
    a = np.array([0.1 + 3.1j, 1000 + 1j, 1j, 2 + 1j, 0.5j, -np.inf + 0j])
    b = np.array([3.3j, 999 + 2j, 1j, 2 + 3j, 4j, -np.inf + 0j])
    a, b = (a, b) if order == 0 else (b, a)
    _assert_close(ember.logaddexp(ember.tensor(a), ember.tensor(b)), torch.logaddexp(torch.tensor(a), torch.tensor(b)),
                  1e-12)
    s = np.stack([a[:5], b[:5], a[:5] * 2])
    _assert_close(ember.logcumsumexp(ember.tensor(s), 0), torch.logcumsumexp(torch.tensor(s), 0), 1e-12)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(s, requires_grad=True)
        lib.view_as_real(lib.logcumsumexp(x, 0)).pow(2).sum().backward()
        grads.append(x.grad)
    _assert_close(grads[0], grads[1], 1e-9)


def test_addmm_with_complex_alpha_beta_gradients_match_torch(torch):
    """The gradients carry conj(alpha) and conj(beta) (PyTorch's convention), not alpha and beta."""
    rng = np.random.default_rng(7)
    arrs = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in ((2, 3), (2, 2), (2, 3))]
    res = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrs]
        out = lib.addmm(*ts, alpha=2 + 3j, beta=1 + 2j)
        lib.view_as_real(out).pow(2).sum().backward()
        res.append([out.detach()] + [t.grad for t in ts])
    for a, b in zip(*res):
        _assert_close(a, b, 1e-10)
