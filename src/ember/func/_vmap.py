"""vmap: a vmap level wraps each batched input; every op on a wrapper runs through its batching
rule (ember.ops._batching) on the values one level down, whose batch dim is first."""
import functools
import sys

import numpy as np

from .. import _dispatch as D
from ..autograd import graph as G
from ..ops import _batching as B
from ._pytree import tree_flatten, tree_unflatten, broadcast_prefix

Tensor = D.Tensor


def _user_line():
    """'file:line' of the innermost frame outside ember (where the user's code made the call)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename.replace("\\", "/")
        if "/ember/" not in fn or "/tests/" in fn or "/examples/" in fn:
            import linecache
            src = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
            return f'File "{f.f_code.co_filename}", line {f.f_lineno}: {src}'
        f = f.f_back
    return "<unknown>"


class VmapLevel(D.Level):
    kind = "vmap"

    def __init__(self, size, randomness="error"):
        self.size = size
        self.randomness = randomness

    def wrap(self, value):
        # the wrapper's own array only carries the logical shape and dtype (zero strides, no
        # memory); floats read as NaN, so a batched tensor leaking out of vmap cannot pass for data
        dtype = value._data.dtype
        if dtype.kind == "f":
            fill = np.full((), np.nan, dtype)
        elif dtype.kind in "iu":  # an out-of-range index if it is ever used as one
            fill = np.full((), np.iinfo(dtype).min if dtype.kind == "i" else np.iinfo(dtype).max, dtype)
        else:
            fill = np.zeros((), dtype)
        t = D._new_tensor(np.broadcast_to(fill, value.shape[1:]))
        t._wr = self
        t._val = value
        return t

    def process(self, op, args, params):
        if not self.alive:
            raise RuntimeError(f"vmap: a tensor batched by a vmap that has already returned was used in "
                               f"{op.name} (at {_user_line()}); return it from the vmapped function "
                               f"instead of keeping it")
        vals, bd = [], []
        for a in args:
            if isinstance(a, Tensor):
                if a._wr is self:
                    vals.append(a._val)
                    bd.append(True)
                else:
                    vals.append(a)
                    bd.append(False)
            elif isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) and x._wr is self for x in a):
                raise NotImplementedError(f"vmap: {op.name} with a list of batched tensors")
            else:
                vals.append(a)
                bd.append(False)
        rule = B.rule_for(op) or B.fallback_rule
        out, ob = rule(op, vals, bd, params, self.size)
        if op.nout == 1:
            return self.wrap(out) if ob else out
        return tuple(self.wrap(o) if b else o for o, b in zip(out, ob))

    def run_custom_function(self, cls, ctx, args, forward):
        """A custom autograd.Function under vmap runs its forward (and later its backward) on the
        batched wrappers, like torch.func's generate_vmap_rule. When the values one level down
        require grad, its backward node is recorded there: it revives this level to run
        cls.backward on batched gradients."""
        outs = forward()
        if not D.grad_mode.enabled:
            return outs
        tpos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        lows = [(args[i]._val if args[i]._wr is self else args[i]) for i in tpos]
        if not any(v._rg for v in lows):
            return outs
        single = not isinstance(outs, tuple)
        olist = (outs,) if single else outs
        node = _VmappedFunctionBackward()
        node.level, node.cls, node.ctx = self, cls, ctx
        node.nargs = len(args)
        node.tpos = tpos
        node.batched = [args[i]._wr is self for i in tpos]
        node.shapes = [tuple(v.shape) for v in lows]
        node._edges = tuple(G.edge(v) if v._rg else (None, 0) for v in lows)
        meta = []
        for i, o in enumerate(olist):
            if isinstance(o, Tensor):
                low = o._val if o._wr is self else o
                meta.append((tuple(low.shape), low.dtype, o._wr is self))
                if low.dtype.is_floating_point:
                    low._rg, low._fn, low._nr = True, node, i
            else:
                meta.append(None)
        node.out_meta = meta
        return outs

    def check_item(self, t, what=".item() (or bool(), float(), int(), or an `if` on a Tensor)"):
        if t._wr is self:
            raise RuntimeError(f"vmap: It looks like you're calling {what} on a Tensor batched by vmap: its value differs "
                               f"across the batch, so data-dependent Python control flow is not "
                               f"supported. At {_user_line()}. Use ember.where or a masked computation "
                               f"instead.")


def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"vmap: randomness must be one of 'error', 'different' or 'same', got "
                           f"{randomness!r}")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorize func over a batch dimension of its inputs (see torch.func.vmap)."""
    _check_randomness(randomness)
    if chunk_size is not None and chunk_size != "auto" and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None, 'auto' or a positive int, got {chunk_size!r}")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        if not isinstance(in_dims, (int, tuple, list, dict)) and in_dims is not None:
            raise ValueError(f"vmap(f, in_dims={in_dims!r}): in_dims must be an int, None or a pytree")
        if isinstance(in_dims, (tuple, list)) and not isinstance(in_dims, int) and len(in_dims) != len(args):
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                             f"structure of `inputs`. in_dims has structure of length {len(in_dims)} but "
                             f"inputs has {len(args)} positional arguments")
        flat, spec = tree_flatten(args)
        dims = broadcast_prefix(in_dims, args)
        size = None
        for x, d in zip(flat, dims):
            if d is None:
                continue
            if not isinstance(d, int):
                raise ValueError(f"vmap: in_dims entries must be int or None, got {d!r}")
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap: Got in_dim={d} for an input but the input is of type "
                                 f"{type(x).__name__}. We cannot vmap over non-Tensor arguments")
            nd = x.dim()
            if not -nd <= d < max(nd, 1) or nd == 0:
                raise ValueError(f"vmap: Got in_dim={d} for an input but the input is of dimension {nd}, "
                                 f"so expected in_dim to satisfy -{nd} <= in_dim < {nd}")
            s = x.shape[d]
            if size is None:
                size = s
            elif s != size:
                raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                                 f"dimension, got sizes {size} and {s} for the mapped dimension")
        if size is None:
            raise ValueError("vmap: at least one input must be batched (in_dims were all None)")
        outermost = not any(isinstance(l, VmapLevel) for l in D.state.levels)
        if outermost:
            B.collect_fallbacks()
        try:
            cs = chunk_size
            if cs == "auto" and size > 1:
                return _chunked(func, flat, dims, spec, size, None, out_dims, randomness, kwargs)
            if isinstance(cs, int) and cs < size:
                return _chunked(func, flat, dims, spec, size, cs, out_dims, randomness, kwargs)
            return _run(func, flat, dims, spec, size, out_dims, randomness, kwargs)
        finally:
            if outermost:
                B.report_fallbacks()
    return wrapped


AUTO_BUDGET_BYTES = 256 << 20  # the working memory chunk_size='auto' aims a chunk at


def _measured_run(run):
    """``run()``'s result and the peak of the memory it allocated above what was live before
    (NumPy's arrays included: NumPy reports its allocations to tracemalloc)."""
    import tracemalloc
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if started:
            tracemalloc.stop()
    return out, max(peak - base, 1)


def _chunked(func, flat, dims, spec, size, cs, out_dims, randomness, kwargs):
    """Run the batch in chunks of ``cs``; ``cs=None`` ('auto') measures the memory one sample's
    computation takes, runs that sample as the first chunk, and sizes the rest so that a chunk
    stays within AUTO_BUDGET_BYTES."""
    from ..ops import cat

    def piece(start, stop):
        sub = [x.narrow(d, start, stop - start) if d is not None else x for x, d in zip(flat, dims)]
        return _run(func, sub, dims, spec, stop - start, out_dims, randomness, kwargs, flat_out=True)
    pieces = []
    start = 0
    if cs is None:
        first, per_sample = _measured_run(lambda: piece(0, 1))
        pieces.append(first)
        start = 1
        cs = max(1, min(size - 1, AUTO_BUDGET_BYTES // per_sample))
    for start in range(start, size, cs):
        pieces.append(piece(start, min(size, start + cs)))
    outs0, ospec, odims = pieces[0]
    res = []
    for k in range(len(outs0)):
        res.append(cat([p[0][k] for p in pieces], odims[k]))
    return tree_unflatten(res, ospec)


def _run(func, flat, dims, spec, size, out_dims, randomness, kwargs, flat_out=False):
    level = D.push_level(VmapLevel(size, randomness))
    try:
        wrapped = []
        for x, d in zip(flat, dims):
            if d is None:
                wrapped.append(x)
            else:
                v = x.movedim(d, 0) if d not in (0, -x.dim()) else x
                wrapped.append(level.wrap(v))
        out = func(*tree_unflatten(wrapped, spec), **kwargs)
        oflat, ospec = tree_flatten(out)
        odims = broadcast_prefix(out_dims, out, "out_dims")
        res = []
        for o, d in zip(oflat, odims):
            if not isinstance(o, Tensor):
                raise ValueError(f"vmap: `{getattr(func, '__name__', 'func')}` must only return Tensors, got "
                                 f"type {type(o).__name__}. Did you mean to set out_dims= to None for "
                                 f"output?")
            if o._wr is level:
                v = o._val
            else:
                if d is None:
                    res.append(o)
                    continue
                v = o.unsqueeze(0).expand((size,) + tuple(o.shape))
            if d is None:
                raise ValueError("vmap: out_dims=None for an output that is batched")
            if d != 0:
                v = v.movedim(0, d)
            res.append(v)
    finally:
        D.pop_level(level)
    if flat_out:
        return res, ospec, odims
    return tree_unflatten(res, ospec)


class _VmappedFunctionBackward(G.Node):
    """Backward of a custom Function called under vmap, recorded on the batched values."""

    @property
    def _nout(self):
        return len(self.out_meta)

    def apply(self, grads):
        from .._creation import zeros
        lvl = self.level
        size = lvl.size
        D.push_level(lvl)  # the level lives again while the user's backward runs on wrappers
        try:
            gs = []
            for g, m in zip(grads, self.out_meta):
                if m is None:
                    gs.append(None)
                    continue
                shape, dtype, batched = m
                if g is None:
                    g = zeros(shape, dtype=dtype)
                gs.append(lvl.wrap(g) if batched else g)
            res = self.cls.backward(self.ctx, *gs)
            res = res if isinstance(res, tuple) else (res,)
            out = []
            for k, pos in enumerate(self.tpos):
                r = res[pos] if pos < len(res) else None
                if r is not None:
                    phys = r._val if r._wr is lvl else r.unsqueeze(0).expand((size,) + tuple(r.shape))
                    r = phys if self.batched[k] else phys.sum(0)
                out.append(r)
        finally:
            D.pop_level(lvl)
        return out
