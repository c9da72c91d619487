"""gradcheck / gradgradcheck: passing checks, every failure path and its report."""
import importlib.util
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import Function, GradcheckError, gradcheck, gradgradcheck


def _has(mod):
    try:
        return importlib.util.find_spec(mod) is not None
    except ModuleNotFoundError:
        return False


def f64(*shape, rg=True):
    return ember.randn(*shape, dtype=ember.float64, requires_grad=rg)


class Triple(Function):
    """y = 3x whose backward is wrong at one element: d y[1,2] / d x[1,2] reported as 5."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        scale = np.full(tuple(g.shape), 3.0)
        scale[1, 2] = 5.0
        return g * ember.from_numpy(scale)


class Sin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class WrongSin(Sin):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos() * 1.5


# ----------------------------------------------------------------------------- passing checks


@pytest.mark.parametrize("fn", [ember.sigmoid, ember.tanh, ember.exp, lambda x: (x * x).sum(),
                                lambda x: x.t() @ x, lambda x: x, lambda x: x[1:, ::2]])
def test_builtin_ops_pass(fn):
    assert gradcheck(fn, (f64(3, 3),)) is True


def test_multiple_inputs_outputs_and_non_tensor_args():
    a, b = f64(3, 2), f64(2, 3)
    assert gradcheck(lambda p, q, k: ((p @ q) * k, p.exp().sum()), (a, b, 2.0))
    # an input that does not require grad is passed through, not differentiated
    c = f64(2, 3, rg=False)
    assert gradcheck(lambda p, q: p @ q, (a, c))


def test_single_tensor_input_and_custom_function():
    assert gradcheck(Sin.apply, f64(4))


def test_outputs_not_requiring_grad_are_skipped():
    x = f64(4)
    assert gradcheck(lambda t: (t.sin(), t.detach() * 2, (t > 0)), (x,))


def test_function_without_differentiable_outputs():
    x = f64(3)
    assert gradcheck(lambda t: ember.ones(2, dtype=ember.float64), (x,))
    with pytest.raises(GradcheckError, match="expected to be zero"):
        gradcheck(lambda t: t.detach() * 2, (x,))


def test_no_input_requires_grad_is_a_value_error():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(ember.sin, (f64(3, rg=False),))


def test_callers_tensors_untouched():
    x = f64(5)
    before = x.detach().numpy().copy()
    gradcheck(ember.tanh, (x,))
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x.grad is None


# ----------------------------------------------------------------------------- failures and reports


def test_wrong_backward_reports_the_worst_element():
    x = f64(3, 4)
    with pytest.raises(GradcheckError) as info:
        gradcheck(Triple.apply, (x,))
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "output 0 with respect to input 0" in msg
    assert "d output[0][1, 2] / d input[0][1, 2]" in msg
    assert "numerical 3," in msg and "analytical 5," in msg and "difference 2 " in msg
    assert "1 of 144 Jacobian entries" in msg
    assert len(msg) < 1000  # a report, not a Jacobian dump
    assert gradcheck(Triple.apply, (x,), raise_exception=False) is False


def test_wrong_backward_second_input_is_named():
    a, b = f64(2), f64(3)

    class Mul2(Function):
        @staticmethod
        def forward(ctx, p, q):
            ctx.save_for_backward(p, q)
            return p.sum() * q

        @staticmethod
        def backward(ctx, g):
            p, q = ctx.saved_tensors
            return (g * q).sum().expand(p.shape), g * p.sum() * 2  # second is wrong

    with pytest.raises(GradcheckError, match="output 0 with respect to input 1"):
        gradcheck(Mul2.apply, (a, b))


def test_zero_analytical_gradient_hint():
    x = f64(3)
    with pytest.raises(GradcheckError, match="analytical Jacobian is zero everywhere"):
        gradcheck(lambda t: ember.from_numpy(t.detach().numpy() * 2) + 0 * t, (x,))


def test_float32_input_warns():
    x = ember.randn(4, requires_grad=True)
    with pytest.warns(UserWarning, match=r"Input #0 .*float32.*Use float64"):
        gradcheck(ember.sigmoid, (x,), eps=1e-3, atol=1e-3, rtol=1e-2)


def test_float32_failure_passes_in_float64():
    x = ember.randn(4, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(GradcheckError) as info:
            gradcheck(ember.sin, (x,))
    msg = str(info.value)
    assert "float64" in msg and "PASSES" in msg and "rounding" in msg


def test_float32_failure_that_fails_in_float64_too():
    x = ember.randn(4, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(GradcheckError) as info:
            gradcheck(WrongSin.apply, (x,))
    msg = str(info.value)
    assert "FAILS too" in msg and "backward itself is wrong" in msg
    assert "float64; eps=1e-06" in msg  # the float64 re-check's own worst element is shown


def test_nondeterministic_backward():
    class Noisy(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + ember.randn(*g.shape, dtype=g.dtype) * 1e-3

    with pytest.raises(GradcheckError, match="not reentrant"):
        gradcheck(Noisy.apply, (f64(3),), atol=1e-2, check_undefined_grad=False)
    assert gradcheck(Noisy.apply, (f64(3),), atol=1e-2, nondet_tol=1e-1, check_undefined_grad=False)


def test_grad_dtype_check():
    class Cast(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).float()

    x = f64(3)
    assert gradcheck(Cast.apply, (x,), atol=1e-4)
    with pytest.raises(GradcheckError, match="dtype mismatch"):
        gradcheck(Cast.apply, (x,), atol=1e-4, check_grad_dtypes=True)


def test_undefined_output_grad():
    class NoMaterialize(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2  # fails when g is None

    x = f64(3)
    with pytest.raises(GradcheckError, match="undefined output grads"):
        gradcheck(NoMaterialize.apply, (x,))
    assert gradcheck(NoMaterialize.apply, (x,), check_undefined_grad=False)


def test_fast_mode():
    x = f64(3, 4)
    assert gradcheck(ember.tanh, (x,), fast_mode=True)
    assert gradcheck(lambda p, q: (p @ q, p.sum()), (f64(2, 3), f64(3, 2)), fast_mode=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(Triple.apply, (x,), fast_mode=True)
    msg = str(info.value)
    assert "fast_mode" in msg and "d output[0][1, 2] / d input[0][1, 2]" in msg


def test_no_mode_selected():
    with pytest.raises(ValueError):
        gradcheck(ember.sin, (f64(2),), check_backward_ad=False, check_forward_ad=False)


@pytest.mark.skipif(_has("ember.autograd.forward_ad"), reason="forward-mode AD is available")
def test_forward_ad_missing_is_explicit():
    with pytest.raises(NotImplementedError, match="forward_ad"):
        gradcheck(ember.sin, (f64(2),), check_forward_ad=True)


@pytest.mark.skipif(not _has("ember.autograd.forward_ad"), reason="needs ember.autograd.forward_ad")
def test_forward_ad_check():
    x = f64(3, 2)
    assert gradcheck(lambda t: (t.sin() * t).sum(0), (x,), check_forward_ad=True)
    assert gradcheck(ember.tanh, (x,), check_forward_ad=True, check_backward_ad=False)
    assert gradcheck(ember.tanh, (x,), check_forward_ad=True, fast_mode=True)

    class BadJvp(Sin):
        @staticmethod
        def jvp(ctx, t):
            return t * 2

    class BadJvpFw(BadJvp):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x.sin()

    with pytest.raises(GradcheckError, match="Forward-mode Jacobian mismatch"):
        gradcheck(BadJvpFw.apply, (x,), check_forward_ad=True, check_backward_ad=False)


@pytest.mark.skipif(_has("ember.func"), reason="vmap is available")
def test_batched_grad_missing_is_explicit():
    with pytest.raises(NotImplementedError, match="vmap"):
        gradcheck(ember.sin, (f64(2),), check_batched_grad=True)


@pytest.mark.skipif(not _has("ember.func"), reason="needs ember.func.vmap")
def test_batched_grad_check():
    assert gradcheck(lambda p, q: (p @ q).tanh(), (f64(2, 3), f64(3, 2)), check_batched_grad=True)
    # an output that does not depend on every input (None gradients under vmap)
    assert gradcheck(lambda p, q: (p.sin() * p, q.exp().sum(0)), (f64(2, 3), f64(3, 2)),
                     check_batched_grad=True)
    assert gradgradcheck(lambda p, q: (p @ q).tanh(), (f64(2, 3), f64(3, 2)), check_batched_grad=True)


@pytest.mark.skipif(not (_has("ember.func") and _has("ember.autograd.forward_ad")),
                    reason="needs ember.func.vmap and forward_ad")
def test_batched_forward_grad_and_forward_over_reverse():
    a, b = f64(2, 3), f64(3, 2)
    fns = [lambda p, q: (p @ q).tanh(), lambda p, q: (p.sigmoid().sum(), q.exp().log_softmax(1))]
    for fn in fns:
        assert gradcheck(fn, (a, b), check_forward_ad=True, check_batched_forward_grad=True)
        assert gradgradcheck(fn, (a, b), check_fwd_over_rev=True)
    with pytest.raises(ValueError, match="check_forward_ad"):
        gradcheck(fns[0], (a, b), check_batched_forward_grad=True)


# ----------------------------------------------------------------------------- gradgradcheck


def test_gradgradcheck_passes():
    x = f64(4)
    assert gradgradcheck(ember.sigmoid, (x,))
    assert gradgradcheck(lambda a, b: (a * b).tanh(), (x, f64(4)))
    assert gradgradcheck(lambda a: (a @ a.t()).sum(1), (f64(2, 3),), gen_non_contig_grad_outputs=True)


def test_gradgradcheck_catches_a_non_differentiable_backward():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() ** 2  # the second derivative through x is lost

    x = f64(3)
    assert gradcheck(Cube.apply, (x,))
    with pytest.raises(GradcheckError, match="numerical .* analytical"):
        gradgradcheck(Cube.apply, (x,))


def test_gradgradcheck_given_grad_outputs():
    x = f64(3)
    go = f64(3)
    assert gradgradcheck(ember.sin, (x,), (go,))


def test_matches_torch_verdicts(torch):
    """Same functions, same verdicts as torch.autograd.gradcheck."""
    xe = f64(3, 2)
    xt = torch.tensor(xe.detach().numpy(), requires_grad=True)
    for name in ("sigmoid", "tanh", "exp"):
        assert gradcheck(getattr(ember, name), (xe,)) == torch.autograd.gradcheck(getattr(torch, name), (xt,))

    class TWrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * 1.5

    assert gradcheck(WrongSin.apply, (xe,), raise_exception=False) is \
        torch.autograd.gradcheck(TWrong.apply, (xt,), raise_exception=False) is False
