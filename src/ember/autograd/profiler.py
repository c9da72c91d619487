"""ember.autograd.profiler: the classic profiler entry point (``with profile() as prof``)."""
from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from ..profiler._profile import _LegacyProfile as profile, record_function  # noqa: F401

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]
