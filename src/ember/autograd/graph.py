"""The autograd graph (backward nodes, AccumulateGrad, saved tensors) and the engine.

A node is a callable object: ``node(*grad_outputs)`` returns the input gradients, as in
PyTorch. ``next_functions`` is a tuple of ``(node, output_nr)`` edges, one per input, with
``(None, 0)`` for inputs that need no gradient. The engine counts, for every node reachable
from the roots, how many gradients it will receive, and runs a node once all have arrived
(a ready queue ordered by creation, newest first): iterative, so deep graphs need no recursion.
"""
import itertools
import os
import sys
import traceback
import warnings
import weakref
from heapq import heappop, heappush

import numpy as np

from .. import _dispatch as D
from .._dtype import FROM_NP

_ndarray = np.ndarray
_asarray = np.asarray
_state = D.state
_grad_mode = D.grad_mode
Tensor = None  # bound by ember._tensor at import

_seq = itertools.count()
_FREED_MSG = ("Trying to backward through the graph a second time (or directly access saved tensors "
              "after they have already been freed). Saved intermediate values of the graph are freed "
              "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
              "backward through the graph a second time or if you need to access saved tensors after "
              "calling backward.")


# PyTorch's hand-written C++ nodes report their namespace in name() and in profiler events
_CPP_NODES = frozenset(("AccumulateGrad", "CopySlices", "CopyBackwards"))
_CPP_PREFIX = "torch::autograd::"


class Node:
    """Base of every backward node.

    ``_edges`` holds one ``(target, output_nr)`` per input: target is a node, a leaf tensor
    (its AccumulateGrad is made only when someone asks for it: ``next_functions`` or a hook) or
    None. Rarely used attributes (hooks, anomaly traces, metadata) are class-level None until set.
    """
    __slots__ = ("_edges", "_seq", "__dict__", "__weakref__")
    _nout = 1
    _pre_hooks = _hooks = _thooks = _retain = _trace = _parent_trace = metadata_ = None
    _hooked = False  # True once any hook or retain_grad is registered: the engine's slow path

    def __init__(self):
        self._seq = next(_seq)
        self._edges = ()

    @property
    def next_functions(self):
        edges = self._edges
        for _, nr in edges:
            if nr < 0:
                # a leaf's AccumulateGrad, once looked at, stays in the graph (as in PyTorch the
                # edges hold it): the same object on every access while the graph lives
                edges = self._edges = tuple((grad_accumulator(t), 0) if k < 0 else (t, k)
                                            for t, k in edges)
                break
        return edges

    @next_functions.setter
    def next_functions(self, edges):
        self._edges = tuple(edges)

    def name(self):
        n = type(self).__name__
        return _CPP_PREFIX + n if n in _CPP_NODES else n

    @property
    def metadata(self):
        if self.metadata_ is None:
            self.metadata_ = {}
        return self.metadata_

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> None or replacement grad_inputs; runs after the node."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        self._hooked = True
        return _RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) -> None or replacement grad_outputs; runs before the node."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        self._hooked = True
        return _RemovableHandle(self._pre_hooks, fn)

    def _tensor_hook(self, nr, fn):
        if self._thooks is None:
            self._thooks = {}
        lst = self._thooks.setdefault(nr, [])
        lst.append(fn)
        self._hooked = True
        return _RemovableHandle(lst, fn)

    def __call__(self, *grads):
        res = self.apply(list(grads))
        return res[0] if len(res) == 1 else tuple(res)

    def apply(self, grads):  # pragma: no cover - abstract
        raise NotImplementedError

    def _release(self):
        pass

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"


class _RemovableHandle:
    __slots__ = ("_lst", "_fn")

    def __init__(self, lst, fn):
        self._lst, self._fn = lst, fn

    def remove(self):
        try:
            self._lst.remove(self._fn)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.remove()


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the incoming gradient into ``variable.grad``."""
    __slots__ = ("variable",)
    _post_acc_hooks = None

    def __init__(self, variable):
        self._seq = sys.maxsize  # accumulate as soon as ready
        self._edges = ()
        self.variable = variable

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return []
        accumulate_into(self.variable, g)
        return []

def accumulate_into(var, g, stored=None):
    """var.grad += g, without ever writing into a gradient array someone else holds.

    ``stored``: ids of the gradient tensors the running backward pass has already made some
    leaf's .grad (the engine's set; add's backward hands one tensor to both inputs). A tensor
    found there, or any tensor when no set is given, is copied before it becomes .grad, so two
    leaves never share one .grad object. A stored gradient is not owned: the next accumulation
    is out of place, later ones in place."""
    if var._hooks:
        for h in var._hooks:
            r = h(g)
            if r is not None:
                g = r
    _accumulate(var, g, stored)
    if var._post_acc_hooks:
        for h in var._post_acc_hooks:
            h(var)


def _accumulate(var, g, stored):
    """The .grad update of accumulate_into, without the hooks (the engine calls it directly for
    leaves that have none)."""
    old = var._grad
    if var._meta or g._meta:   # a meta leaf: a meta .grad of its shape (there are no values to add)
        if old is None:
            var._grad = D._meta_of(var._data.shape, var._data.dtype)
        return
    if old is None:
        if _grad_mode.enabled:  # create_graph: .grad keeps its history
            if g._data.shape != var._data.shape:
                g = g.expand(var.shape).contiguous()
            elif stored is None or id(g) in stored or g._base is not None:
                g = g.clone()
        else:
            if g._rg:
                g = g.detach()
            gd = g._data
            if gd.shape != var._data.shape:
                g = D._new_tensor(D.xp.broadcast_to(gd, var._data.shape).copy())
            elif (stored is None or id(g) in stored or g._base is not None
                  or (gd.base is not None and not gd.flags.writeable)):
                # shared with another leaf, a view of another tensor, or an expanded read-only
                # array: .grad gets its own writable copy
                g = D._new_tensor(gd.copy(order="K"))  # in its own layout (channels_last stays)
            else:
                # the array is stored without a copy but in a tensor object of its own (a hook
                # or the caller may hold g): the next accumulation can then update .grad in
                # its place, as PyTorch's does
                if stored is not None:
                    stored.add(id(g))
                g = D._new_tensor(gd)
        if stored is not None:
            stored.add(id(g))
        var._grad = g
        if var._grad_owned:
            var._grad_owned = False
    elif D.grad_mode.enabled or old._rg or g._rg:
        var._grad = old + g
        var._grad_owned = True
    elif var._grad_owned and old._data.flags.writeable and old.dtype is g.dtype:
        D.xp.add(old._data, g._data, out=old._data)
        old._bump()
    else:
        # .grad's array may be shared: a fresh array, but kept in the same .grad object (a
        # reference to p.grad sees every accumulation, as in PyTorch)
        r = old + g
        if r.dtype is old.dtype and old._base is None and old._fw is None and old._wr is None:
            old._data = r._data
            old._bump()
        else:
            var._grad = r
        var._grad_owned = True


def grad_accumulator(t):
    """The AccumulateGrad node of a leaf, shared by every edge to it while it lives."""
    ref = t._acc
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._acc = weakref.ref(acc)
    return acc


def edge(t):
    fn = t._fn
    if fn is not None:
        return (fn, t._nr)
    return (grad_accumulator(t), 0)


def _no_acc():
    return None


def mark_hooked_leaf(t):
    """A leaf whose ``_acc`` is None is plain (no AccumulateGrad ever made, no hooks): the engine
    accumulates into it directly. Registering a hook makes it take the hook-aware path."""
    if t._acc is None:
        t._acc = _no_acc


def _live_acc(t):
    """A leaf's AccumulateGrad if someone holds it (hooks on it, next_functions), else None: the
    engine then accumulates into the tensor directly."""
    ref = t._acc
    return ref() if ref is not None else None


# ----------------------------------------------------------------------------- op nodes


class OpNode(Node):
    """A node recorded for a registry primitive; its class is named `<Op>Backward0`."""
    # _freed is set (True) only when backward releases the saved values: read it with getattr
    __slots__ = ("params", "needs", "shapes", "_saved", "_versions", "_out", "_outv", "_freed")
    _op = None
    _out_meta = None   # (shape, dtype) per output, kept for multi-output ops (zeros for unused ones)
    _argpos = None     # positions of the args that have edges, when scalars get none (pow)
    _in_dtypes = None  # input dtypes, kept when some differ from the output's (mixed-dtype add)

    @property
    def needs_input_grad(self):
        return self.needs

    # -- what the vjp rule reads
    @property
    def inputs(self):
        saved = self._saved
        if saved is None:
            if getattr(self, "_freed", False):
                raise RuntimeError(_FREED_MSG)
            raise RuntimeError(f"{type(self).__name__} did not save its inputs")
        if type(saved) is _Packed:
            return saved.unpack()
        vs = self._versions
        if vs is _V00 and saved[0]._vc is None and saved[1]._vc is None:
            return saved  # two inputs, never modified in place
        for a, v in zip(saved, vs):
            if v is not None:
                vc = a._vc
                if (vc[0] if vc is not None else 0) != v:
                    i = next(k for k, x in enumerate(saved) if x is a)
                    _version_error(self, a, i, v, vc)
        return saved

    @property
    def out(self):
        o = self._out
        if type(o) is _Packed:
            return o.unpack()[0]
        if o is not None and len(o) == 1:
            a = o[0]
            if a._vc[0] == self._outv[0]:
                return a
        return self.outs[0]

    @property
    def outs(self):
        o = self._out
        if o is None:
            if getattr(self, "_freed", False):
                raise RuntimeError(_FREED_MSG)
            raise RuntimeError(f"{type(self).__name__} did not save its output")
        if type(o) is _Packed:
            return o.unpack()
        for i, a in enumerate(o):
            vc = a._vc
            if vc[0] != self._outv[i]:
                _version_error(self, a, i, self._outv[i], vc, "output")
        return o

    def __getattr__(self, name):
        """PyTorch's saved-tensor attributes (``grad_fn._saved_self``, ``_saved_other``,
        ``_saved_result``, ``_saved_<param>``) for code that inspects the graph (torchviz). Only what
        the node really saved is there; after backward freed it, reading raises as PyTorch does."""
        if not name.startswith("_saved_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        key = name[7:]
        op = type(self)._op
        if key == "result" and op.save_out:
            return self.out
        if key in ("self", "other") and op.save_inputs:
            i = 0 if key == "self" else 1
            args = self.inputs
            if i < len(args):
                return args[i]
        params = object.__getattribute__(self, "params")
        for k in (key, key + "s"):  # PyTorch's `dim` is the registry's `dims`
            if k in params:
                v = params[k]
                return tuple(v) if isinstance(v, list) else v
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _release(self):
        if self._saved is not None or self._out is not None:
            self._saved = None
            self._out = None
            self._freed = True

    def apply(self, grads):
        op = self._op
        if op.nout != 1:
            meta = self._out_meta
            for i, g in enumerate(grads):
                if g is None:
                    shape, dt = meta[i]
                    from .. import _creation
                    dev = "meta" if any(h is not None and h._meta for h in grads) else None
                    grads[i] = _creation.zeros(shape, dtype=dt, device=dev)
        elif grads[0] is None:
            return (None,) * len(self._edges)
        res = op.vjp(self, *grads)
        if type(res) is not tuple:
            res = (res,) if not isinstance(res, list) else tuple(res)
        nargs = len(self.needs)
        if len(res) != nargs:
            raise RuntimeError(f"{type(self).__name__}: the vjp rule of {op.name} returned {len(res)} "
                               f"gradients, expected {nargs}")
        if op.bcast and self.shapes is not None:
            shapes = self.shapes
            res = tuple(_sum_to(g, shapes[i]) if g is not None and shapes[i] is not None
                        and g._data.shape != shapes[i] else g for i, g in enumerate(res))
        dts = self._in_dtypes
        if dts is not None:  # each input gets its gradient in its own dtype, as in PyTorch
            res = tuple(_to_input_dtype(g, dts[i]) if g is not None and dts[i] is not None and g.dtype is not dts[i]
                        else g for i, g in enumerate(res))
        if op.tensor_edges_only:
            pos = self._argpos
            if pos is not None:
                res = tuple(res[i] for i in pos)
        return res


def _no_complex_grad(op):
    """PyTorch's error for an op whose derivative formula is real-only (silu, embedding, ...)."""
    raise RuntimeError(f"{op.name} does not support automatic differentiation for outputs with complex dtype.")


def _to_input_dtype(g, d):
    """A gradient in its input's dtype; a real input of a complex result takes the real part
    (PyTorch's convention for real-to-complex functions)."""
    if g._data.dtype.kind == "c" and d.category != 3:
        g = g.real
    return g.to(d)


def _sum_to(g, shape):
    from .. import ops
    return ops.sum_to(g, shape)


class _SavedOut:
    """An output saved for backward without a reference cycle: unpacking makes a fresh alias
    whose grad_fn is the node (so higher-order gradients flow through it)."""
    __slots__ = ()


_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor",
               "uint8": "ByteTensor", "bool": "BoolTensor"}


def _version_error(node, t, i, saved_v, vc, what="input"):
    cur = vc[0] if vc is not None else 0
    by = f" It was last changed in place by {vc[1]}." if vc is not None and vc[1] else ""
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [torch.{_TYPE_NAMES.get(t.dtype.name, 'Tensor')} {list(t.shape)}], which is "
        f"{what} {i} of {type(node).__name__}, is at version {cur}; expected version {saved_v} "
        f"instead.{by} Hint: {node._op.name} saved this tensor for its backward; clone it before "
        f"modifying it, or do the modification out of place.")


def make_node_class(name, op):
    return type(name, (OpNode,), {"__slots__": (), "_op": op, "_nout": op.nout})


_NO_EDGE = (None, 0)
_NEEDS1 = (True,)  # a one-input op is recorded only when its input requires grad
_NEEDS2 = (True, True)
_V0 = (0,)  # the saved versions of never-modified inputs
_V00 = (0, 0)
_new = object.__new__


def _note_input_dtypes(node, args, out):
    """A mixed-dtype op (float32 + float64) gives each input its gradient in its own dtype, as
    PyTorch's engine does: the input dtypes are kept when a floating input differs from the output."""
    odt = out.dtype
    for a in args:
        if isinstance(a, Tensor) and a._data.dtype != odt and a._data.dtype.kind in "fcV":
            node._in_dtypes = tuple(FROM_NP[x._data.dtype] if isinstance(x, Tensor) else None for x in args)
            return


def record(op, args, params, out):
    """Wrap impl results and record the backward node (inputs require grad, grad mode on)."""
    single = op.nout == 1
    if single and type(out) is not _ndarray:
        out = _asarray(out)
    cls = op.node_cls
    node = _new(cls if cls is not None else op.node_class(args, params))
    node._seq = next(_seq)
    node.params = params
    nargs = len(args)
    if nargs == 2 and isinstance(args[0], Tensor) and isinstance(args[1], Tensor):
        # the common binary case, straight-line
        a, b = args
        ra = a._rg
        rb = b._rg
        if ra:
            fn = a._fn
            ea = (fn, a._nr) if fn is not None else (a, -1)
        else:
            ea = _NO_EDGE
        if rb:
            fn = b._fn
            eb = (fn, b._nr) if fn is not None else (b, -1)
        else:
            eb = _NO_EDGE
        node._edges = (ea, eb)
        node.needs = _NEEDS2 if ra and rb else (ra, rb)
        if a._data.dtype is not b._data.dtype:  # (any op: cat of float16 and float64 too)
            _note_input_dtypes(node, args, out if single else out[0])
        if op.save_shapes:
            node.shapes = (a._data.shape, b._data.shape)
        elif op.bcast:  # input shapes only when some input was broadcast (grads are summed back)
            osh = out.shape if single else np.shape(out[0])
            sa = a._data.shape
            sb = b._data.shape
            node.shapes = (sa, sb) if sa != osh or sb != osh else None
        else:
            node.shapes = None
        if op.save_inputs:
            node._saved = args
            va = a._vc
            vb = b._vc
            node._versions = (_V00 if va is None and vb is None else
                              (va[0] if va is not None else 0, vb[0] if vb is not None else 0))
        else:
            node._saved = None
    else:
        if nargs == 1:
            a = args[0]
            fn = a._fn
            node._edges = ((fn, a._nr) if fn is not None else (a, -1),)
            node.needs = _NEEDS1
            if single and out.dtype is not a._data.dtype and a._data.dtype.kind in "fcV":
                _note_input_dtypes(node, args, out)  # sum(dtype=float64) of float32: a float32 gradient
        else:
            edges = []
            needs = []
            for a in args:
                if isinstance(a, Tensor) and a._rg:
                    fn = a._fn
                    edges.append((fn, a._nr) if fn is not None else (a, -1))
                    needs.append(True)
                else:
                    edges.append(_NO_EDGE)
                    needs.append(False)
            if op.tensor_edges_only:
                pos = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
                if len(pos) != len(args):
                    node._argpos = pos
                    edges = [edges[i] for i in pos]
            node._edges = tuple(edges)
            node.needs = tuple(needs)
            if nargs > 1:  # any op with mixed floating inputs (cat, stack, where, ...)
                _note_input_dtypes(node, args, out if single else out[0])
        if op.save_shapes:
            node.shapes = tuple(a._data.shape if isinstance(a, Tensor) else None for a in args)
        else:
            node.shapes = None
            if op.bcast:
                osh = out.shape if single else np.shape(out[0])
                for a in args:
                    if isinstance(a, Tensor) and a._data.shape != osh:
                        node.shapes = tuple(a._data.shape if isinstance(a, Tensor) else None for a in args)
                        break
        if op.save_inputs:
            node._saved = args
            if nargs == 1:
                vc = args[0]._vc
                node._versions = _V0 if vc is None else (vc[0],)
            else:
                vs = []
                for a in args:
                    if isinstance(a, Tensor):
                        vc = a._vc
                        vs.append(vc[0] if vc is not None else 0)
                    else:
                        vs.append(None)
                node._versions = vs
        else:
            node._saved = None
    if single:
        o = _new(Tensor)
        o._data = out
        k = out.dtype.kind
        if k == "f" or k == "V":
            o._rg = True
            o._fn = node
        elif k == "c":
            if op.__dict__.get("real_grad_only"):
                _no_complex_grad(op)
            o._rg = True
            o._fn = node
        else:
            o._rg = False
            o._fn = None
        o._nr = 0
        o._vc = None
        o._base = None
        o._grad = None
        if op.view:
            D._link_view(o, args[0])
        if op.save_out:
            # an alias sharing data and version counter: the node must not keep o alive
            vc = o._vc
            if vc is None:
                vc = o._vc = [0, None]
            al = _new(Tensor)
            al._data = out
            al._rg = o._rg
            al._fn = o._fn
            al._nr = 0
            al._vc = vc
            al._base = o._base  # not o itself: no cycle node -> alias -> o -> node
            al._grad = None
            if o._meta:
                al._meta = True
            node._out = (al,)
            node._outv = (vc[0],)
        else:
            node._out = None
        if _state.anomaly:
            node._trace = capture_forward_stack()
            node._parent_trace = _current_parent_trace[0]
        if _saved_hooks:
            _pack_node(node)
        return o
    outs = D.wrap_outputs(op, out, args)
    node._out_meta = tuple((o._data.shape, o.dtype) for o in outs)
    diff = op.diff_outputs
    for i, o in enumerate(outs):
        if (diff is None or i in diff) and o._data.dtype.kind in "fcV":
            o._rg = True
            o._fn = node
            o._nr = i
    if op.save_out:
        node._out = tuple(_saved_alias(o, node, i) for i, o in enumerate(outs))
        node._outv = tuple(a._vc[0] for a in node._out)
    else:
        node._out = None
    if _state.anomaly:
        node._trace = capture_forward_stack()
        node._parent_trace = _current_parent_trace[0]
    if _saved_hooks:
        _pack_node(node)
    return outs


# ----------------------------------------------------------------------------- saved-tensor hooks

_saved_hooks = []  # (pack_hook, unpack_hook) pairs of the saved_tensors_hooks blocks entered, innermost last


class _Packed(tuple):
    """What a node saved, passed through a pack hook: (unpack_hook, items), items the packed
    values of the tensors (and the non-tensor values as they were). Reading it calls the unpack
    hook on each packed value, every time backward reads it, as PyTorch does."""
    __slots__ = ()

    def unpack(self):
        unpack_hook, items = self
        out = []
        for is_tensor, v in items:
            if is_tensor:
                t = unpack_hook(v)
                if not isinstance(t, Tensor):
                    raise TypeError(f"saved_tensors_hooks: the unpack hook must return a Tensor, got "
                                    f"{type(t).__name__}")
                out.append(t)
            else:
                out.append(v)
        return tuple(out)


def pack_saved(values):
    """``values`` through the innermost pack hook (a _Packed), or as they are without hooks."""
    if not _saved_hooks or values is None:
        return values
    pack_hook, unpack_hook = _saved_hooks[-1]
    stack = _saved_hooks[:]
    _saved_hooks.clear()  # what a hook computes is not packed again (no recursion)
    try:
        return _Packed((unpack_hook, tuple((True, pack_hook(v)) if isinstance(v, Tensor) else (False, v)
                                           for v in values)))
    finally:
        _saved_hooks[:] = stack


def _pack_node(node):
    node._saved = pack_saved(node._saved)
    node._out = pack_saved(node._out)


class saved_tensors_hooks:
    """``with saved_tensors_hooks(pack_hook, unpack_hook):`` every tensor an op saves for backward
    inside the block is stored as ``pack_hook(tensor)``, and backward reads ``unpack_hook(packed)``
    instead (to offload, compress or log saved activations). In-place changes to the original
    tensor are not checked for packed saves: the hooks own them."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hooks_disabled:
            raise RuntimeError(_hooks_disabled[-1])
        _saved_hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _saved_hooks.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are moved to the CPU until backward. ember's tensors live on the CPU already:
    as in PyTorch on the CPU, the tensor itself is kept (``tensor.cpu()`` of a CPU tensor is the
    tensor), or, with ``pin_memory=True``, a copy of it (PyTorch copies into pinned memory); packed
    saves are not version-checked, as in PyTorch."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        pack = (lambda t: t.detach().clone()) if pin_memory else (lambda t: t)
        super().__init__(pack, lambda packed: packed)


_hooks_disabled = []


class disable_saved_tensors_hooks:
    """A block in which entering saved_tensors_hooks raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        _hooks_disabled.append(self.error_message)
        return self

    def __exit__(self, *exc):
        _hooks_disabled.pop()
        return False


def _saved_alias(o, node, i):
    """A separate tensor object sharing o's data, version counter and grad_fn, so the node does
    not keep the output object (which keeps the node) alive."""
    if o._vc is None:
        o._vc = [0, None]
    a = D._new_tensor(o._data)
    a._vc = o._vc
    a._base = o._base
    if o._meta:
        a._meta = True
    a._rg = o._rg
    a._fn = node if o._fn is node else None
    a._nr = i
    if o._fw is not None:
        a._fw = o._fw
    return a


# ----------------------------------------------------------------------------- anomaly support
# In anomaly mode every node keeps the call stack of its forward as (code object, line number)
# pairs, which is cheap to take; it is formatted only when that node's backward fails.
# Nodes created while another node's backward runs (double backward) also keep that node's
# trace, so a failure deep in a nested backward reports the chain of forward calls behind it.

_current_parent_trace = [None]  # (trace, parent) of the node whose backward is running
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def capture_forward_stack():
    """The caller's stack as (code, lineno) pairs, innermost first."""
    f = sys._getframe(2)
    frames = []
    append = frames.append
    while f is not None:
        append((f.f_code, f.f_lineno))
        f = f.f_back
    return frames


def _user_frames(frames):
    """The frames outside ember itself, outermost first."""
    return [(c, n) for c, n in reversed(frames) if not c.co_filename.startswith(_PKG_DIR)]


def format_forward_stack(frames):
    import linecache
    lines = []
    for code, lineno in _user_frames(frames):
        src = linecache.getline(code.co_filename, lineno).strip()
        lines.append(f'  File "{code.co_filename}", line {lineno}, in {code.co_name}\n'
                     + (f"    {src}\n" if src else ""))
    return "".join(lines)


def _apply_anomaly(node, grads):
    prev = _current_parent_trace[0]
    _current_parent_trace[0] = (node._trace, node._parent_trace) if node._trace is not None else prev
    try:
        outs = node.apply(grads)
    except Exception as e:
        _report_forward_trace(node, e)
        raise
    finally:
        _current_parent_trace[0] = prev
    if D.state.anomaly_nan:
        isnan = D.xp.isnan
        for i, g in enumerate(outs):
            # max propagates NaN: one pass and no temporary array
            if g is not None and g.dtype.is_floating_point and g._data.size and isnan(g._data.max()):
                err = RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
                _report_forward_trace(node, err)
                raise err
    return outs


def _report_forward_trace(node, err):
    """Warn with the forward traceback of the failing node (as PyTorch does) and attach it to the
    exception as a note, once: an error passing up through enclosing backward calls keeps the
    innermost report."""
    if getattr(err, "_ember_anomaly_reported", False):
        return
    if node._trace is None:
        text = (f"Error detected in {node.name()}. No forward pass information available. Enable detect "
                f"anomaly during forward pass for more information.")
        site = None
    else:
        text = (f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                + format_forward_stack(node._trace))
        user = _user_frames(node._trace)
        site = user[-1] if user else None
        parent = node._parent_trace
        while parent is not None:
            ptrace, parent = parent
            text += ("\nPrevious calculation was induced by a node. Traceback of forward call that "
                     "induced the previous calculation:\n" + format_forward_stack(ptrace))
    text = text.rstrip("\n")
    if site is not None:
        warnings.warn_explicit(text, UserWarning, site[0].co_filename, site[1])
    else:
        warnings.warn(text, UserWarning, stacklevel=3)
    try:
        err._ember_anomaly_reported = True
        if hasattr(err, "add_note"):
            err.add_note(text)
    except AttributeError:  # exceptions without a __dict__
        pass


# ----------------------------------------------------------------------------- the engine


_REGION_OPS = []  # slice and select (filled at the first backward: the ops register after this module)


def _region_ops():
    if not _REGION_OPS:
        from ..ops import shape
        _REGION_OPS.extend((shape.slice_op, shape.select_op))
    return _REGION_OPS


def _add_into(b, a):
    """b += a in place (arrays) when that is b + a exactly: NumPy arrays of the same shape and dtype,
    b writeable."""
    if type(b) is not np.ndarray or type(a) is not np.ndarray or b.shape != a.shape or b.dtype != a.dtype \
            or not b.flags.writeable:
        return False
    np.add(b, a, out=b)
    return True


def _into_region(node, g, buffers, owned):
    """A slice's or select's gradient g added into its region of its input's buffer, when that
    buffer is this loop's own; False when the node must run as usual."""
    nxt, nr = node._edges[0]
    buf = buffers.get(nxt) if nr >= 0 and nxt in owned else None
    if buf is None:
        return False
    b, a, p = buf._data, g._data, node.params
    if type(b) is not np.ndarray or type(a) is not np.ndarray or b.shape != node.shapes[0]:
        return False
    d = p["dim"]
    if "index" in p:  # select: the region keeps its dim (of length 1), as a view even of a 1-D buffer
        i = p["index"]
        region, a = b[(slice(None),) * d + (slice(i, i + 1),)], np.expand_dims(a, d)
    else:
        region = b[(slice(None),) * d + (slice(p["start"], p["stop"], p["step"]),)]
    return _add_into(region, a)


def execute_simple(fn, g, keep_graph):
    """loss.backward() for one root with an engine-made gradient ``g``, no capture, nobody
    listening: nodes run in decreasing ``_seq`` order with no dependency counting.

    A node's ``_seq`` is larger than those of the nodes its edges lead to (it is numbered when
    recorded, after its inputs), so when the touched node with the largest ``_seq`` is run, every
    consumer of it reachable from the root has already run: its gradient is complete. Leaves
    without hooks take each gradient as it arrives (as in ``execute``). Anything needing more
    (hooks, a leaf's AccumulateGrad, multi-output nodes, retain_grad) hands the remaining graph
    to ``execute``: the touched, not yet run nodes become its roots, so it counts exactly the
    dependencies still outstanding.

    A gradient buffer this loop made itself (a sum of two gradients, or the zero-padded gradient of
    a slice or select) is nobody else's: later gradients for it are added in place, and a slice's
    or select's gradient goes into its region of the buffer, without the padded copy (the pieces of
    split/chunk/unbind: one buffer, not one padded tensor and one sum per piece)."""
    if _state.listeners or _state.anomaly:
        return execute([(fn, 0)], [g], keep_graph, False, None, True)
    gm = D.grad_mode
    prev_mode = gm.enabled
    gm.enabled = False
    stored = set()
    buffers = {fn: g}
    owned = set()  # nodes whose buffer this loop made (see above)
    region_ops = _region_ops()
    ready = []
    node = fn
    try:
        while True:
            if node is None:
                if not ready:
                    return
                node = heappop(ready)[2]
            edges = node._edges
            # what this loop cannot do: the general engine takes over from here
            ok = not node._hooked and node._nout == 1 and type(node) is not AccumulateGrad
            if ok:
                for nxt, nr in edges:
                    if nxt is not None and (nxt._acc is not None if nr < 0 else
                                            (nxt._nout != 1 or type(nxt) is AccumulateGrad)):
                        ok = False
                        break
            if not ok:
                gm.enabled = prev_mode
                if node is fn:  # nothing has run yet
                    execute([(fn, 0)], [g], keep_graph, False, None, True)
                    return
                heappush(ready, (-node._seq, id(node), node))
                # a node that got only None gradients so far is left out: nothing flows from it
                rest = [n for _, _, n in ready if buffers.get(n) is not None]
                execute([(n, 0) for n in rest], [buffers[n] for n in rest], keep_graph, False,
                        None, False, stored)
                return
            grads = buffers.pop(node, None)
            op = getattr(node, "_op", None)  # (a custom Function's node has none)
            if grads is None or (op in region_ops and _into_region(node, grads, buffers, owned)):
                outs = (None,) * len(edges)
            else:
                outs = node.apply([grads])
            fn = None
            if not keep_graph:
                node._release()
            node = None
            for (nxt, nr), g in zip(edges, outs):
                if nxt is None:
                    continue
                if nr < 0:  # a leaf with no hooks (checked above)
                    if g is not None:
                        _accumulate(nxt, g, stored)
                    continue
                if nxt in buffers:
                    if g is not None:
                        old = buffers[nxt]
                        if old is None:
                            buffers[nxt] = g
                        elif nxt in owned and _add_into(old._data, g._data):
                            pass
                        else:
                            buffers[nxt] = old + g
                            owned.add(nxt)
                    continue  # already queued
                buffers[nxt] = g
                if g is not None and op in region_ops:
                    owned.add(nxt)
                if node is None and not ready:
                    node = nxt  # a chain: no queue round trip, unless another node is touched
                else:
                    if node is not None:  # not alone: the largest _seq goes first
                        heappush(ready, (-node._seq, id(node), node))
                        node = None
                    heappush(ready, (-nxt._seq, id(nxt), nxt))
    finally:
        gm.enabled = prev_mode


def execute(roots, root_grads, keep_graph, create_graph, capture=None, own_roots=False, stored=None):
    """Run backward from ``roots`` (edges) seeded with ``root_grads``.

    capture: optional list of edges whose incoming gradient is returned (autograd.grad) instead
    of being accumulated into leaves; only the part of the graph that reaches them is run.
    own_roots: root_grads are fresh tensors nobody else holds (they may become a leaf's .grad).

    An edge ``(t, -1)`` leads to a leaf tensor: if its AccumulateGrad node is alive (hooks on
    it, or someone holds it) the node runs; otherwise the engine accumulates into ``t`` as soon
    as all of its gradients have arrived (tensor hooks see their sum, as in PyTorch), or, for a
    leaf with no hooks at all, as each one arrives.
    """
    # dependency counts over the reachable graph
    deps = {}
    stack = []
    for fn, _ in roots:
        if fn is not None and fn not in deps:
            deps[fn] = 0
            stack.append(fn)
    order = [] if capture is not None else None  # the visit order, needed only for capture
    while stack:
        n = stack.pop()
        if order is not None:
            order.append(n)
        for nxt, nr in n._edges:
            if nxt is None:
                continue
            if nr < 0:
                if nxt._acc is None:
                    continue  # a plain leaf: each gradient is accumulated as it arrives
                acc = _live_acc(nxt)
                if acc is not None:
                    nxt = acc
            d = deps.get(nxt)
            if d is None:
                deps[nxt] = 1
                if nr >= 0:
                    stack.append(nxt)
            else:
                deps[nxt] = d + 1

    captured = None
    needed = None
    cap_at = None
    if capture is not None:
        captured = [None] * len(capture)
        cap_at = {}
        for k, (fn, nr) in enumerate(capture):
            if fn is not None:
                cap_at.setdefault(fn, []).append((nr, k))
        # the nodes from which some captured edge is reachable
        needed = set(cap_at)
        changed = True
        rev = order[::-1]
        while changed:
            changed = False
            for n in rev:
                if n not in needed:
                    for nxt, nr in n._edges:
                        if nr < 0 and nxt._acc is not None:
                            nxt = _live_acc(nxt) or nxt
                        if nxt in needed:
                            needed.add(n)
                            changed = True
                            break

    # incoming gradients: the tensor itself for single-output nodes, a list per output otherwise
    buffers = {}
    for (fn, nr), g in zip(roots, root_grads):
        if fn is None:
            continue
        if fn._nout == 1:
            old = buffers.get(fn)
            buffers[fn] = g if old is None else old + g
            continue
        buf = buffers.get(fn)
        if buf is None:
            buf = buffers[fn] = [None] * fn._nout
        buf[nr] = g if buf[nr] is None else buf[nr] + g

    ready = []
    node = None  # the node to run next without a queue round trip (a single root, a chain)
    for fn, _ in roots:
        if fn is not None and deps.get(fn, 0) == 0 and fn in buffers:
            deps[fn] = -1  # queued
            if len(roots) == 1:
                node = fn
            else:
                heappush(ready, (-fn._seq, id(fn), fn))
    listeners = _state.listeners
    anomaly = _state.anomaly
    gm = D.grad_mode
    prev_mode = gm.enabled
    gm.enabled = bool(create_graph)
    leaf_bufs = {}
    # the caller's gradients never become a .grad as they are (unless the engine made them:
    # own_roots, the implicit ones of loss.backward())
    if stored is None:
        stored = set() if own_roots else set(map(id, root_grads))
    else:  # handed over by execute_simple: its gradients are the engine's own
        stored.update(map(id, root_grads))
    try:
        while True:
            if node is None:  # else: the one node the last step made ready, run at once
                if not ready:
                    break
                node = heappop(ready)[2]
            grads = buffers.pop(node, None)
            if node._nout == 1:
                grads = [grads]
            elif grads is None:
                grads = [None] * node._nout
            hooked = node._hooked
            if hooked:
                if node._thooks or node._retain:
                    grads = _run_tensor_hooks(node, grads)
            if cap_at is not None:
                if node in cap_at:
                    for nr, k in cap_at[node]:
                        g = grads[nr]
                        captured[k] = g if captured[k] is None else captured[k] + g
                    if type(node) is AccumulateGrad:
                        node = None
                        continue
                if node not in needed:
                    node = None
                    continue
            if hooked and node._pre_hooks:
                for h in node._pre_hooks:
                    r = h(tuple(grads))
                    if r is not None:
                        grads = list(r)
            edges = node._edges
            if (grads[0] is None if len(grads) == 1 else all(g is None for g in grads)):
                outs = (None,) * len(edges)
            elif listeners or anomaly:
                outs = _apply_listened(node, grads, listeners, anomaly)
            else:
                outs = node.apply(grads)
            if hooked and node._hooks:
                for h in node._hooks:
                    r = h(tuple(outs), tuple(grads))
                    if r is not None:
                        outs = tuple(r)
            if not keep_graph:
                node._release()
            node = None
            for (nxt, nr), g in zip(edges, outs):
                if nxt is None:
                    continue
                if nr < 0:  # a leaf
                    if nxt._acc is None:
                        # no hook sees the sum: accumulating each part into .grad is the same
                        if g is not None and needed is None:
                            if listeners:
                                _accumulate_listened(nxt, g, listeners, stored)
                            else:
                                _accumulate(nxt, g, stored)
                        continue
                    if nxt._acc is not None:
                        acc = _live_acc(nxt)
                        if acc is not None:
                            nxt, nr = acc, 0
                    if nr < 0:
                        d = deps[nxt] - 1
                        deps[nxt] = d
                        if g is not None:
                            old = leaf_bufs.get(nxt)
                            if old is not None:
                                g = old + g
                            if d:
                                leaf_bufs[nxt] = g
                            elif needed is None:
                                if old is not None:
                                    del leaf_bufs[nxt]
                                if listeners:
                                    _accumulate_listened(nxt, g, listeners, stored)
                                else:
                                    accumulate_into(nxt, g, stored)
                        elif not d and nxt in leaf_bufs and needed is None:
                            if listeners:
                                _accumulate_listened(nxt, leaf_bufs.pop(nxt), listeners, stored)
                            else:
                                accumulate_into(nxt, leaf_bufs.pop(nxt), stored)
                        continue
                if g is not None:
                    if nxt._nout == 1:
                        old = buffers.get(nxt)
                        buffers[nxt] = g if old is None else old + g
                    else:
                        buf = buffers.get(nxt)
                        if buf is None:
                            buf = buffers[nxt] = [None] * nxt._nout
                        old = buf[nr]
                        buf[nr] = g if old is None else old + g
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0:
                    if node is None and not ready:
                        node = nxt  # a chain: no queue round trip
                    else:
                        heappush(ready, (-nxt._seq, id(nxt), nxt))
    finally:
        gm.enabled = prev_mode
    return captured


def _apply_listened(node, grads, listeners, anomaly):
    closers = [l.on_node(node) for l in listeners] if listeners else None
    try:
        return _apply_anomaly(node, grads) if anomaly else node.apply(grads)
    finally:
        if closers:
            for c in reversed(closers):
                if c is not None:
                    c()


def _accumulate_listened(var, g, listeners, stored=None):
    """Leaf accumulation while a profiler listens: reported as an AccumulateGrad node."""
    closers = [l.on_node(var) for l in listeners]
    try:
        accumulate_into(var, g, stored)
    finally:
        for c in reversed(closers):
            if c is not None:
                c()


_LEAF_SEQ = sys.maxsize


def _run_tensor_hooks(node, grads):
    grads = list(grads)
    if node._thooks:
        for nr, hooks in node._thooks.items():
            g = grads[nr]
            if g is None:
                continue
            for h in hooks:
                r = h(g)
                if r is not None:
                    g = r
            grads[nr] = g
    if node._retain:
        for nr, ref in node._retain.items():
            t = ref()
            g = grads[nr]
            if t is not None and g is not None:
                gg = g.detach() if not D.grad_mode.enabled else g
                if t._grad is None:
                    t._grad = gg.clone() if not D.grad_mode.enabled else gg
                else:
                    t._grad = t._grad + gg
    return grads


D.record = record
