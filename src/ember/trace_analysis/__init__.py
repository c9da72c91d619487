"""ember.trace_analysis: reading trace folders (ember's and PyTorch's Kineto traces, one file per
rank, ``.json`` or ``.json.gz``) and comparing them with ``TraceDiff``, whose API and results
follow Holistic Trace Analysis. Needs the optional extras pandas (and plotly for figures)."""
from ._reader import TraceData, TraceFormatError, read_trace_dir, read_trace_file  # noqa: F401
from ._trace_diff import DeviceType, LabeledTrace, TraceDiff, shorten_name  # noqa: F401

__all__ = ["TraceDiff", "LabeledTrace", "DeviceType", "TraceFormatError", "read_trace_file",
           "read_trace_dir", "shorten_name"]
