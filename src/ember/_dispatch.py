"""The op registry and the one dispatch path every primitive runs through.

A primitive is declared once (``defop``) with its rules side by side:

* ``impl(xp, *arrays, **params)``: the computation on raw arrays (``xp`` is the array module);
* ``vjp(ctx, *grads)``: input gradients from output gradients, written in ember ops so that
  it is itself differentiable (create_graph, hessians) and batchable;
* ``jvp(ctx, *tangents)``: output tangents from input tangents (forward mode), in ember ops;
* ``batch``: how to run under vmap (most ops get it from their family: elementwise,
  reduction, view, ...);
* metadata: which inputs/outputs the backward needs (``save``), whether outputs are views,
  which outputs are differentiable, whether input gradients are reduced over broadcasting.

``dispatch(op, args, params)`` unwraps tensors, runs the active transforms (vmap and forward-mode
levels, highest level first), runs ``impl``, records the autograd node when gradients are
needed, and reports to the profiler when one listens. The fast path — no transform, no
listener — does as little Python work as possible: it sets the per-op overhead.
"""
import math
import threading

import numpy as np

xp = np  # the array module of every tensor today; a CuPy device would add a second one
_ndarray = np.ndarray
_asarray = np.asarray
_EMPTY = {}


class _GradMode(threading.local):
    enabled = True
    inference = False


grad_mode = _GradMode()


class _State:
    """Global switches that push dispatch off its fast path."""
    __slots__ = ("simple", "levels", "listeners", "anomaly", "anomaly_nan", "inference_depth", "proxy_tracers")

    def __init__(self):
        self.simple = True      # no transform level, no listener, no anomaly mode
        self.levels = []        # active transform levels (vmap / forward-mode), innermost last
        self.listeners = []     # profiler-like objects with on_op(op, args, params) and
        #                         on_node(node), each returning a closer or None
        self.anomaly = False
        self.anomaly_nan = True
        self.inference_depth = 0  # inference_mode blocks entered (outputs are marked there)
        self.proxy_tracers = 0    # live fx tracers whose Proxies may reach ops outside a trace

    def refresh(self):
        self.simple = not (self.levels or self.listeners or self.anomaly or self.inference_depth
                           or self.proxy_tracers)


state = _State()

Tensor = None  # bound by ember._tensor at import (the module graph is circular by nature)
_new_tensor = None
record = None  # bound by ember.autograd.graph at import: records a backward node
_new = object.__new__


class Op:
    """One primitive and all its rules."""
    __slots__ = ("name", "impl", "vjp", "jvp", "batch", "nout", "view", "bcast",
                 "diff_outputs", "node_cls", "node_rule", "_node_classes", "family", "inplace_ufunc",
                 "differentiable", "tensor_edges_only", "_save", "save_inputs", "save_out", "save_shapes",
                 "__dict__")

    def __init__(self, name, impl, *, save=(), nout=1, view=False, bcast=False,
                 diff_outputs=None, family=None, differentiable=True, node_name=None,
                 tensor_edges_only=False):
        self.name = name
        self.impl = impl
        self.vjp = None
        self.jvp = None
        self.batch = None
        self.save = save        # subset of {"inputs", "out"}
        self.nout = nout
        self.view = view        # output(s) share memory with input 0
        self.bcast = bcast      # vjp grads are summed back over broadcast dims
        self.diff_outputs = diff_outputs  # indices of outputs that carry gradient (None: all)
        self.family = family
        self.differentiable = differentiable
        # Python-number args get no edge in the node (PyTorch's Scalar overloads, e.g. pow)
        self.tensor_edges_only = tensor_edges_only
        # the backward node's class name, as PyTorch names it: a string, or a rule
        # ``node_name(args, params) -> str`` for an op that stands for several PyTorch overloads
        # (sum() is SumBackward0, sum(dim) SumBackward1); a rule runs only when a node is
        # recorded, and ops without one pay nothing (node_cls is their one class)
        from .autograd.graph import make_node_class
        if callable(node_name):
            self.node_cls = None
            self.node_rule = node_name
            self._node_classes = {}
        else:
            self.node_cls = make_node_class(node_name or _camel(name) + "Backward0", self)
            self.node_rule = None
            self._node_classes = None

    def node_class(self, args, params):
        """The node class for one call: the op's fixed class, or the one its naming rule picks
        (made once per name)."""
        cls = self.node_cls
        if cls is not None:
            return cls
        name = self.node_rule(args, params)
        cls = self._node_classes.get(name)
        if cls is None:
            from .autograd.graph import make_node_class
            cls = self._node_classes[name] = make_node_class(name, self)
        return cls

    @property
    def save(self):
        """What record() keeps for the rules: a subset of {"inputs", "out", "shapes"}."""
        return self._save

    @save.setter
    def save(self, value):
        self._save = tuple(value)
        self.save_inputs = "inputs" in self._save
        self.save_out = "out" in self._save
        self.save_shapes = "shapes" in self._save

    def def_vjp(self, fn):
        self.vjp = fn
        return fn

    def def_jvp(self, fn):
        self.jvp = fn
        return fn

    def def_batch(self, fn):
        self.batch = fn
        return fn

    @property
    def __name__(self):
        return self.name

    def __repr__(self):
        return f"<ember op {self.name}>"

    def __call__(self, *args, **params):
        return dispatch(self, args, params)


REGISTRY = {}


def defop(name, impl=None, **kw):
    """Register a primitive; usable as a decorator on its impl."""
    def register(fn):
        if name in REGISTRY:
            raise RuntimeError(f"op {name!r} is registered twice")
        op = Op(name, fn, **kw)
        REGISTRY[name] = op
        return op
    return register(impl) if impl is not None else register


def _camel(name):
    """PyTorch's node names: log_softmax -> LogSoftmax, and a letter after a digit is a capital
    (log1p -> Log1P, avg_pool2d_backward -> AvgPool2DBackward)."""
    s = "".join(p[:1].upper() + p[1:] for p in name.split("_"))
    return "".join(c.upper() if i and s[i - 1].isdigit() else c for i, c in enumerate(s))


# ----------------------------------------------------------------------------- the path


def dispatch(op, args, params=_EMPTY):
    if state.simple:
        # the fast path: plain arrays, no transform, no listener
        try:  # (costs nothing in CPython 3.11+ until something raises)
            n = len(args)
            if n == 2:
                a, b = args
                rg = False
                if isinstance(a, Tensor):
                    if a._meta:
                        return _meta_eval(op, args, params)
                    rg = a._rg
                    a = a._data
                if isinstance(b, Tensor):
                    if b._meta:
                        return _meta_eval(op, args, params)
                    if b._rg:
                        rg = True
                    b = b._data
                out = op.impl(xp, a, b, **params) if params else op.impl(xp, a, b)
            elif n == 1 and isinstance(args[0], Tensor):
                a = args[0]
                if a._meta:
                    return _meta_eval(op, args, params)
                rg = a._rg
                out = op.impl(xp, a._data, **params) if params else op.impl(xp, a._data)
            else:
                rg = False
                arrs = []
                for a in args:
                    if isinstance(a, Tensor):
                        if a._meta:
                            return _meta_eval(op, args, params)
                        arrs.append(a._data)
                        if a._rg:
                            rg = True
                    else:
                        arrs.append(a)
                out = op.impl(xp, *arrs, **params)
        except Exception as e:
            raise op_error(op, e, args) from _cause(e)
        if rg and grad_mode.enabled and op.differentiable:
            return record(op, args, params, out)
        if op.nout == 1 and not op.view:
            if type(out) is not _ndarray:
                out = _asarray(out)
            t = _new(Tensor)
            t._data = out
            t._rg = False
            t._fn = None
            t._nr = 0
            t._vc = None
            t._base = None
            t._grad = None
            return t
        return wrap_outputs(op, out, args)
    return dispatch_slow(op, args, params)


# Forward buffers a fused backward reuses (softmax probabilities, LayerNorm's x-hat, the LSTM's gates):
# the impl hands them to keep() while a dispatch_keeping() of its op runs, and they go to the node that
# dispatch records (node._kept), for the vjp to read; without a recorded node of that op they are
# dropped, and outside dispatch_keeping keep() holds nothing.
_kept = threading.local()


def keeping():
    """Whether what the running impl hands to keep() would be kept (its cost may then be worth it)."""
    return getattr(_kept, "on", False)


def keep(value):
    if getattr(_kept, "on", False):
        _kept.value = value


def dispatch_keeping(op, args, params=_EMPTY, on=True):
    """dispatch(op, args, params), its recorded node of ``op`` given what the impl kept (node._kept);
    ``on`` False: plain dispatch."""
    if not on:
        return dispatch(op, args, params)
    outer = (getattr(_kept, "on", False), getattr(_kept, "value", None))  # (a nested one: restored after)
    _kept.on, _kept.value = True, None
    try:
        out = dispatch(op, args, params)
    finally:
        value = _kept.value
        _kept.on, _kept.value = outer
    node = (out if op.nout == 1 else out[0])._fn
    if value is not None and node is not None and getattr(type(node), "_op", None) is op:
        node._kept = value
    return out


def wrap_outputs(op, out, args):
    """Tensors from impl results; view outputs share the input's version counter and base."""
    if op.nout == 1:
        if type(out) is not _ndarray:
            out = _asarray(out)
        t = _new_tensor(out)
        if op.view:
            _link_view(t, args[0])
        return t
    res = []
    for o in out:
        if type(o) is not _ndarray:
            o = _asarray(o)
        t = _new_tensor(o)
        if op.view:
            _link_view(t, args[0])
        res.append(t)
    return tuple(res)


def _link_view(t, src):
    vc = src._vc
    if vc is None:
        vc = src._vc = [0, None]
    t._vc = vc
    t._base = src._base if src._base is not None else src
    if src._inference:
        t._inference = True


def _foreign_handler(args):
    """The ``__ember_dispatch__`` of an argument that records ops instead of running them (an fx
    Proxy appended to a graph by hand), looked for one container deep (``cat([p, q])``)."""
    for a in args:
        h = getattr(type(a), "__ember_dispatch__", None)
        if h is not None:
            return a
        if type(a) in (list, tuple):
            for x in a:
                if getattr(type(x), "__ember_dispatch__", None) is not None:
                    return x
    return None


def dispatch_slow(op, args, params):
    """Transforms, listeners and anomaly mode. Transform levels run highest first."""
    if state.proxy_tracers:
        p = _foreign_handler(args)
        if p is not None:
            return p.__ember_dispatch__(op, args, params)
    lvl = _top_level(args)
    if lvl is not None:
        return lvl.process(op, args, params)
    listeners = state.listeners
    if listeners:
        ctxs = [cb.on_op(op, args, params) for cb in listeners]
        try:
            return _eager(op, args, params)
        finally:
            for c in reversed(ctxs):
                if c is not None:
                    c()
    return _eager(op, args, params)


def _eager(op, args, params):
    rg = False
    arrs = []
    for a in args:
        if isinstance(a, Tensor):
            if a._meta:
                return _meta_eval(op, args, params)
            arrs.append(a._data)
            if a._rg:
                rg = True
        else:
            arrs.append(a)
    try:
        out = op.impl(xp, *arrs, **params)
    except Exception as e:
        raise op_error(op, e, args) from _cause(e)
    if rg and grad_mode.enabled and op.differentiable:
        return record(op, args, params, out)
    res = wrap_outputs(op, out, args)
    if grad_mode.inference:
        for t in (res,) if op.nout == 1 else res:
            t._inference = True
    return res


_META_SMALL = 1 << 22                      # elements: any op runs on stand-ins this small (copies of them)
_META_BY_SIZES = ("elementwise", "reduction", "linalg")   # families whose params name dims, never sizes
_STAND_INS = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47)


def _meta_of(shape, dtype):
    t = _new_tensor(np.broadcast_to(np.zeros((), dtype), shape))   # one element: no storage
    t._meta = True
    return t


def _meta_eval(op, args, params):
    """Ops on 'meta' tensors: the output's shape and dtype, never any data.

    * views run on the inputs' zero-strided stand-ins (numpy views cost nothing, whatever the size);
    * elementwise, reduction and linalg ops (whose parameters name dims, never sizes) run on tiny
      arrays in which every distinct size is replaced by a distinct small number, whose output
      dims map back to the true sizes;
    * any op on small meta tensors runs on zero-strided stand-ins;
    * other ops on large meta tensors raise NotImplementedError naming the op."""
    meta_in = [a for a in args if isinstance(a, Tensor)]
    for a in meta_in:
        if not a._meta and a._data.ndim:
            raise RuntimeError(f"{op.name}: Tensor on device cpu is not on the expected device meta! "
                               f"(shapes {[list(t.shape) for t in meta_in]})")
    arrs = [a._data if isinstance(a, Tensor) else a for a in args]
    try:
        if op.name == "as_strided":
            outs = (np.broadcast_to(np.zeros((), arrs[0].dtype), tuple(params["size"])),)
        else:
            outs = _meta_run(op, args, arrs, params)
    except NotImplementedError:
        raise
    except Exception as e:
        raise op_error(op, e, args) from _cause(e)
    if outs is None:
        raise NotImplementedError(
            f"{op.name}: no shape rule for meta tensors this large (shapes "
            f"{[list(t.shape) for t in meta_in]}): on the 'meta' device ember computes creation, view, "
            f"elementwise, reduction, matmul, cat, stack, sort and scan results of any size, convolutions, "
            f"pools and norms of any batch size, other ops up to {_META_SMALL} elements")
    if grad_mode.enabled and op.differentiable and any(a._rg for a in meta_in):
        # autograd on meta tensors: the node is recorded as for data, its outputs (and the aliases
        # it saves of them) marked meta, so that backward runs on meta tensors as well
        rec = record(op, args, params, outs[0] if op.nout == 1 else list(outs))
        res = [rec] if op.nout == 1 else list(rec)
        nodes = {id(t._fn): t._fn for t in res if t._fn is not None}
        for t in res:
            t._meta = True
        for node in nodes.values():
            for al in (getattr(node, "_out", None) or ()):
                al._meta = True
    else:
        res = [_meta_of(o.shape, o.dtype) for o in outs]
    if op.view and op.nout == 1:
        st = _meta_view_strides(op, args[0], params, res[0].shape)
        if st is not None:
            res[0]._mstride = st
    return res[0] if op.nout == 1 else tuple(res)


def _meta_view_strides(op, a, params, out_shape):
    """The element strides of a view of meta tensor ``a`` (None: contiguous), by the view's rule."""
    st, shape, name = a.stride(), tuple(a.shape), op.name
    try:
        if name in ("permute", "transpose", "t"):
            return tuple(st[d] for d in params["dims"])
        if name == "expand":
            k = len(out_shape) - len(shape)
            return (0,) * k + tuple(0 if shape[i] == 1 and out_shape[k + i] != 1 else st[i]
                                    for i in range(len(shape)))
        if name == "select":
            d = params["dim"] % len(shape)
            return st[:d] + st[d + 1:]
        if name == "slice":
            d = params["dim"] % len(shape)
            return st[:d] + (st[d] * (params.get("step") or 1),) + st[d + 1:]
        if name == "unsqueeze":
            d = params["dim"] % (len(shape) + 1)
            return st[:d] + ((st[d] * shape[d]) if d < len(shape) else 1,) + st[d:]
        if name == "as_strided":
            return tuple(int(x) for x in params["stride"])
    except (KeyError, TypeError, IndexError, ZeroDivisionError):
        return None
    return None


def _meta_join(op, arrs, params):
    """Shape rules of the 'join' ops on large meta tensors (their outputs' sizes are sums)."""
    name = op.name
    if name in ("flip", "roll", "tril", "triu"):
        return (np.broadcast_to(np.zeros((), arrs[0].dtype), arrs[0].shape),)
    if name in ("cat", "stack"):
        parts = [a for a in arrs if isinstance(a, np.ndarray)]
        if name == "cat":   # legacy: 1-d empty tensors are skipped
            parts = [a for a in parts if not (a.ndim == 1 and a.shape[0] == 0)] or parts[:1]
        dtype = np.result_type(*parts)
        first = parts[0].shape
        if name == "stack":
            if any(a.shape != first for a in parts):
                return None
            d = params["dim"] % (len(first) + 1)
            return (np.broadcast_to(np.zeros((), dtype), first[:d] + (len(parts),) + first[d:]),)
        d = params["dim"] % len(first)
        if any(len(a.shape) != len(first) or a.shape[:d] + a.shape[d + 1:] != first[:d] + first[d + 1:]
               for a in parts):
            return None     # let the small path (or the error) say what is wrong
        shape = first[:d] + (sum(a.shape[d] for a in parts),) + first[d + 1:]
        return (np.broadcast_to(np.zeros((), dtype), shape),)
    return None


def _meta_run(op, args, arrs, params):
    """The op's outputs as zero-strided stand-ins of the right shapes and dtypes (None: no rule)."""
    total = sum(a._data.size for a in args if isinstance(a, Tensor))
    if op.view:
        out = op.impl(xp, *arrs, **params)
        return (out,) if op.nout == 1 else tuple(out)
    if op.family == "join" and op.name in ("flip", "roll", "tril", "triu", "cat", "stack"):
        outs = _meta_join(op, arrs, params)
        if outs is not None:
            return outs
    if op.family in _META_BY_SIZES:
        outs = _meta_stand_ins(op, args, arrs, params)
        if outs is not None:
            return outs
    if op.name in _META_SAME_SHAPE:   # outputs shaped as input 0; dtypes from one element
        a0 = arrs[0]
        out = op.impl(xp, np.zeros((1,) * a0.ndim, a0.dtype), *arrs[1:], **params)
        return tuple(np.broadcast_to(np.zeros((), _asarray(o).dtype), a0.shape)
                     for o in ((out,) if op.nout == 1 else out))
    if op.name in ("max_pool2d_with_indices_backward", "avg_pool2d_backward"):   # out: the pooled input's shape
        return (np.broadcast_to(np.zeros((), arrs[0].dtype), tuple(params["in_shape"])),)
    if op.name in _META_PER_SAMPLE:
        outs = _meta_one_sample(op, args, arrs, params, *_META_PER_SAMPLE[op.name])
        if outs is not None:
            return outs
    if total > _META_SMALL:
        return None
    with np.errstate(all="ignore"):  # (writable copies of the small zero-strided stand-ins)
        out = op.impl(xp, *[a.copy() if isinstance(a, np.ndarray) and a.size <= _META_SMALL else a
                            for a in arrs], **params)
    return tuple(_asarray(o) for o in ((out,) if op.nout == 1 else out))


_META_SAME_SHAPE = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "argsort")

# nn ops that treat dim 0 as a batch of independent samples: (the args whose dim 0 is the batch, the
# outputs whose dim 0 is the batch). On a large meta batch they run on one sample, N put back after.
_META_PER_SAMPLE = {
    "conv2d": ((0,), (0,)), "conv2d_backward_input": ((0,), (0,)), "conv2d_backward_weight": ((0, 1), ()),
    "max_pool2d": ((0,), (0,)), "max_pool2d_with_indices": ((0,), (0, 1)), "avg_pool2d": ((0,), (0,)),
    "upsample_nearest": ((0,), (0,)), "batch_norm": ((0,), (0,)), "batch_norm_backward": ((0, 1), (0,)),
    "layer_norm": ((0,), (0,)), "layer_norm_backward": ((0, 1), (0,)), "group_norm": ((0,), (0,)),
    "group_norm_backward": ((0, 1), (0,)), "embedding": ((1,), (0,)),
}


def _meta_one_sample(op, args, arrs, params, batched, batched_outs):
    n = args[batched[0]].shape[0]
    if any(args[i]._data.ndim < 2 or args[i].shape[0] != n for i in batched):
        return None
    if op.name.startswith("layer_norm") and args[batched[0]]._data.ndim <= len(params["normalized_shape"]):
        return None            # no batch dim in front of the normalized ones
    small = [arr[:1] if i in batched else arr for i, arr in enumerate(arrs)]
    if sum(a.size for a in small if isinstance(a, np.ndarray)) > _META_SMALL:
        return None
    with np.errstate(all="ignore"):
        out = op.impl(xp, *[a.copy() if isinstance(a, np.ndarray) else a for a in small], **params)
    outs = []
    for k, o in enumerate((out,) if op.nout == 1 else out):
        o = _asarray(o)
        shape = (n,) + o.shape[1:] if k in batched_outs else o.shape
        outs.append(np.broadcast_to(np.zeros((), o.dtype), shape))
    return tuple(outs)


def _meta_stand_ins(op, args, arrs, params):
    """Elementwise, reduction and linalg ops (parameters name dims, never sizes): run on tiny arrays
    in which each distinct size > 1 is a distinct small number (equal sizes stay equal, so
    broadcasting and contraction still line up; 0 and 1 stay), then map the output's sizes back."""
    sizes = sorted({n for a in args if isinstance(a, Tensor) for n in a.shape if n > 1})
    if len(sizes) > len(_STAND_INS):
        return None
    to_small = dict(zip(sizes, _STAND_INS))
    back = {v: k for k, v in to_small.items()}
    small = []
    for a, arr in zip(args, arrs):
        if isinstance(a, Tensor):
            shape = tuple(to_small.get(n, n) for n in a.shape)
            if math.prod(shape) > 1 << 22:
                return None
            small.append(np.ones(shape, arr.dtype))
        else:
            small.append(arr)
    try:
        with np.errstate(all="ignore"):
            out = op.impl(xp, *small, **params)
    except Exception as e:  # noqa: BLE001  (shapes that do not fit, as they would not with data)
        if isinstance(e, IndexError):      # a dim out of range: the message names no sizes
            raise
        # the message would name the stand-in sizes: name the real shapes instead
        shapes = [list(a.shape) for a in args if isinstance(a, Tensor)]
        raise type(e)(f"the shapes {shapes} of the meta inputs do not fit the op") from None
    outs = []
    for o in ((out,) if op.nout == 1 else out):
        o = _asarray(o)
        if any(n > 1 and n not in back for n in o.shape):
            return None             # an output size that is no input size: no rule
        outs.append(np.broadcast_to(np.zeros((), o.dtype), tuple(back.get(n, n) for n in o.shape)))
    return tuple(outs)


# ----------------------------------------------------------------------------- errors with op context

_NP_DIR = np.__file__.rsplit("/", 1)[0]
# NumPy's own wording, for errors raised from its C code (no NumPy frame in the traceback)
_NP_PHRASES = ("could not be broadcast", "cannot reshape array", "negative dimensions",
               "out of bounds for axis", "for array of dimension", "Cannot cast", "ufunc",
               "inhomogeneous", "Input operand", "einsum()", "broadcastable", "numpy boolean")


def _from_numpy(e):
    if type(e).__module__.startswith("numpy"):
        return True
    tb = e.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is not None and last.tb_frame.f_code.co_filename.startswith(_NP_DIR):
        return True
    msg = str(e)
    return any(p in msg for p in _NP_PHRASES)


def _describe(args):
    out = []
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            out.append(f"Tensor[{', '.join(map(str, d.shape))}] {d.dtype}")
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
            out.append(type(a).__name__ + " of " + ", ".join(_describe(a)))
        elif isinstance(a, (bool, int, float, complex)):
            out.append(repr(a))
        else:
            out.append(type(a).__name__)
    return out


def _cause(e):
    """The chained cause of a rewritten error: NumPy's original, kept for debugging."""
    return e if getattr(e, "_ember_rewritten", False) else None


def op_error(op, e, args, name=None):
    """``e`` raised by ``op``'s impl, with the op's name and the arguments' shapes and dtypes.

    Errors ember raises itself keep their type (the name is prefixed when missing); errors that
    come from NumPy become the type PyTorch raises (shape errors RuntimeError, dims IndexError,
    unusable argument types TypeError), so no bare NumPy error reaches the user."""
    if getattr(e, "_ember_op", None) is not None:
        return e
    name = name or op.name
    msg = str(e)
    np_err = isinstance(e, (ValueError, IndexError, TypeError, AttributeError)) and _from_numpy(e)
    if isinstance(e, OverflowError):  # a Python number that does not fit the tensor's dtype
        new = RuntimeError(f"{name}: value cannot be converted without overflow ({msg}; arguments: "
                           f"{', '.join(_describe(args))})")
    elif isinstance(e, AttributeError) or (np_err and isinstance(e, TypeError) and any(
            not isinstance(a, (Tensor, bool, int, float, complex, np.generic)) and a is not None
            for a in args)):
        new = TypeError(f"{name}: unsupported argument types ({', '.join(_describe(args))})")
    elif np_err:
        if type(e).__name__ == "AxisError":
            cls = IndexError
        elif isinstance(e, IndexError):
            cls = IndexError
        else:
            cls = RuntimeError
        new = cls(f"{name}: {msg} (arguments: {', '.join(_describe(args))})")
    else:
        if (type(e) in (RuntimeError, IndexError, ValueError, TypeError) and len(e.args) == 1
                and isinstance(e.args[0], str) and name not in msg):
            e.args = (f"{name}: {msg}",)
        e._ember_op = name
        return e
    e._ember_rewritten = True
    new._ember_op = name
    return new


def _top_level(args):
    """The highest active transform level that any argument belongs to."""
    best = None
    for a in args:
        if isinstance(a, Tensor):
            lv = a._level_of()
            if lv is not None and (best is None or lv.index > best.index):
                best = lv
        elif isinstance(a, (list, tuple)):
            lv = _top_level(a)
            if lv is not None and (best is None or lv.index > best.index):
                best = lv
    return best


# ----------------------------------------------------------------------------- transform levels


class Level:
    """A transform level (vmap, forward-mode or func.grad). Subclasses implement ``process``.

    Levels are numbered in the order they are entered, so that a level entered inside another
    handles an op first. A tensor belongs to a level in one of two ways: forward-mode levels
    keep the tangent in the tensor's ``_fw`` dict (the tensor object stays the primal, so reverse
    mode sees the same tensor), while vmap and func.grad levels wrap: the tensor's ``_wr`` is the
    level and ``_val`` the value one level down (for vmap, with the batch dim first).
    ``active`` is False while a forward level computes its own primal and tangent (its tangents
    are then invisible) and once the level has exited."""
    index = 0
    alive = True
    active = True

    def process(self, op, args, params):  # pragma: no cover - abstract
        raise NotImplementedError


_level_counter = [0]
DEAD_INDEX = 1 << 60  # wrappers of an exited level are unwrapped before anything else


def push_level(level):
    _level_counter[0] += 1
    level.index = _level_counter[0]
    level.alive = True
    level.active = True
    state.levels.append(level)
    state.refresh()
    return level


def pop_level(level):
    if not state.levels or state.levels[-1] is not level:
        raise RuntimeError("transform levels must be exited in the reverse order of entry")
    state.levels.pop()
    level.alive = False
    level.active = False
    level.index = DEAD_INDEX
    state.refresh()


def random_level():
    """Under vmap: the innermost vmap level whose random draws differ per sample (None: draw once).
    Raises for randomness='error'. Called by every random draw (ember._creation._gen)."""
    for lvl in reversed(state.levels):
        mode = getattr(lvl, "randomness", None)
        if mode is None or getattr(lvl, "_drawing", False):
            continue
        if mode == "error":
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either "
                               "use the 'same' or 'different' randomness flags on vmap or perform the "
                               "randomness operation out of vmap")
        if mode == "different":
            return lvl
    return None


def batched_draw(make, shape):
    """make(shape) -> a plain random tensor; under vmap(randomness='different') one draw per sample,
    returned batched at that level (nested vmaps each add their dim). None outside."""
    if not state.levels:
        return None
    lvl = random_level()
    if lvl is None:
        return None
    lvl._drawing = True
    try:
        t = make((lvl.size,) + tuple(shape))
    finally:
        lvl._drawing = False
    return lvl.wrap(t)


def unwrap_at(x, level):
    """The value one level below ``level`` of a wrapper at ``level``; anything else as is."""
    if isinstance(x, Tensor):
        return x._val if x._wr is level else x
    if isinstance(x, (list, tuple)):
        return type(x)(unwrap_at(a, level) for a in x)
    return x


def add_listener(cb):
    state.listeners.append(cb)
    state.refresh()


def remove_listener(cb):
    state.listeners.remove(cb)
    state.refresh()
