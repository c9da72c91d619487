"""ember.profiler: what every op, backward node and user range costs.

Every dispatched op is an event named as PyTorch names it (``aten::<op>``; the chrome trace keeps
ember's own op name in the event's args), every backward node run by the engine an
event named as its class (``MulBackward0``), ``record_function`` ranges and ``ProfilerStep#N``
are ``user_annotation`` events; nesting gives self time. Results come as PyTorch's tables
(``key_averages().table()``) and as chrome traces that Perfetto and Holistic Trace Analysis read.
The profiler is a dispatch listener: with none active, dispatch keeps its fast path.
"""
from ._events import EventList, FunctionEvent, FunctionEventAvg, format_time, format_memory  # noqa: F401
from ._profile import (ProfilerAction, ProfilerActivity, profile, record_function, schedule,  # noqa: F401
                       supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "record_function", "schedule", "ProfilerActivity", "ProfilerAction",
           "tensorboard_trace_handler", "supported_activities"]
