"""Anomaly detection: switches, forward tracebacks on backward errors (with the parent chain for
nested backward), NaN checks, and unchanged gradients."""
import warnings

import numpy as np
import pytest

import ember
from ember import autograd


@pytest.fixture(autouse=True)
def _anomaly_off():
    yield
    autograd.set_detect_anomaly(False)


class Fails(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("Some error in backward")


class NanBackward(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def forward_site(x):
    return Fails.apply(x).sum()  # FORWARD-SITE


def _backward_error(fn, *args):
    """Run fn(*args).backward(), return (exception, warning texts)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(Exception) as info:
            fn(*args).backward()
    return info.value, [str(x.message) for x in w]


def test_switches():
    assert not autograd.is_anomaly_enabled() and not ember.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = autograd.detect_anomaly(check_nan=False)
    with ctx:
        assert autograd.is_anomaly_enabled() and not autograd.is_anomaly_check_nan_enabled()
        with autograd.set_detect_anomaly(False):
            assert not autograd.is_anomaly_enabled()
        assert autograd.is_anomaly_enabled()
    assert not autograd.is_anomaly_enabled() and autograd.is_anomaly_check_nan_enabled()
    autograd.set_detect_anomaly(True)
    assert autograd.is_anomaly_enabled()
    autograd.set_detect_anomaly(False)
    assert not autograd.is_anomaly_enabled()


def test_decorator():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @autograd.detect_anomaly()
        def f():
            return autograd.is_anomaly_enabled()
    assert f() is True
    assert not autograd.is_anomaly_enabled()


def test_forward_traceback_on_backward_error():
    with autograd.set_detect_anomaly(True):
        err, warns = _backward_error(forward_site, ember.rand(3, requires_grad=True))
    assert "Some error in backward" in str(err)
    note = "".join(getattr(err, "__notes__", []))
    assert note.startswith("Error detected in FailsBackward. Traceback of forward call that caused the error:")
    assert "FORWARD-SITE" in note and "in forward_site" in note and __file__ in note
    assert "ember/autograd" not in note  # ember's own frames are left out
    assert any("Traceback of forward call" in w and "FORWARD-SITE" in w for w in warns)


def test_no_traceback_outside_anomaly_mode():
    err, warns = _backward_error(forward_site, ember.rand(3, requires_grad=True))
    assert not getattr(err, "__notes__", None)
    assert not any("Traceback of forward call" in w for w in warns)


def test_node_created_outside_anomaly_mode():
    out = forward_site(ember.rand(3, requires_grad=True))
    with autograd.set_detect_anomaly(True):
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError) as info:
                out.backward()
    assert "No forward pass information available" in "".join(info.value.__notes__)


def test_registry_op_error_carries_forward_site():
    """An in-place change to a saved tensor: the version error names the op, anomaly mode adds
    where that op ran."""
    with autograd.set_detect_anomaly(True):
        x = ember.randn(3, requires_grad=True)
        y = x.exp()  # SAVED-SITE
        y.add_(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
                y.sum().backward()
    note = "".join(info.value.__notes__)
    assert "ExpBackward0" in note and "SAVED-SITE" in note


def test_nested_backward_parent_chain():
    class Bad(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("bad double backward")

    class Outer(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return Bad.apply(2 * x * g)  # INNER-SITE

    with autograd.set_detect_anomaly(True):
        x = ember.randn(3, requires_grad=True)
        y = Outer.apply(x)  # OUTER-SITE
        (g,) = autograd.grad(y.sum(), x, create_graph=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ValueError) as info:
                g.sum().backward()
    notes = info.value.__notes__
    assert len(notes) == 1
    first, _, parent = notes[0].partition("Previous calculation was induced by a node")
    assert "BadBackward" in first and "INNER-SITE" in first
    assert "OUTER-SITE" in parent


def test_nan_in_custom_backward():
    with autograd.set_detect_anomaly(True):
        x = ember.ones(3, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match=r"Function 'NanBackwardBackward' returned nan values in "
                                                   r"its 0th output\."):
                NanBackward.apply(x).sum().backward()


def test_nan_in_op_matches_torch(torch):
    messages = []
    for lib in (ember, torch):
        x = lib.tensor([-1.0, 4.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(invalid="ignore"), lib.autograd.detect_anomaly():
                y = lib.sqrt(x).sum()
                with pytest.raises(RuntimeError) as info:
                    y.backward()
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "Function 'SqrtBackward0' returned nan values in its 0th output."


def test_check_nan_off():
    x = ember.ones(3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly(check_nan=False):
            NanBackward.apply(x).sum().backward()
    assert np.isnan(x.grad.numpy()).all()


def test_gradients_unchanged():
    def run():
        ember.manual_seed(0)
        w = ember.randn(5, 4, requires_grad=True)
        b = ember.randn(5, requires_grad=True)
        x = ember.randn(8, 4)
        loss = (x @ w.t() + b).tanh().log_softmax(1).sum()
        loss.backward()
        return w.grad.numpy().copy(), b.grad.numpy().copy()

    plain = run()
    with autograd.set_detect_anomaly(True):
        anomalous = run()
    for p, a in zip(plain, anomalous):
        np.testing.assert_array_equal(p, a)
