"""Graph: an ordered list of Nodes, the names they carry, and the Python code they become."""
import builtins
import inspect
import keyword
import math
import operator
import re

from .node import Node, map_arg, _qualified_name, _format_arg, BINARY_OPERATORS, UNARY_OPERATORS  # noqa: F401

_ILLEGAL = re.compile(r"[^0-9a-zA-Z_]+")
_SUFFIX = re.compile(r"(.*)_(\d+)$")


def _snake_case(s):
    """'camelCase' -> 'camel_case' (names of call_function targets)."""
    out = []
    for i, c in enumerate(s):
        if c.isupper() and i and (s[i - 1].islower() or s[i - 1].isdigit()):
            out.append("_")
        out.append(c.lower())
    return "".join(out)


class _Namespace:
    """Unique, legal Python identifiers: 'relu', 'relu_1', ... never a keyword or a builtin."""

    def __init__(self, reserved=()):
        self._used = set(reserved)
        self._base_count = {}

    def create_name(self, candidate):
        candidate = _ILLEGAL.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = "_" + candidate
        m = _SUFFIX.match(candidate)
        if m is None:
            base, num = candidate, None
        else:
            base, num = m.group(1), int(m.group(2))
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._base_count.get(base, 0)
        while candidate in self._used or keyword.iskeyword(candidate) or hasattr(builtins, candidate):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        return candidate

    def release(self, name):
        self._used.discard(name)


def _candidate_name(op, target):
    if op == "call_function":
        return _snake_case(getattr(target, "__name__", None) or type(target).__name__)
    if op == "output":
        return "output"
    name = str(target)
    if op == "placeholder":
        return name.lstrip("*")
    return name


class _NodeList:
    """graph.nodes: iterates in program order, tolerating erasure of the current node."""

    def __init__(self, graph, reverse=False):
        self._graph = graph
        self._reverse = reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        cur = getattr(root, step)
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = getattr(cur, step)

    def __reversed__(self):
        return iter(_NodeList(self._graph, not self._reverse))

    def __repr__(self):
        return repr(list(self))


class _InsertPoint:
    def __init__(self, graph, insert):
        self.graph = graph
        self.orig, graph._insert = graph._insert, insert

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.graph._insert = self.orig


class PythonCode:
    """Generated source and the globals it needs."""

    def __init__(self, src, globals_):
        self.src = src
        self.globals = globals_


_BINARY = {op: sym for op, sym, _ in BINARY_OPERATORS.values()}
_UNARY = {op: sym for op, sym in UNARY_OPERATORS.values() if sym is not None}
_UNARY[operator.not_] = "not "


class Graph:
    """The IR of FX: a doubly linked list of Nodes in program order."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._namespace = _Namespace(reserved=("self", "ember"))
        self._insert = self._root.prepend
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls

    @property
    def nodes(self):
        return _NodeList(self)

    def find_nodes(self, *, op, target=None):
        """The Nodes with this op (and target, when given), in program order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ------------------------------------------------------------------ building
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        name = self._namespace.create_name(name if name is not None else _candidate_name(op, target))
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def inserting_before(self, n=None):
        """New nodes go right before ``n`` (the start of the graph when None) until exit."""
        if n is None:
            return self.inserting_after(self._root)
        self._check_owned(n)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        """New nodes go right after ``n`` (the end of the graph when None) until exit."""
        if n is None:
            return _InsertPoint(self, self._root.prepend)
        self._check_owned(n)
        return _InsertPoint(self, n.append)

    def _check_owned(self, n):
        if n.graph is not self:
            raise RuntimeError(f"Node {n.name!r} does not belong to this graph")

    def erase_node(self, to_erase):
        """Remove a Node that nothing uses any more."""
        self._check_owned(to_erase)
        if to_erase._erased:
            raise RuntimeError(f"Node {to_erase} was already erased")
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {list(to_erase.users)}!")
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        self._namespace.release(to_erase.name)
        to_erase._update_args_kwargs((), {})

    def eliminate_dead_code(self):
        """Erase the Nodes whose values nobody uses and that have no side effects; True if any."""
        changed = False
        for n in reversed(self.nodes):
            if not n.users and not n.is_impure():
                self.erase_node(n)
                changed = True
        return changed

    def node_copy(self, node, arg_transform=lambda x: x):
        """A copy of ``node`` (from any graph) inserted here, its Node inputs mapped by arg_transform."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        n = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        n.meta = dict(node.meta)
        return n

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copy every node of ``g`` here (filling val_map old -> new); returns the output's value."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo):
        g = Graph(tracer_cls=self._tracer_cls)
        memo[id(self)] = g
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            rv, old = out
            g.output(rv, type_expr=old.type).meta = dict(old.meta)
        return g

    # ------------------------------------------------------------------ checks
    def lint(self):
        """Check the graph's invariants; raises RuntimeError naming the first broken one."""
        seen, names = set(), set()
        n_out = 0
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node {node} does not belong to this Graph")
            if node.op not in ("placeholder", "get_attr", "call_function", "call_method",
                               "call_module", "output"):
                raise RuntimeError(f"Node {node} has unknown opcode {node.op!r}")
            for inp in node.all_input_nodes:
                if inp.graph is not self:
                    raise RuntimeError(f"Argument {inp} of Node {node} does not belong to this Graph")
                if inp not in seen:
                    raise RuntimeError(f"Argument {inp} of Node {node} was used before it has been "
                                       "defined! Please check that Nodes in the graph are "
                                       "topologically ordered")
                if node not in inp.users:
                    raise RuntimeError(f"Node {node} reads {inp} but is not among its users")
            for u in node.users:
                if u._erased or u.graph is not self:
                    raise RuntimeError(f"Node {node} has user {u} that is not in this graph")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            if node.op == "output":
                n_out += 1
            seen.add(node)
            names.add(node.name)
        if n_out > 1:
            raise RuntimeError("Graph has more than one output node")
        m = self.owning_module
        if m is not None:
            for node in self.nodes:
                if node.op in ("get_attr", "call_module"):
                    obj = m
                    for i, atom in enumerate(node.target.split(".")):
                        if not hasattr(obj, atom):
                            seen_qual = ".".join(node.target.split(".")[:i])
                            raise RuntimeError(f"Node {node} target {node.target} references "
                                               f"nonexistent attribute {atom} of {seen_qual or 'root'}")
                        obj = getattr(obj, atom)
                    if node.op == "call_module":
                        from ..nn import Module
                        if not isinstance(obj, Module):
                            raise RuntimeError(f"Node {node} target {node.target} {atom} is not an "
                                               "nn.Module")

    # ------------------------------------------------------------------ printing and code
    def __str__(self):
        lines = ["graph():"] + ["    " + n.format_node() for n in self.nodes]
        return "\n".join(lines)

    def print_tabular(self):
        rows = [(n.op, n.name, _qualified_name(n.target) if n.op == "call_function" else str(n.target),
                 _format_arg(n.args), _format_arg(n.kwargs)) for n in self.nodes]
        head = ("opcode", "name", "target", "args", "kwargs")
        w = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
        fmt = "  ".join("{:<%d}" % x for x in w)
        print("\n".join([fmt.format(*head), fmt.format(*("-" * x for x in w))] +
                        [fmt.format(*r) for r in rows]))

    def python_code(self, root_module="self"):
        return _CodeGen(self, root_module).generate()



class _CodeGen:
    def __init__(self, graph, root_module):
        self.graph = graph
        self.root = root_module
        import ember
        self.globals = {"ember": ember, "inf": math.inf, "nan": math.nan, "NoneType": type(None)}
        self._global_ids = {}

    def add_global(self, hint, obj):
        key = id(obj)
        if key in self._global_ids:
            return self._global_ids[key]
        names = {n.name for n in self.graph.nodes}
        base = _ILLEGAL.sub("_", hint) or "_g"
        if base[0].isdigit():
            base = "_" + base
        name, i = base, 0
        while name in names or name in self.globals or keyword.iskeyword(name) or hasattr(builtins, name):
            i += 1
            name = f"{base}_{i}"
        self.globals[name] = obj
        self._global_ids[key] = name
        return name

    def fn_ref(self, fn):
        q = _qualified_name(fn)
        if q.startswith("builtins.") and getattr(builtins, q[9:], None) is fn:
            return q[9:]
        if q.startswith("ember."):
            obj = self.globals["ember"]
            for part in q.split(".")[1:]:
                obj = getattr(obj, part, None)
            if obj is fn:
                return q
        if q.startswith("operator.") and getattr(operator, q[9:], None) is fn:
            self.globals.setdefault("operator", operator)
            return q
        return self.add_global(getattr(fn, "__name__", "fn"), fn)

    def type_ref(self, t):
        if isinstance(t, type) and t.__module__ == "builtins":
            return t.__qualname__
        from .node import _type_repr
        return self.add_global(_ILLEGAL.sub("_", _type_repr(t)), t)

    def arg(self, a):
        if isinstance(a, Node):
            return a.name
        t = type(a)
        if t is tuple or (isinstance(a, tuple) and not hasattr(a, "_fields")):
            inner = ", ".join(self.arg(x) for x in a)
            s = f"({inner},)" if len(a) == 1 else f"({inner})"
            return s if t is tuple else f"{self.add_global(t.__name__, t)}({s})"
        if isinstance(a, tuple):
            return f"{self.add_global(t.__name__, t)}({', '.join(self.arg(x) for x in a)})"
        if isinstance(a, list):
            return "[" + ", ".join(self.arg(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self.arg(k)}: {self.arg(v)}" for k, v in a.items()) + "}"
        if t is slice:
            return f"slice({self.arg(a.start)}, {self.arg(a.stop)}, {self.arg(a.step)})"
        if a is None or a is Ellipsis or t in (bool, int, str, bytes, complex):
            return repr(a)
        if t is float:
            if math.isnan(a):
                return "nan"
            if math.isinf(a):
                return "inf" if a > 0 else "-inf"
            return repr(a)
        from .._dtype import dtype as _dt
        if isinstance(a, _dt):
            return "ember." + a.name if getattr(self.globals["ember"], a.name, None) is a \
                else self.add_global(a.name, a)
        if callable(a) and not isinstance(a, type) and hasattr(a, "__name__"):
            return self.fn_ref(a)
        return self.add_global(type(a).__name__.lower(), a)

    def call_args(self, args, kwargs):
        parts = [self.arg(a) for a in args] + [f"{k} = {self.arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def attr_path(self, target):
        s = self.root
        for atom in target.split("."):
            if atom.isidentifier() and not keyword.iskeyword(atom):
                s = f"{s}.{atom}"
            else:
                s = f'getattr({s}, "{atom}")'
        return s

    def expr(self, node):
        op, t, args, kwargs = node.op, node.target, node.args, node.kwargs
        if op == "get_attr":
            return self.attr_path(t)
        if op == "call_module":
            return f"{self.attr_path(t)}({self.call_args(args, kwargs)})"
        if op == "call_method":
            return f"{self.arg(args[0])}.{t}({self.call_args(args[1:], kwargs)})"
        # call_function
        if not kwargs:
            if t in _BINARY and len(args) == 2:
                return f"{self.arg(args[0])} {_BINARY[t]} {self.arg(args[1])}"
            if t in _UNARY and len(args) == 1:
                return f"{_UNARY[t]}{self.arg(args[0])}"
            if t is operator.getitem and len(args) == 2:
                return f"{self.arg(args[0])}[{self.arg(args[1])}]"
            if t is builtins.getattr and len(args) == 2 and isinstance(args[1], str) \
                    and args[1].isidentifier() and not keyword.iskeyword(args[1]):
                return f"{self.arg(args[0])}.{args[1]}"
        return f"{self.fn_ref(t)}({self.call_args(args, kwargs)})"

    def generate(self):
        nodes = list(self.graph.nodes)
        # the statement after which each value is dead (so it is freed as early as in eager code)
        last_use = {}
        for n in reversed(nodes):
            for inp in n.all_input_nodes:
                if inp not in last_use:
                    last_use[inp] = n
        free_after = {}
        for v, user in last_use.items():
            free_after.setdefault(user, []).append(v)
        params, body = [], []
        seen_default = False
        for n in nodes:
            if n.op == "placeholder":
                p = n.target
                if n.type is not None:
                    p = f"{p} : {self.type_ref(n.type)}"
                if n.args:
                    p = f"{p} = {self.arg(n.args[0])}"
                    seen_default = True
                elif seen_default and "*" not in params and not p.startswith("*"):
                    params.append("*")  # only a keyword-only parameter can follow a default
                params.append(p)
                if n.name != n.target.lstrip("*"):
                    body.append(f"{n.name} = {n.target.lstrip('*')}")
                continue
            if n.op == "output":
                body.append(f"return {self.arg(n.args[0])}")
                continue
            line = f"{n.name} = {self.expr(n)}"
            dead = [v.name for v in free_after.get(n, ())]
            if not n.users:
                dead.append(n.name)
            if dead:
                line += ";  " + " = ".join(dead) + " = None"
            body.append(line)
        if not any(n.op == "output" for n in nodes):
            body.append("return None")
        src = "\n\n\ndef forward(" + ", ".join([self.root] + params) + "):\n" + \
            "".join(f"    {b}\n" for b in body)
        return PythonCode(src, self.globals)
