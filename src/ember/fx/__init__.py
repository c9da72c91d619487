"""ember.fx: capture a model as a graph people can read, rewrite and run.

``symbolic_trace(model)`` records what ``model.forward`` does into a ``Graph`` of ``Node``s and
returns a ``GraphModule`` whose forward is Python code generated from that graph.
"""
from .node import Node, map_arg, map_aggregate  # noqa: F401
from .graph import Graph, PythonCode  # noqa: F401
from .proxy import Proxy, Attribute, TraceError  # noqa: F401
from ._symbolic_trace import Tracer, symbolic_trace, wrap  # noqa: F401
from .graph_module import GraphModule  # noqa: F401
from .interpreter import Interpreter, Transformer  # noqa: F401
from .subgraph_rewriter import replace_pattern  # noqa: F401
from . import passes  # noqa: F401
