"""GraphModule: an nn.Module whose forward is Python code generated from a Graph."""
import copy
import itertools
import linecache

from ..nn import Module
from .graph import Graph

_keys = itertools.count()


def _exec_source(src, globals_):
    """Compile generated source under a unique file name that linecache can show in tracebacks."""
    key = f"<eval_with_key>.{next(_keys)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    ns = dict(globals_)
    exec(compile(src, key, "exec"), ns)
    return ns["forward"], key


def _copy_attr(src, dst, target):
    """Make ``dst.<target>`` the object at ``src.<target>``, creating empty parent Modules."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(src, item)
        t = getattr(dst, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(dst, item, t)
        src, dst = f, t
    orig = getattr(src, field)
    # a buffer stays (non-)persistent; a plain tensor attribute (a traced constant) becomes a
    # non-persistent buffer, so the state_dict keys stay those of the original module
    persistent = field in getattr(src, "_buffers", {}) and \
        field not in getattr(src, "_non_persistent_buffers_set", ())
    _assign(dst, field, orig, persistent)


def _assign(dst, field, obj, persistent=True):
    from .._tensor import Tensor
    from ..nn import Parameter
    if isinstance(obj, Tensor) and not isinstance(obj, Parameter):
        dst.register_buffer(field, obj, persistent=persistent)
    else:
        setattr(dst, field, obj)


def _assign_attr(obj, dst, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(dst, item, None)
        if t is None:
            t = Module()
            setattr(dst, item, t)
        dst = t
    _assign(dst, field, obj)


class GraphModule(Module):
    """``GraphModule(root, graph)``: holds the submodules and attributes ``graph`` refers to (copied
    from ``root``, a Module or a dict of qualified names), and runs the code generated from it."""

    def __new__(cls, *args, **kwargs):
        # every instance gets its own class: forward is compiled onto the class (as methods are),
        # so that calling the module costs what calling a hand-written module costs
        base = next(t for t in cls.__mro__ if t.__name__ != "GraphModuleImpl")

        class GraphModuleImpl(base):
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that "
                                           "target was not provided in root")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError(f"Unsupported type {type(root).__name__} passed for root: expected an "
                               "nn.Module or a dict")
        self.meta = {}
        self.graph = graph

    @property
    def graph(self):
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph must be a Graph, got {type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The Python source of forward, generated from the graph."""
        return self.__dict__["_code"]

    def recompile(self):
        """Regenerate forward from the graph (call after editing the graph)."""
        pc = self.graph.python_code(root_module="self")
        self.__dict__["_code"] = pc.src
        fwd, key = _exec_source(pc.src, pc.globals)
        self.__dict__["_source_key"] = key
        type(self).forward = fwd
        return pc

    # ------------------------------------------------------------------ submodule surgery
    def add_submodule(self, target, m):
        """Install ``m`` at dotted path ``target``, creating empty parent Modules; False if a
        non-Module is in the way."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        """Remove the submodule at ``target``; False if there is none."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if not isinstance(getattr(mod, field, None), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self):
        """Drop the submodules that no call_module or get_attr Node of the graph reaches."""
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                for i in range(1, len(atoms) + 1):
                    used.add(".".join(atoms[:i]))
                if node.op == "call_module":  # everything inside a called module is in use
                    sub = self.get_submodule(node.target)
                    for name, _ in sub.named_modules(prefix=node.target):
                        used.add(name)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    def print_readable(self, print_output=True):
        s = f"class {type(self).__name__}(ember.nn.Module):\n" + \
            "\n".join("    " + ln for ln in self.code.strip("\n").splitlines())
        if print_output:
            print(s)
        return s

    def __str__(self):
        return Module.__repr__(self) + "\n\n" + self.code

    __repr__ = __str__

    def __deepcopy__(self, memo):
        res = GraphModule.__new__(type(self))
        memo[id(self)] = res
        d = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code", "_source_key")}
        fake = Module()
        fake.__dict__.update(copy.deepcopy(d, memo))
        graph = copy.deepcopy(self.graph, memo)
        GraphModule.__init__(res, fake, graph, type(self).__name__)
        for k, v in fake.__dict__.items():
            if k not in res.__dict__:
                res.__dict__[k] = v
        res.meta = copy.deepcopy(self.meta, memo)
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph, type(self).__name__)
        res.meta = dict(self.meta)
        return res

    def __reduce__(self):
        raise TypeError("pickling a GraphModule is not supported; save its state_dict and re-trace")
