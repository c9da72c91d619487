"""Custom autograd Functions: forward/backward with ctx, the setup_context form, jvp."""
import functools
import sys

from .. import _dispatch as D
from . import graph as G


class FunctionCtx:
    """The ``ctx`` handed to forward/backward/jvp."""

    def __init__(self):
        self._saved = None
        self._saved_versions = None
        self._dirty = ()
        self._non_diff = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._freed = False
        self.to_save = ()

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, D.Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._saved = tensors
        self._saved_versions = tuple(None if t is None else t._version for t in tensors)

    def save_for_forward(self, *tensors):
        self._saved_fw = tensors

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(G._FREED_MSG)
        if self._saved is None:
            return ()
        if type(self._saved) is G._Packed:
            return self._saved.unpack()
        for i, (t, v) in enumerate(zip(self._saved, self._saved_versions)):
            if t is not None and t._version != v:
                vc = t._vc
                by = f" It was last changed in place by {vc[1]}." if vc is not None and vc[1] else ""
                raise RuntimeError(f"one of the variables needed for gradient computation has been "
                                   f"modified by an inplace operation: [torch."
                                   f"{G._TYPE_NAMES.get(t.dtype.name, 'Tensor')} {list(t.shape)}], which "
                                   f"is saved tensor {i} of "
                                   f"{getattr(self, '_node_name', 'a custom Function')}, is at version "
                                   f"{t._version}; expected version {v} instead.{by}")
        return self._saved

    saved_variables = saved_tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(G.Node):
    """The node of a custom Function; its class is named `<Function>Backward`."""
    __slots__ = ("ctx", "_n_args", "_tensor_pos", "_shapes", "_out_meta_cf")
    _function = None

    @property
    def _nout(self):
        return len(self._out_meta_cf)

    def apply(self, grads):
        ctx = self.ctx
        fn = self._function
        if ctx.materialize_grads:
            from .._creation import zeros
            grads = [zeros(s, dtype=d) if g is None else g for g, (s, d) in zip(grads, self._out_meta_cf)]
        res = fn.backward(ctx, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = self._n_args
        if len(res) > n and all(r is None for r in res[n:]):
            res = res[:n]
        if len(res) != n:
            raise RuntimeError(f"function {type(self).__name__} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(res)})")
        out = []
        for k, pos in enumerate(self._tensor_pos):
            g = res[pos]
            if g is not None:
                if not isinstance(g, D.Tensor):
                    raise TypeError(f"function {type(self).__name__} returned a gradient of type "
                                    f"{type(g).__name__} at index {pos}, expected a Tensor or None")
                shp = self._shapes[k]
                if tuple(g.shape) != tuple(shp):
                    try:
                        g = G._sum_to(g, shp)
                    except Exception:
                        g = None
                    if g is None or tuple(g.shape) != tuple(shp):
                        raise RuntimeError(f"Function {type(self).__name__} returned an invalid gradient at "
                                           f"index {pos} - got {list(res[pos].shape)} but expected shape "
                                           f"compatible with {list(shp)}")
            out.append(g)
        return out

    def _release(self):
        self.ctx._freed = True
        self.ctx._saved = None


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"__slots__": (), "_function": cls})


class Function(metaclass=FunctionMeta):
    """Subclass with static ``forward(ctx, *args)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grads)``; call ``apply``."""

    generate_vmap_rule = False

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """The custom computation; a subclass defines it (with ctx first, or without it and setup_context)."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Save what backward needs from inputs and output, for a forward defined without ctx."""
        raise NotImplementedError("setup_context is not overridden")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """The gradients of forward's inputs from the gradients of its outputs; a subclass defines it."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """The tangents of forward's outputs from the tangents of its inputs (forward mode); a subclass defines
        it."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to "
                                  "use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):  # replaced below by _apply itself: one frame per nested apply
        raise NotImplementedError


def _uses_setup_context(cls):
    for klass in cls.__mro__:
        if "setup_context" in klass.__dict__:
            return klass is not Function
    return False


class _NestedRecursionError(RecursionError):
    """Custom Functions nested (in forward) past Python's recursion limit."""


def _recursion_error(cls, e):
    if isinstance(e, _NestedRecursionError):
        return e
    depth, tb = 0, e.__traceback__
    f = tb.tb_frame.f_back if tb is not None else None
    while f is not None:                 # the applies still on the stack, above this one
        depth += f.f_code is _apply.__code__
        f = f.f_back
    while tb is not None:                # this one and those below, unwound
        depth += tb.tb_frame.f_code is _apply.__code__
        tb = tb.tb_next
    return _NestedRecursionError(
        f"{cls.__name__}.apply: custom Functions nested {depth}+ deep in forward exceed Python's recursion "
        f"limit (sys.getrecursionlimit() = {sys.getrecursionlimit()}; each nested apply takes two frames, its "
        f"own and forward's, as in PyTorch, whose limit is the interpreter's as well): raise it with "
        f"sys.setrecursionlimit(), or nest less (loop instead of recursing)")


def _apply(cls, *args, **kwargs):
    """``Function.apply``: runs forward with grad off and records one backward node."""
    Tensor = D.Tensor
    ctx = FunctionCtx()
    tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    rg = D.grad_mode.enabled and any(args[i]._rg for i in tensor_pos)
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg and D.grad_mode.enabled for a in args)
    fw_level = None
    if not D.state.simple:
        fw_level = D._top_level(args)
        if not hasattr(fw_level, "run_custom_function"):
            fw_level = None
    setup = _uses_setup_context(cls)

    def run_forward():
        prev = D.grad_mode.enabled
        D.grad_mode.enabled = False
        try:
            if setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        finally:
            D.grad_mode.enabled = prev
        return out

    if fw_level is not None:
        out = fw_level.run_custom_function(cls, ctx, args, run_forward)
    else:  # run_forward inlined: nested applies cost two frames each (apply, forward), as PyTorch's
        prev = D.grad_mode.enabled
        D.grad_mode.enabled = False
        try:
            if setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        except RecursionError as e:
            raise _recursion_error(cls, e) from None
        finally:
            D.grad_mode.enabled = prev
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    # outputs that are inputs returned as-is become aliases (unless marked dirty)
    dirty = ctx._dirty
    fixed = []
    for o in outs:
        if isinstance(o, Tensor) and any(o is args[i] for i in tensor_pos) and not any(o is d for d in dirty):
            o = o._shallow()
        fixed.append(o)
    outs = tuple(fixed)
    if rg:
        node = cls._backward_cls()
        node.ctx = ctx
        ctx._node_name = type(node).__name__
        node._n_args = len(args)
        node._tensor_pos = tuple(tensor_pos)
        node._shapes = tuple(args[i].shape for i in tensor_pos)
        node.next_functions = tuple(G.edge(args[i]) if args[i]._rg else (None, 0) for i in tensor_pos)
        node._out_meta_cf = tuple((o.shape, o.dtype) if isinstance(o, Tensor) else ((), None) for o in outs)
        non_diff = ctx._non_diff
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                continue
            if any(o is nd for nd in non_diff) or o._data.dtype.kind not in "fc":
                o._rg = False
                continue
            if any(o is d for d in dirty):
                o._bump(cls.__name__)
            o._rg = True
            o._fn = node
            o._nr = i
        # saved outputs: keep aliases, not the output objects (no reference cycle)
        if ctx._saved is not None:
            saved = []
            for t in ctx._saved:
                for i, o in enumerate(outs):
                    if t is o:
                        t = G._saved_alias(o, node, i)
                        break
                saved.append(t)
            ctx._saved = tuple(saved)
            ctx._saved_versions = tuple(None if t is None else t._version for t in ctx._saved)
            ctx._saved = G.pack_saved(ctx._saved)
        if D.state.anomaly:
            node._trace = G.capture_forward_stack()
            node._parent_trace = G._current_parent_trace[0]
    return outs[0] if single else outs


Function.apply = classmethod(_apply)


def once_differentiable(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        from .grad_mode import no_grad
        with no_grad():
            return fn(ctx, *args)
    return wrapper


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        self.inplace = inplace


class NestedIOFunction(Function):
    pass
