"""Proxy: the stand-in value that flows through a function while it is traced; every operation
on it is recorded as a Node."""
import dis
import operator
import os
import sys

from .node import Node, BINARY_OPERATORS, UNARY_OPERATORS

_FX_DIR = os.path.dirname(os.path.abspath(__file__))


class TraceError(ValueError):
    pass


def _user_frame():
    """The innermost frame outside ember.fx: the user's line that did something untraceable."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_FX_DIR):
        f = f.f_back
    return f


def _describe(frame):
    if frame is None:
        return "unknown location"
    import linecache
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    where = f'File "{frame.f_code.co_filename}", line {frame.f_lineno}, in {frame.f_code.co_name}'
    return f"{where}: {line}" if line else where


class Proxy:
    """A value of the traced program: operators, Tensor methods and attribute reads on it add Nodes
    to the tracer's graph and return new Proxies."""

    def __init__(self, node, tracer=None):
        if not isinstance(node, Node):
            raise TypeError(f"Proxy wraps a Node, got {type(node).__name__}")
        self.node = node
        self.tracer = tracer

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        frame = sys._getframe(1)
        inst = None
        for i in dis.get_instructions(frame.f_code):
            if i.offset == frame.f_lasti:
                inst = i
                break
        if inst is not None and inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
        if inst is not None and inst.opname == "UNPACK_EX":
            raise TraceError("starred unpacking of a symbolically traced value is not supported "
                             f"({_describe(_user_frame())})")
        raise TraceError("Proxy object cannot be iterated: the number of elements of a "
                         f"symbolically traced value is unknown ({_describe(_user_frame())}). "
                         "Unpack it into a fixed number of names, or index it")

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default "
                           f"({_describe(_user_frame())}). If you want this call to be recorded, "
                           "call ember.fx.wrap('len') at module scope")

    def __index__(self):
        raise TraceError("symbolically traced variables cannot be used as Python integers "
                         f"(indices, range bounds) ({_describe(_user_frame())})")

    def __hash__(self):
        return id(self)

    def keys(self):
        return self.tracer.create_proxy("call_method", "keys", (self,), {})

    def __ember_dispatch__(self, op, args, params):
        """An ember op reached with this Proxy among its arguments (outside symbolic_trace's
        patched functions, e.g. under a GraphAppendingTracer): record a call of the op itself,
        with its parameters as keyword arguments, instead of running its kernel."""
        return self.tracer.create_proxy("call_function", op, args, dict(params))

    def __setitem__(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class Attribute(Proxy):
    """``proxy.name``: a getattr Node made on first use, or a call_method when called."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _binary(op):
    def fwd(self, other):
        return self.tracer.create_proxy("call_function", op, (self, other), {})

    def rev(self, other):
        return self.tracer.create_proxy("call_function", op, (other, self), {})
    return fwd, rev


def _unary(op):
    return lambda self: self.tracer.create_proxy("call_function", op, (self,), {})


for _name, (_op, _sym, _reflected) in BINARY_OPERATORS.items():
    _f, _r = _binary(_op)
    setattr(Proxy, f"__{_name}__", _f)
    if _reflected:
        setattr(Proxy, f"__r{_name}__", _r)
for _name, (_op, _sym) in UNARY_OPERATORS.items():
    setattr(Proxy, f"__{_name}__", _unary(_op))
Proxy.__getitem__ = _binary(operator.getitem)[0]
Proxy.__hash__ = lambda self: id(self)
