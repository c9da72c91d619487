"""Anomaly detection: nodes remember where their forward ran (code objects and line numbers,
formatted only if backward fails), and NaNs produced by a backward node are errors."""
from .. import _dispatch as D


class detect_anomaly:
    """Context manager and decorator enabling anomaly detection."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        self.prev = None

    def __enter__(self):
        self.prev = (D.state.anomaly, D.state.anomaly_nan)
        set_detect_anomaly(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        set_detect_anomaly(*self.prev)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly(self.check_nan):
                return fn(*a, **k)
        return wrapper


class set_detect_anomaly:
    """Sets anomaly mode at once; restores the previous mode when used as a context manager."""

    def __init__(self, mode, check_nan=True):
        self.prev = (D.state.anomaly, D.state.anomaly_nan)
        D.state.anomaly = bool(mode)
        D.state.anomaly_nan = bool(check_nan)
        D.state.refresh()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        D.state.anomaly, D.state.anomaly_nan = self.prev
        D.state.refresh()
        return False


def is_anomaly_enabled():
    return D.state.anomaly


def is_anomaly_check_nan_enabled():
    return D.state.anomaly_nan
