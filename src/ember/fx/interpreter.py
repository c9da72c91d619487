"""Interpreter: runs a GraphModule node by node (override a method to change how one kind of node
runs); Transformer: an Interpreter that builds a new graph instead of values."""
import inspect

from .graph import Graph
from .graph_module import GraphModule
from .node import map_arg, map_aggregate
from .proxy import Proxy
from ._symbolic_trace import Tracer, _Patcher


class Interpreter:
    """Execute ``module.graph`` one Node at a time. ``run_node`` dispatches on ``node.op`` to the
    methods placeholder, get_attr, call_function, call_method, call_module and output."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            # values are freed after their last use, as the generated code does
            seen = set()
            self.user_to_last_uses = {}
            for node in reversed(self.graph.nodes):
                for inp in node.all_input_nodes:
                    if inp not in seen:
                        seen.add(inp)
                        self.user_to_last_uses.setdefault(node, []).append(inp)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Run the graph on ``args``; returns what its output node returns."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback and not getattr(e, "_fx_noted", False):
                    msg = f"While executing {node.format_node()}"
                    if node.stack_trace:
                        msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    if hasattr(e, "add_note"):
                        e.add_note(msg)
                    try:
                        e._fx_noted = True
                    except Exception:
                        pass
                raise
            if self.garbage_collect_values:
                for v in self.user_to_last_uses.get(node, ()):
                    del self.env[v]
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ------------------------------------------------------------------ one method per opcode
    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was "
                               "not passed in!") from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # ------------------------------------------------------------------ helpers
    def fetch_attr(self, target):
        obj = self.module
        atoms = target.split(".")
        for i, atom in enumerate(atoms):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args, n):
        env = self.env

        def load(x):
            try:
                return env[x]
            except KeyError:
                raise RuntimeError(f"Node {n} referenced nonexistent value {x}! Run Graph.lint() to "
                                   "diagnose such issues") from None
        return map_arg(args, load)


class _TransformerTracer(Tracer):
    def __init__(self, graph, root):
        super().__init__()
        self.graph = graph
        self.root = root
        self._param_names = {}
        for n, p in root.named_parameters():
            self._param_names.setdefault(id(p), n)
        for n, b in root.named_buffers():
            self._param_names.setdefault(id(b), n)
        self._module_paths = {}
        for n, m in root.named_modules():
            self._module_paths.setdefault(id(m), n)

    def is_leaf_module(self, m, qualname):
        return True


class Transformer(Interpreter):
    """Runs the graph on Proxies so that each overridden method can emit different Nodes; call
    ``transform()`` for the new GraphModule."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph, module)

    def run_node(self, n):
        if n.op == "call_function" and self.tracer._patcher is not None:
            # while transforming, ember.relu names the recorder that is installed in its place:
            # hand overrides that same object so that `target is ember.relu` holds
            rec = self.tracer._originals.get(id(n.target))
            if rec is not None and rec[0] is n.target:
                args, kwargs = self.fetch_args_kwargs_from_env(n)
                return self.call_function(rec[1], args, kwargs)
        return super().run_node(n)

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def transform(self):
        patcher = _Patcher()  # ember functions called on Proxies by overrides record, as in tracing
        try:
            self.tracer._install(patcher, None)
            result = super().run(enable_io_processing=False)
        finally:
            patcher.restore()
            self.tracer._patcher = None
        if result is not None:
            self.new_graph.output(map_aggregate(
                result, lambda x: x.node if isinstance(x, Proxy) else x))
        return GraphModule(self.module, self.new_graph)
