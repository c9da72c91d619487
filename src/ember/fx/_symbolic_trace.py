"""Symbolic tracing: run a module's forward on Proxies and record what it does as a Graph.

While a trace runs, the public ember functions (the ``ember`` namespace, ``ember.nn.functional``),
the Tensor methods and operators, ``nn.Module.__call__`` and the functions given to ``wrap`` are
temporarily replaced by recorders: called with a Proxy among their arguments they add a Node, called
without one they run as usual. Everything is restored when the trace ends.
"""
import builtins
import functools
import importlib
import inspect
import math
import sys
import traceback
import types

from .graph import Graph
from .node import map_aggregate, BINARY_OPERATORS, _ember_public_names
from .proxy import Proxy, TraceError, _user_frame, _describe  # noqa: F401

_WRAPPED = []  # (globals dict, name) registered by wrap()
_PATCH_NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft")
_NO_PATCH = {"is_tensor", "is_grad_enabled", "is_inference_mode_enabled", "get_default_dtype",
             "set_default_dtype", "manual_seed", "seed", "initial_seed", "set_grad_enabled",
             "get_rng_state", "set_rng_state", "set_printoptions", "set_num_threads",
             "get_num_threads", "promote_types", "can_cast", "result_type"}


def _check_specialized(value, expected, name):
    """Guard of a concrete_args specialisation, kept in the generated code."""
    if value is not expected and not (type(value) is type(expected) and value == expected):
        raise AssertionError(f"{name} has been specialized to have value {expected!r} but got "
                             f"another value {value!r}")


def wrap(fn_or_name):
    """Keep a module-level function opaque: traced calls of it become one call_function Node.

    Call at module scope, with the function or its name: ``ember.fx.wrap('my_fn')``.
    """
    frame = sys._getframe(1)
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    if not isinstance(fn_or_name, str) and not callable(fn_or_name):
        raise TypeError(f"wrap expects a function or a function name, got {fn_or_name!r}")
    _WRAPPED.append((frame.f_globals, name))
    return fn_or_name


def _has_proxy(a):
    t = type(a)
    if t is tuple or t is list:
        for x in a:
            if _has_proxy(x):
                return True
        return False
    if t is dict:
        for x in a.values():
            if _has_proxy(x):
                return True
        return False
    return isinstance(a, Proxy) or (isinstance(a, (tuple, list)) and any(_has_proxy(x) for x in a))


def _find_tracer(args, kwargs):
    found = []

    def visit(x):
        if isinstance(x, Proxy) and not found:
            found.append(x.tracer)
        return x
    map_aggregate(args, visit)
    map_aggregate(kwargs, visit)
    return found[0] if found else None


class _Patcher:
    def __init__(self):
        self._saved = []

    def set(self, obj, name, value):
        if isinstance(obj, dict):
            self._saved.append((obj, name, obj.get(name, _MISSING)))
            obj[name] = value
        else:
            self._saved.append((obj, name, obj.__dict__[name] if name in obj.__dict__ else _MISSING))
            setattr(obj, name, value)

    def restore(self):
        for obj, name, old in reversed(self._saved):
            if isinstance(obj, dict):
                if old is _MISSING:
                    obj.pop(name, None)
                else:
                    obj[name] = old
            elif old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)
        self._saved.clear()


_MISSING = object()


def _function_recorder(fn):
    @functools.wraps(fn)
    def recorder(*args, **kwargs):
        if _has_proxy(args) or _has_proxy(kwargs):
            return _find_tracer(args, kwargs).create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)
    recorder.__fx_original__ = fn
    return recorder


def _method_recorder(name, fn, as_function=None):
    """Tensor.<name> while tracing: a Proxy among the arguments records the call."""
    @functools.wraps(fn)
    def recorder(self, *args, **kwargs):
        if _has_proxy(args) or _has_proxy(kwargs):
            tracer = _find_tracer(args, kwargs)
            if as_function is not None:
                return tracer.create_proxy("call_function", as_function, (self,) + args, kwargs)
            return tracer.create_proxy("call_method", name, (self,) + args, kwargs)
        return fn(self, *args, **kwargs)
    return recorder


def _operator_table():
    """Tensor magic-method name -> (operator function, whether it is the reflected form)."""
    import operator
    t = {}
    for nm, (op, _, reflected) in BINARY_OPERATORS.items():
        t[f"__{nm}__"] = (op, False)
        if reflected:
            t[f"__r{nm}__"] = (op, True)
    t["__getitem__"] = (operator.getitem, False)
    return t


def _reflected_recorder(fn, op):
    @functools.wraps(fn)
    def recorder(self, other):
        if _has_proxy(other):
            return _find_tracer(other, {}).create_proxy("call_function", op, (other, self), {})
        return fn(self, other)
    return recorder


def _is_patchable(v):
    return isinstance(v, (types.FunctionType, types.BuiltinFunctionType)) and \
        not isinstance(v, type)


class Tracer:
    """Turns a module or function into a Graph. Override ``is_leaf_module`` to choose which
    submodules stay one call_module Node (standard ember.nn layers do by default)."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), record_stack_traces=False):
        # functions of autowrap_modules (and autowrap_functions) bound to a name in the traced
        # code's module (`from math import sqrt`) are recorded when called on Proxies
        self.autowrap_modules = tuple(autowrap_modules)
        self.autowrap_functions = tuple(autowrap_functions)
        self.record_stack_traces = record_stack_traces
        self.graph = None
        self.root = None
        self._param_names = {}
        self._module_paths = {}
        self._attr_nodes = {}
        self._tensor_constants = {}
        self.module_stack = []

    # ------------------------------------------------------------------ overridable policy
    def is_leaf_module(self, m, module_qualified_name):
        from .. import nn
        mod = type(m).__module__ or ""
        return (mod == "ember.nn" or mod.startswith("ember.nn.")) and not isinstance(m, nn.Sequential)

    def path_of_module(self, mod):
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError(f"module {type(mod).__name__} is not installed as a submodule of the "
                            "traced root module")
        return path

    def call_module(self, m, forward, args, kwargs):
        path = self.path_of_module(m)
        if not self.is_leaf_module(m, path):
            self.module_stack.append(path)
            try:
                self._autowrap_globals(getattr(type(m).forward, "__globals__", None))
                return forward(*args, **kwargs)
            finally:
                self.module_stack.pop()
        return self.create_proxy("call_module", path, args, kwargs)

    # ------------------------------------------------------------------ node building
    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        target = getattr(target, "__fx_original__", target)  # never record a recorder
        n = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self.module_stack:
            n.meta["nn_module_stack"] = list(self.module_stack)
        if self.record_stack_traces and kind not in ("placeholder", "output"):
            frame = _user_frame()
            if frame is not None:
                n.meta["stack_trace"] = "".join(traceback.format_stack(frame, limit=1))
        return n

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return proxy_factory_fn(node) if proxy_factory_fn is not None else self.proxy(node)

    def proxy(self, node):
        return Proxy(node, self)

    def _get_attr_node(self, qualname):
        n = self._attr_nodes.get(qualname)
        if n is None or n._erased:
            n = self._attr_nodes[qualname] = self.create_node("get_attr", qualname, (), {})
        return n

    def create_arg(self, a):
        """Turn a value into what a Node argument holds: Proxies become their Nodes, parameters,
        buffers and tensor constants become get_attr Nodes, containers are mapped."""
        from .._tensor import Tensor
        if isinstance(a, Proxy):
            if a.tracer is not self:
                raise RuntimeError(f"Proxy {a} belongs to another tracer")
            return a.node
        t = type(a)
        if t is tuple or t is list or isinstance(a, (tuple, list)):
            vals = [self.create_arg(x) for x in a]
            if t is list:
                return vals
            if hasattr(a, "_fields"):
                return t(*vals)
            return tuple(vals) if t is tuple else t(vals)
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    k = self.create_arg(k)
                out[k] = self.create_arg(v)
            return out
        if t is slice:
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Tensor):
            name = self._param_names.get(id(a))
            if name is None:
                name = self._tensor_constants.get(id(a))
            if name is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                name = f"_tensor_constant{i}"
                setattr(self.root, name, a)
                self._tensor_constants[id(a)] = name
                self._param_names[id(a)] = name
            return self._get_attr_node(name)
        from ..nn import Module
        if isinstance(a, Module):
            return self._get_attr_node(self.path_of_module(a))
        return a

    def to_bool(self, obj):
        """``bool(proxy)``: by default an error naming the user's line (override to specialise)."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow "
                         f"({_describe(_user_frame())}). Pass the value in concrete_args to "
                         "specialise the trace on it, or keep the branching function opaque with "
                         "ember.fx.wrap")

    # ------------------------------------------------------------------ the trace
    def trace(self, root, concrete_args=None):
        from ..nn import Module
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            bound = (root,)
        elif callable(root):
            self.root = Module()
            fn = root
            bound = ()
        else:
            raise TypeError(f"symbolic_trace expects an nn.Module or a function, got {type(root).__name__}")
        concrete_args = dict(concrete_args or {})
        _ember_public_names()  # computed before any ember function is replaced by its recorder
        self.graph = Graph(tracer_cls=type(self))
        self._attr_nodes, self._tensor_constants, self.module_stack = {}, {}, []
        self._param_names = {}
        for n, p in self.root.named_parameters():
            self._param_names.setdefault(id(p), n)
        for n, b in self.root.named_buffers():
            self._param_names.setdefault(id(b), n)
        self._module_paths = {}
        for n, m in self.root.named_modules():
            self._module_paths.setdefault(id(m), n)

        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[len(bound):]
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise TypeError(f"concrete_args names {sorted(unknown)} that {getattr(fn, '__name__', fn)} "
                            "does not take")
        args, kwargs = list(bound), {}
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise NotImplementedError(
                    f"symbolic tracing of a variadic parameter ({'*' if p.kind is p.VAR_POSITIONAL else '**'}"
                    f"{p.name}) is not supported: trace a function with named parameters")
            default = () if p.default is p.empty else (p.default,)
            ann = None if p.annotation is p.empty else p.annotation
            if isinstance(ann, str):  # postponed annotations: resolve them or keep none
                ann = getattr(builtins, ann, None) if isinstance(getattr(builtins, ann, None), type) else None
            if p.name in concrete_args:
                value = concrete_args[p.name]
                ph = self.create_node("placeholder", p.name, (value,), {})
                if value is None or type(value) in (bool, int, float, str):
                    self.create_node("call_function", _check_specialized, (ph, value, p.name), {})
                val = value
            else:
                val = self.create_proxy("placeholder", p.name, default, {}, type_expr=ann)
            if p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = val
            else:
                args.append(val)

        patcher = _Patcher()
        try:
            self._install(patcher, fn)
            result = fn(*args, **kwargs)
        finally:
            patcher.restore()
            self._patcher = None
        self.create_node("output", "output", (self.create_arg(result),), {})
        return self.graph

    def _install(self, patcher, fn):
        from .._tensor import Tensor
        from ..nn import Module
        self._patcher = patcher
        self._originals = {}
        for modname in _PATCH_NAMESPACES:
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                continue
            for k, v in list(vars(mod).items()):
                if k.startswith("_") or k in _NO_PATCH or not _is_patchable(v):
                    continue
                rec = self._originals.get(id(v))
                if rec is None:
                    rec = self._originals[id(v)] = (v, _function_recorder(v))
                patcher.set(mod, k, rec[1])
        for gl, name in _WRAPPED:
            if name in gl:
                v = gl[name]
                if isinstance(v, str) or getattr(v, "__fx_original__", None) is not None:
                    continue
                rec = self._originals.get(id(v))
                if rec is None:
                    rec = self._originals[id(v)] = (v, _function_recorder(v))
                patcher.set(gl, name, rec[1])
            elif getattr(builtins, name, None) is not None:
                b = getattr(builtins, name)
                rec = self._originals.get(id(b))
                if rec is None:
                    rec = self._originals[id(b)] = (b, _function_recorder(b))
                patcher.set(gl, name, rec[1])
        for mod in self.autowrap_modules:
            for k, v in vars(mod).items():
                if not k.startswith("_") and _is_patchable(v) and id(v) not in self._originals:
                    self._originals[id(v)] = (v, _function_recorder(v))
        ops = _operator_table()
        for k, v in list(vars(Tensor).items()):
            if not callable(v) or isinstance(v, type):
                continue
            if k in ops:
                op, reflected = ops[k]
                patcher.set(Tensor, k, _reflected_recorder(v, op) if reflected else
                            _method_recorder(k, v, as_function=op))
            elif not k.startswith("_") and isinstance(v, types.FunctionType):
                patcher.set(Tensor, k, _method_recorder(k, v))
        self._autowrap_globals(getattr(fn, "__globals__", None))

        tracer = self
        orig_call = Module.__call__

        def module_call(mod, *args, **kwargs):
            def forward(*a, **k):
                return orig_call(mod, *a, **k)
            return tracer.call_module(mod, forward, args, kwargs)
        patcher.set(Module, "__call__", module_call)

    def _autowrap_globals(self, gl):
        """Names bound in a traced function's module to ember functions (``from ember import relu``)
        record too."""
        if not gl or self._patcher is None:
            return
        for k, v in list(gl.items()):
            rec = self._originals.get(id(v))
            if rec is not None and rec[0] is v:
                self._patcher.set(gl, k, rec[1])
        for fn in self.autowrap_functions:
            for k, v in list(gl.items()):
                if v is fn:
                    self._patcher.set(gl, k, _function_recorder(fn))

    _patcher = None


def symbolic_trace(root, concrete_args=None):
    """Trace ``root`` (an nn.Module or a function) into a GraphModule.

    ``concrete_args`` maps parameter names to values the trace is specialised on (for Python
    control flow on them); the generated code checks that later calls pass the same values.
    """
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if not isinstance(root, (types.FunctionType, types.MethodType)) \
        else root.__name__
    return GraphModule(tracer.root, graph, name)


class GraphAppendingTracer(Tracer):
    """A tracer that appends to an existing ``graph``: ``Proxy(graph.placeholder('x'),
    GraphAppendingTracer(graph))`` and then ember functions, Tensor methods and operators on that
    Proxy add nodes to the graph. While such a tracer is alive, ops look for Proxies among their
    arguments (ember's dispatch leaves its fast path), so keep it only as long as you build.
    The nodes record the registry op with its parameters (symbolic_trace records the public
    function); a function that checks its arguments in Python before it reaches an op (``cat``'s
    list of tensors) refuses a Proxy here: build such calls with ``graph.call_function``."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.scope = None
        from .. import _dispatch as D
        D.state.proxy_tracers += 1
        D.state.refresh()
        import weakref
        weakref.finalize(self, _release_proxy_tracer)


def _release_proxy_tracer():
    from .. import _dispatch as D
    D.state.proxy_tracers -= 1
    D.state.refresh()


from . import proxy as _proxy_module  # noqa: E402  (torch.fx.proxy.GraphAppendingTracer's place)
_proxy_module.GraphAppendingTracer = GraphAppendingTracer
