"""Anomaly detection: nodes remember where their forward ran (code objects and line numbers,
formatted only if backward fails), and NaNs produced by a backward node are errors.

The switches live in ``_dispatch.state``: anomaly mode takes dispatch off its fast path so that
``graph.record`` (and custom Functions) can capture the forward stack of every node; the engine
then runs each node through ``graph._apply_anomaly``.
"""
import functools
import warnings

from .. import _dispatch as D

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]


def _set(mode, check_nan):
    D.state.anomaly = bool(mode)
    D.state.anomaly_nan = bool(check_nan)
    D.state.refresh()


class detect_anomaly:
    """Context manager and decorator that enables anomaly detection for autograd.

    Every backward node created inside records the stack of its forward call; if its backward
    raises, the error carries that stack ("Traceback of forward call that caused the error"),
    also issued as a warning. With ``check_nan`` a backward that returns NaN is an error naming
    the node and the output. Debugging only: it slows every op down."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        self._prev = []
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should "
                      "only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self._prev.append((D.state.anomaly, D.state.anomaly_nan))
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self._prev.pop())
        return False

    def __call__(self, fn):
        check_nan = self.check_nan

        @functools.wraps(fn)
        def wrapper(*a, **k):
            prev = (D.state.anomaly, D.state.anomaly_nan)
            _set(True, check_nan)
            try:
                return fn(*a, **k)
            finally:
                _set(*prev)
        return wrapper


class set_detect_anomaly:
    """Sets anomaly detection on or off at once; used as a context manager it restores the
    previous setting on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = (D.state.anomaly, D.state.anomaly_nan)
        _set(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self.prev)
        return False


def is_anomaly_enabled():
    """Whether anomaly detection is on."""
    return D.state.anomaly


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection also checks backward outputs for NaN."""
    return D.state.anomaly_nan
