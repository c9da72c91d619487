"""torch._dynamo as far as eager programs touch it. ember has no bytecode compiler (ember.compile
returns its argument), so ``is_compiling()`` is False, ``disable``/``allow_in_graph`` return what
they wrap, ``reset()`` has nothing to clear, and ``config`` holds the settings programs write,
which change nothing here."""
import sys as _sys

from . import config  # noqa: F401

__all__ = ["config", "is_compiling", "reset", "disable", "allow_in_graph", "disallow_in_graph",
           "graph_break", "mark_dynamic", "mark_static", "is_dynamo_supported"]


def is_compiling():
    return False


def is_dynamo_supported():
    return False


def reset():
    """Clears compiled code caches: ember compiles nothing."""


def disable(fn=None, recursive=True, *, reason=None):
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn):
    return fn


disallow_in_graph = allow_in_graph


def graph_break(msg=""):
    """A graph break in compiled code: eager code has no graph to break."""


def mark_dynamic(t, index, *, min=None, max=None):
    """Marks a dimension dynamic for the compiler: eager code has no compiler."""


def mark_static(t, index=None):
    """Marks a dimension static for the compiler: eager code has no compiler."""


_sys.modules.setdefault(__name__ + ".config", config)
