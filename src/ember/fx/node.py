"""Node: one operation of an FX graph, with its inputs (args/kwargs) and its users."""
import builtins
import operator
from typing import Any, Callable, Union

# the annotation types of torch.fx.node: what a Node's target and its arguments may be
Target = Union[Callable[..., Any], str]
Argument = Any  # None, numbers, strings, slices, dtypes, devices, Nodes and containers of these

# The Python operators a traced value supports, in one table used by Proxy (its magic methods),
# the tracer (Tensor operators meeting a Proxy) and code generation (infix source):
# magic-method name -> (function recorded as call_function target, infix symbol, has reflected form)
BINARY_OPERATORS = {
    "add": (operator.add, "+", True), "sub": (operator.sub, "-", True), "mul": (operator.mul, "*", True),
    "truediv": (operator.truediv, "/", True), "floordiv": (operator.floordiv, "//", True),
    "mod": (operator.mod, "%", True), "pow": (operator.pow, "**", True),
    "matmul": (operator.matmul, "@", True), "lshift": (operator.lshift, "<<", True),
    "rshift": (operator.rshift, ">>", True), "and": (operator.and_, "&", True),
    "or": (operator.or_, "|", True), "xor": (operator.xor, "^", True),
    "eq": (operator.eq, "==", False), "ne": (operator.ne, "!=", False), "lt": (operator.lt, "<", False),
    "le": (operator.le, "<=", False), "gt": (operator.gt, ">", False), "ge": (operator.ge, ">=", False),
}
UNARY_OPERATORS = {"neg": (operator.neg, "-"), "pos": (operator.pos, "+"), "invert": (operator.invert, "~"),
                   "abs": (operator.abs, None)}

_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")


def map_aggregate(a, fn):
    """Apply ``fn`` to every leaf of a nested tuple/list/dict/slice structure, keeping its shape."""
    t = type(a)
    if t is tuple or isinstance(a, tuple):
        vals = [map_aggregate(x, fn) for x in a]
        if hasattr(a, "_fields"):  # namedtuple
            return t(*vals)
        return tuple(vals) if t is tuple else t(vals)
    if t is list or isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if t is slice:
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Apply ``fn`` to every Node in a nested argument structure."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _collect_nodes(a, out):
    if isinstance(a, Node):
        out.setdefault(a)
    elif isinstance(a, (tuple, list)):
        for x in a:
            _collect_nodes(x, out)
    elif isinstance(a, dict):
        for x in a.values():
            _collect_nodes(x, out)
    elif type(a) is slice:
        _collect_nodes(a.start, out)
        _collect_nodes(a.stop, out)
        _collect_nodes(a.step, out)


# ----------------------------------------------------------------------------- names of targets

_EMBER_NAMES = None


def _ember_public_names():
    """id(function) -> 'ember.relu' / 'ember.nn.functional.relu' for the public namespaces."""
    global _EMBER_NAMES
    if _EMBER_NAMES is None:
        import importlib
        names = {}
        for modname in ("ember", "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft"):
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                continue
            for k, v in vars(mod).items():
                if k.startswith("_") or not callable(v) or isinstance(v, type):
                    continue
                old = names.get(id(v))
                # the first namespace wins; within it, the function's own name over an alias
                if old is None or (old.rsplit(".", 1)[0] == modname and k == getattr(v, "__name__", None)):
                    names[id(v)] = modname + "." + k
        _EMBER_NAMES = names
    return _EMBER_NAMES


def _qualified_name(fn):
    """A readable, importable name for a call_function target: operator.add, ember.relu, ..."""
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return "builtins." + fn.__name__
    if getattr(operator, getattr(fn, "__name__", ""), None) is fn:
        return "operator." + fn.__name__
    n = _ember_public_names().get(id(fn))
    if n is not None:
        return n
    mod = getattr(fn, "__module__", None) or "__main__"
    return mod + "." + getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))


def _format_arg(a):
    if isinstance(a, Node):
        return "%" + a.name
    if isinstance(a, tuple) and not hasattr(a, "_fields"):
        items = ", ".join(_format_arg(x) for x in a)
        return f"({items},)" if len(a) == 1 else f"({items})"
    if isinstance(a, list):
        return "[" + ", ".join(_format_arg(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in a.items()) + "}"
    return str(a)


class Node:
    """One operation in a Graph.

    ``op`` is one of placeholder, get_attr, call_function, call_method, call_module, output;
    ``target`` is what it calls (a function for call_function, a name otherwise); ``args`` and
    ``kwargs`` hold Nodes and constants; ``users`` are the Nodes that consume this one.
    """

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPS:
            raise ValueError(f"Node op must be one of {_OPS[:-1]}, got {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"call_function Node target must be callable, got {target!r}")
        if op in ("get_attr", "call_method", "call_module", "placeholder") and not isinstance(target, str):
            raise ValueError(f"{op} Node target must be a string, got {type(target).__name__}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users = {}
        self.meta = {}
        self._input_nodes = {}
        self._args = ()
        self._kwargs = {}
        self._prev = self
        self._next = self
        self._erased = False
        self._update_args_kwargs(args, kwargs)

    # ------------------------------------------------------------------ inputs
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    def _update_args_kwargs(self, args, kwargs):
        args = tuple(args) if not isinstance(args, tuple) else args
        kwargs = dict(kwargs)
        for old in self._input_nodes:
            old.users.pop(self, None)
        inputs = {}
        _collect_nodes(args, inputs)
        _collect_nodes(kwargs, inputs)
        for n in inputs:
            if n.graph is not self.graph:
                raise RuntimeError(f"Node {self.name!r} cannot take Node {n.name!r} from another graph "
                                   "as input; copy it with graph.node_copy() first")
        self._args, self._kwargs, self._input_nodes = args, kwargs, inputs
        for n in inputs:
            n.users.setdefault(self)

    @property
    def all_input_nodes(self):
        """The Nodes this one reads, in the order they first appear in args then kwargs."""
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        a = list(self._args)
        a[idx] = arg
        self.args = tuple(a)

    def update_kwarg(self, key, arg):
        k = dict(self._kwargs)
        k[key] = arg
        self.kwargs = k

    def replace_input_with(self, old_input, new_input):
        """Replace every use of ``old_input`` in this Node's args and kwargs by ``new_input``."""
        def sub(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, sub), map_arg(self._kwargs, sub))

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Make every user of this Node use ``replace_with`` instead; returns the users changed."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = []
        for user in list(self.users):
            if not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    # ------------------------------------------------------------------ position in the graph
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Insert (or move) Node ``x`` right before this one."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x):
        """Insert (or move) Node ``x`` right after this one."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # ------------------------------------------------------------------ properties
    def is_impure(self):
        """Whether removing this Node could change the program even if nothing uses its value."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful_functions() or \
                getattr(self.target, "__name__", "").endswith("_")
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.startswith("__")
        if self.op == "call_module" and self.graph.owning_module is not None:
            try:
                mod = self.graph.owning_module.get_submodule(self.target)
            except Exception:
                return False
            return bool(getattr(mod, "_is_impure", False))
        return False

    @property
    def stack_trace(self):
        return self.meta.get("stack_trace")

    def format_node(self):
        """This Node as one line of ``print(graph)``, in PyTorch's format."""
        if self.op == "output":
            return f"return {self._args[0]}" if self._args else "return None"
        ty = f"{_type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {ty}[num_users={len(self.users)}] = "
        if self.op == "placeholder":
            default = f"(default={self._args[0]!r})" if self._args else ""
            return f"{head}placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head}get_attr[target={self.target}]"
        target = _qualified_name(self.target) if self.op == "call_function" else self.target
        return (f"{head}{self.op}[target={target}](args = {_format_arg(self._args)}, "
                f"kwargs = {_format_arg(self._kwargs)})")

    def __repr__(self):
        return self.name


_SIDE_EFFECTS = None


def _side_effectful_functions():
    global _SIDE_EFFECTS
    if _SIDE_EFFECTS is None:
        from ._symbolic_trace import _check_specialized
        import ember
        fns = {operator.setitem, builtins.print, _check_specialized}
        for name in ("manual_seed", "_assert"):
            f = getattr(ember, name, None)
            if f is not None:
                fns.add(f)
        _SIDE_EFFECTS = fns
    return _SIDE_EFFECTS


def _type_repr(t):
    """How a type annotation prints: int, ember.Tensor, typing.List[int] ..."""
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        if t.__module__.startswith("ember"):
            import ember
            if getattr(ember, t.__name__, None) is t:
                return "ember." + t.__name__
        return f"{t.__module__}.{t.__qualname__}"
    return repr(t).replace("ember._tensor.", "ember.")



