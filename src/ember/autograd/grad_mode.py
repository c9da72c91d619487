"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode. Thread-local; each is a
context manager and a decorator (with or without parentheses)."""
import functools
import inspect

from .. import _dispatch as D

_gm = D.grad_mode


class _Mode:
    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen(*a, **k):
                g = fn(*a, **k)
                with self._clone():
                    resp = g.send(None)
                while True:
                    try:
                        req = yield resp
                    except GeneratorExit:
                        g.close()
                        raise
                    with self._clone():
                        try:
                            resp = g.send(req)
                        except StopIteration as e:
                            return e.value
            return gen

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self._clone():
                return fn(*a, **k)
        return wrapper

    def _clone(self):
        return type(self)()


class _FixedMode(_Mode):
    """Grad mode set to ``_enabled`` inside the block; usable as ``@mode`` or ``@mode()``."""
    _enabled = None

    def __new__(cls, fn=None):
        self = object.__new__(cls)
        if fn is not None and callable(fn):  # used as a decorator without parentheses
            return self(fn)
        return self

    def __init__(self, fn=None):
        pass

    def __enter__(self):
        self.prev = _gm.enabled
        _gm.enabled = self._enabled

    def __exit__(self, *exc):
        _gm.enabled = self.prev
        return False


class no_grad(_FixedMode):
    """Context manager (and decorator) that turns gradient recording off."""
    _enabled = False


class enable_grad(_FixedMode):
    """Context manager (and decorator) that turns gradient recording on."""
    _enabled = True


class set_grad_enabled(_Mode):
    """Sets the mode at once (a function call) and restores it when used as a context manager."""

    def __init__(self, mode):
        self.prev = _gm.enabled
        self.mode = bool(mode)
        _gm.enabled = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _gm.enabled = self.prev
        return False

    def _clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_Mode):
    """Like no_grad, and tensors made inside are inference tensors (is_inference() is True)."""

    def __new__(cls, mode=True):
        self = object.__new__(cls)
        if callable(mode) and not isinstance(mode, bool):
            self.mode = True
            return self(mode)
        return self

    def __init__(self, mode=True):
        self.mode = bool(mode) if not callable(mode) else True

    def __enter__(self):
        self.prev = (_gm.enabled, _gm.inference)
        if self.mode:
            _gm.enabled = False
            _gm.inference = True
        else:
            _gm.inference = False
        D.state.inference_depth += 1 if self.mode else 0
        D.state.refresh()

    def __exit__(self, *exc):
        _gm.enabled, _gm.inference = self.prev
        D.state.inference_depth -= 1 if self.mode else 0
        D.state.refresh()
        return False

    def _clone(self):
        return inference_mode(self.mode)


def is_grad_enabled():
    """Whether gradient recording is on."""
    return _gm.enabled


def is_inference_mode_enabled():
    """Whether an inference_mode block is active."""
    return _gm.inference
