"""no_grad / enable_grad / set_grad_enabled / inference_mode: context managers, decorators,
thread-local state."""
import threading

import pytest

import ember


def test_no_grad_context_and_decorator():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        y = x * 2
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None

    @ember.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad

    @ember.no_grad
    def g(t):
        return t * 2

    assert not g(x).requires_grad


def test_enable_grad_inside_no_grad():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        with ember.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad

    @ember.enable_grad()
    def f(t):
        return t * 2

    with ember.no_grad():
        assert f(x).requires_grad


def test_set_grad_enabled_function_and_context():
    x = ember.ones(2, requires_grad=True)
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    ember.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_state_restored_after_exception():
    with pytest.raises(ValueError):
        with ember.no_grad():
            raise ValueError
    assert ember.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["enabled"] = ember.is_grad_enabled()
        x = ember.ones(1, requires_grad=True)
        seen["rg"] = (x * 2).requires_grad

    with ember.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not ember.is_grad_enabled()
    assert seen == {"enabled": True, "rg": True}


def test_inference_mode():
    x = ember.ones(2, requires_grad=True)
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
        y = x * 2
        z = ember.ones(2)
    assert not y.requires_grad and y.is_inference() and z.is_inference()
    assert not x.is_inference() and not ember.is_inference_mode_enabled()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        y.add_(1)
    with ember.inference_mode(False):
        w = x * 2
    assert w.requires_grad

    @ember.inference_mode()
    def f(t):
        return t * 2

    assert f(x).is_inference()


def test_no_grad_nests_with_inference():
    with ember.inference_mode():
        with ember.enable_grad():
            assert ember.is_grad_enabled()
    assert ember.is_grad_enabled()
