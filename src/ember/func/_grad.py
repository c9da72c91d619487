"""func.grad / vjp / jvp and the Jacobian transforms built on them.

``grad`` and ``vjp`` open a fresh autograd level (``GradLevel``): the differentiated inputs are
wrapped at that level, and an op on such wrappers records its backward node there, on the
wrappers, while the computation itself runs one level down (where outer transforms, batching
or an outer grad, see it). The backward then runs the vjp rules on the values one level down,
so a gradient is an ordinary function of the outer levels' tensors: grad(grad(f)), vmap(grad(f))
and grad of a closure over an outer variable are all right (no perturbation confusion).
"""
import functools

from .. import _dispatch as D
from ..autograd import graph as G
from ..autograd import forward_ad as fwAD
from ._pytree import tree_flatten, tree_unflatten, tree_map

Tensor = D.Tensor


class GradLevel(D.Level):
    kind = "grad"

    def __init__(self):
        self.recording = True

    def process(self, op, args, params):
        vals = []
        rg = self.alive and self.recording and D.grad_mode.enabled and op.differentiable
        any_rg = False
        for a in args:
            if isinstance(a, Tensor):
                if a._wr is self:
                    vals.append(a._val)
                    if a._rg:
                        any_rg = True
                    continue
            elif isinstance(a, (list, tuple)):
                a = D.unwrap_at(a, self)
            vals.append(a)
        out = D.dispatch(op, tuple(vals), params)
        if not (rg and any_rg):
            return out
        return _record(self, op, args, vals, params, out)


    def rebase_view(self, view, r):
        """view (a wrapper here, of a base wrapper here) is about to hold r: record the base's new
        history (r scattered into the old base, PyTorch's CopySlices) before the write; returns
        the step that makes view a strided view of the new base once the values are written."""
        base = view._base
        if base._wr is not self:
            return None
        v = view._val
        while v is not None and v._wr is not None:
            if getattr(v._wr, "kind", None) == "vmap":
                raise NotImplementedError("in-place operations on a view of a differentiated tensor are not "
                                          "supported inside vmap(grad(...)) in ember; write the update out "
                                          "of place (e.g. with torch.where or index_put)")
            v = v._val
        from ..ops.shape import as_strided_scatter_op, as_strided_op
        geo = {"size": tuple(view.shape), "stride": view.stride(), "offset": view.storage_offset()}
        nb = D.dispatch(as_strided_scatter_op, (base, r), geo)

        def finish():
            base._fn, base._nr, base._rg = nb._fn, nb._nr, True
            vh = D.dispatch(as_strided_op, (base,), geo)
            view._fn, view._nr, view._rg = vh._fn, vh._nr, True
        return finish

    def run_custom_function(self, cls, ctx, args, forward):
        """A custom Function whose inputs are tracked here: its forward runs on the values one level
        down (forward() runs without grad, so the ops unwrap), and its outputs are wrapped at this
        level, where autograd.Function records its backward node on the wrappers."""
        outs = forward()
        if not (self.alive and any(isinstance(a, Tensor) and a._wr is self and a._rg for a in args)):
            return outs
        single = not isinstance(outs, tuple)
        res = tuple(wrap(self, o, False) if isinstance(o, Tensor) and o._wr is not self else o
                    for o in ((outs,) if single else outs))
        return res[0] if single else res


def wrap(level, value, requires_grad):
    t = D._new_tensor(value._data)
    t._wr = level
    t._val = value
    if value._meta:
        t._meta = True
    if requires_grad:
        t._rg = True
    return t


def _record(level, op, args, vals, params, out):
    outs = (out,) if op.nout == 1 else tuple(out)
    cls = op.node_cls
    node = (cls if cls is not None else op.node_class(vals, params))()
    nf, needs = [], []
    for a in args:
        if isinstance(a, Tensor) and a._wr is level and a._rg:
            nf.append(G.edge(a))
            needs.append(True)
        else:
            nf.append((None, 0))
            needs.append(False)
    node.next_functions = tuple(nf)
    node.needs = tuple(needs)
    node.params = params
    node._freed = False
    node.shapes = tuple(a.shape if isinstance(a, Tensor) else None for a in vals)
    save = op.save
    if "inputs" in save:
        node._saved = tuple(vals)
        node._versions = tuple(a._version if isinstance(a, Tensor) else None for a in vals)
    else:
        node._saved = None
    node._out_meta = tuple((o.shape, o.dtype) for o in outs)
    if "out" in save:
        for o in outs:
            if o._vc is None:
                o._vc = [0, None]
        node._out = outs
        node._outv = tuple(o._vc[0] for o in outs)
    else:
        node._out = None
    diff = op.diff_outputs
    res = []
    for i, o in enumerate(outs):
        if (diff is None or i in diff) and o._data.dtype.kind in "fc":
            w = wrap(level, o, True)
            w._fn = node
            w._nr = i
            if op.view and isinstance(args[0], Tensor) and args[0]._wr is level:
                src = args[0]  # views of a tracked tensor know their base (in-place on views)
                w._base = src._base if src._base is not None else src
                w._vc = src._vc if src._vc is not None else src.__setattr__("_vc", [0, None]) or src._vc
            res.append(w)
        else:
            res.append(o)
    return res[0] if op.nout == 1 else tuple(res)


def _unwrap_tree(x, level):
    return tree_map(lambda v: D.unwrap_at(v, level) if isinstance(v, Tensor) else v, x)


def _argnums_tuple(argnums, nargs, who):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{who}: argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"{who}: argnums must be int or Tuple[int, ...], got {type(n).__name__}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"{who}: Got argnums={argnums}, but only {nargs} positional inputs")
    return single, tuple(n % nargs for n in nums)


def _check_tensor_leaf(x, who):
    if not isinstance(x, Tensor):
        raise RuntimeError(f"{who}: Expected f(*args) to accept Tensors (or pytrees of Tensors) as the "
                           f"differentiated inputs, got {type(x).__name__}")
    if x._data.dtype.kind not in "fc":
        raise RuntimeError(f"{who}: only floating point and complex Tensors can be differentiated, got {x.dtype}")


def _backward(level, outs, cts, leaves, retain):
    """Input gradients (values one level down) of ``outs`` (wrappers at ``level``) seeded with cts."""
    roots, grads = [], []
    for o, c in zip(outs, cts):
        if isinstance(o, Tensor) and o._wr is level and o._rg:
            roots.append(G.edge(o))
            grads.append(c)
    if not roots:
        return [None] * len(leaves)
    level.recording = False
    prev_lv = level.active
    try:
        caps = [G.edge(l) for l in leaves]
        res = G.execute(roots, grads, keep_graph=retain, create_graph=True, capture=caps)
    finally:
        level.recording = True
        level.active = prev_lv
    return res


def _zeros_like(x):
    from .._creation import zeros_like
    return zeros_like(x)


def _ones_like(x):
    from .._creation import ones_like
    return ones_like(x)


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of func's scalar output w.r.t. args[argnums], output)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), "grad_and_value")
        level = D.push_level(GradLevel())
        prev = D.grad_mode.enabled
        D.grad_mode.enabled = True
        try:
            args = list(args)
            leaves_per = []
            for n in nums:
                flat, spec = tree_flatten(args[n])
                ws = []
                for x in flat:
                    _check_tensor_leaf(x, "grad")
                    ws.append(wrap(level, x, True))
                leaves_per.append((ws, spec))
                args[n] = tree_unflatten(ws, spec)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(out).__name__}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                                   f"got tensor with {out.dim()} dims. Maybe you wanted to use the vjp or "
                                   f"jacrev APIs instead?")
            all_leaves = [w for ws, _ in leaves_per for w in ws]
            val = D.unwrap_at(out, level)
            gs = _backward(level, [out], [_ones_like(val)], all_leaves, retain=False)
            gs = [_zeros_like(D.unwrap_at(w, level)) if g is None else g for g, w in zip(gs, all_leaves)]
            res, k = [], 0
            for ws, spec in leaves_per:
                res.append(tree_unflatten(gs[k:k + len(ws)], spec))
                k += len(ws)
            g = res[0] if single else tuple(res)
            value = val
            if has_aux:
                aux = _unwrap_tree(aux, level)
        finally:
            D.grad_mode.enabled = prev
            D.pop_level(level)
        return (g, (value, aux)) if has_aux else (g, value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of func's scalar output w.r.t. args[argnums] (a pytree like the argument)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, v = gv(*args, **kwargs)
        if has_aux:
            return g, v[1]
        return g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the cotangents of the primals."""
    level = D.push_level(GradLevel())
    prev = D.grad_mode.enabled
    D.grad_mode.enabled = True
    try:
        flat, spec = tree_flatten(primals)
        ws = []
        for x in flat:
            _check_tensor_leaf(x, "vjp")
            ws.append(wrap(level, x, True))
        out = func(*tree_unflatten(ws, spec))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")
            out, aux = out
            aux = _unwrap_tree(aux, level)
        oflat, ospec = tree_flatten(out)
        for o in oflat:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has only Tensors "
                                   f"as outputs, got {type(o).__name__}")
        ovals = [D.unwrap_at(o, level) for o in oflat]
    finally:
        D.grad_mode.enabled = prev
        D.pop_level(level)
    out_shapes = [(tuple(v.shape), v.dtype) for v in ovals]

    def vjp_fn(*cts, retain_graph=True):
        cflat, _ = tree_flatten(cts[0] if len(cts) == 1 else cts)
        if len(cflat) != len(oflat):
            raise RuntimeError(f"vjp_fn: expected {len(oflat)} cotangents to match the outputs, got "
                               f"{len(cflat)}")
        for c, (s, dt) in zip(cflat, out_shapes):
            if not isinstance(c, Tensor) or tuple(c.shape) != s:
                raise RuntimeError(f"vjp_fn: Mismatch in shape: cotangent has shape "
                                   f"{list(c.shape) if isinstance(c, Tensor) else type(c).__name__} and "
                                   f"output has shape {list(s)}")
        prev2 = D.grad_mode.enabled
        D.grad_mode.enabled = True
        try:
            gs = _backward(level, oflat, cflat, ws, retain=retain_graph)
        finally:
            D.grad_mode.enabled = prev2
        gs = [_zeros_like(w._val) if g is None else g for g, w in zip(gs, ws)]
        return tree_unflatten(gs, spec)

    res_out = tree_unflatten(ovals, ospec)
    if has_aux:
        return res_out, vjp_fn, aux
    return res_out, vjp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), the directional derivative along tangents)``, by forward-mode AD."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    pflat, pspec = tree_flatten(tuple(primals))
    tflat, tspec = tree_flatten(tuple(tangents))
    if len(pflat) != len(tflat):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same "
                           "python structure")
    for p, t in zip(pflat, tflat):
        _check_tensor_leaf(p, "jvp")
        if not isinstance(t, Tensor) or tuple(t.shape) != tuple(p.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same "
                               f"shape, got {list(p.shape)} and "
                               f"{list(t.shape) if isinstance(t, Tensor) else type(t).__name__}")
    level = D.push_level(fwAD._DualLevel())
    try:
        duals = [fwAD.make_dual(p, t if t.dtype is p.dtype else t.to(p.dtype), level=level)
                 for p, t in zip(pflat, tflat)]
        out = func(*tree_unflatten(duals, pspec))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = out
        oflat, ospec = tree_flatten(out)
        prim, tan = [], []
        for o in oflat:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"jvp(f, primals, tangents): Expected f to return Tensors, got "
                                   f"{type(o).__name__}")
            p, t = fwAD.unpack_dual(o, level=level)
            prim.append(p)
            tan.append(_zeros_like(p) if t is None else t)
        if has_aux:
            aux = tree_map(lambda v: fwAD.unpack_dual(v, level=level).primal if isinstance(v, Tensor) else v,
                           aux)
    finally:
        D.pop_level(level)
    res = (tree_unflatten(prim, ospec), tree_unflatten(tan, ospec))
    return res + (aux,) if has_aux else res


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` evaluates the jvp at the primals."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


# ----------------------------------------------------------------------------- Jacobians


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of func w.r.t. args[argnums] by reverse mode: vmap of the vjp over the rows."""
    from ._vmap import vmap
    from .. import _creation as C

    @functools.wraps(func)
    def wrapper(*args):
        single, nums = _argnums_tuple(argnums, len(args), "jacrev")
        diff = tuple(args[n] for n in nums)

        def f_diff(*d):
            a = list(args)
            for n, v in zip(nums, d):
                a[n] = v
            return func(*a)
        res = vjp(f_diff, *diff, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        oflat, ospec = tree_flatten(out)
        total = sum(o.numel() for o in oflat)
        dtype = oflat[0].dtype
        eye = C.eye(total, dtype=dtype)
        basis, k = [], 0
        for o in oflat:
            n = o.numel()
            basis.append(eye[:, k:k + n].reshape((total,) + tuple(o.shape)))
            k += n
        cts = tree_unflatten(basis, ospec)
        cs = chunk_size
        if cs == "auto":
            cs = _auto_rows(total, [o for o in oflat] + list(tree_flatten(diff)[0]))
        rows = vmap(lambda c: vjp_fn(c), chunk_size=cs)(cts)
        # rows: a tuple (one per diff arg) of pytrees with leaves (total, *arg.shape)
        per_out = []
        k = 0
        for o in oflat:
            n = o.numel()
            per_arg = []
            for d, r in zip(diff, rows):
                per_arg.append(tree_map(lambda leaf: leaf[k:k + n].reshape(tuple(o.shape) +
                                                                         tuple(leaf.shape[1:])), r))
            per_out.append(per_arg[0] if single else tuple(per_arg))
            k += n
        jac = tree_unflatten(per_out, ospec)
        return (jac, res[2]) if has_aux else jac
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error", chunk_size=None):
    """The Jacobian of func w.r.t. args[argnums] by forward mode: vmap of the jvp over the columns."""
    from ._vmap import vmap
    from .. import _creation as C

    @functools.wraps(func)
    def wrapper(*args):
        single, nums = _argnums_tuple(argnums, len(args), "jacfwd")
        diff = tuple(args[n] for n in nums)
        dflat, dspec = tree_flatten(diff)
        total = sum(d.numel() for d in dflat)
        eye = C.eye(total, dtype=dflat[0].dtype)
        basis, k = [], 0
        for d in dflat:
            n = d.numel()
            basis.append(eye[:, k:k + n].reshape((total,) + tuple(d.shape)))
            k += n

        def f_diff(*d):
            a = list(args)
            for n, v in zip(nums, d):
                a[n] = v
            return func(*a)

        def push(*tans):
            r = jvp(f_diff, diff, tree_unflatten(list(tans), dspec), has_aux=has_aux)
            return (r[1], r[2]) if has_aux else r[1]
        cs = chunk_size
        if cs == "auto":
            cs = _auto_rows(total, list(dflat))
        r = vmap(push, randomness=randomness, chunk_size=cs)(*basis)
        if has_aux:
            cols, aux = r
            aux = tree_map(lambda a: a[0] if isinstance(a, Tensor) else a, aux)
        else:
            cols = r
        cflat, cspec = tree_flatten(cols)
        per_out = []
        for c in cflat:  # (total, *out.shape)
            oshape = tuple(c.shape[1:])
            per_arg, k = [], 0
            for d in dflat:
                n = d.numel()
                blk = c[k:k + n].movedim(0, -1) if c.dim() > 1 else c[k:k + n]
                per_arg.append(blk.reshape(oshape + tuple(d.shape)))
                k += n
            pa = tree_unflatten(per_arg, dspec)
            per_out.append(pa[0] if single else pa)
        jac = tree_unflatten(per_out, cspec)
        return (jac, aux) if has_aux else jac
    return wrapper


def hessian(func, argnums=0, *, chunk_size=None):
    """The Hessian of func w.r.t. args[argnums]: jacfwd(jacrev(func)). chunk_size (an int or
    'auto') bounds how many Hessian columns are computed at once."""
    return jacfwd(jacrev(func, argnums, chunk_size=chunk_size), argnums, chunk_size=chunk_size)


AUTO_BUDGET_BYTES = 256 << 20   # working memory one chunk of Jacobian rows may use
AUTO_FACTOR = 8                 # intermediates per row, relative to the inputs' and outputs' size


def _auto_rows(total, tensors):
    """Rows per chunk for chunk_size='auto': each row of a Jacobian computation touches about
    AUTO_FACTOR times the size of the function's inputs and outputs."""
    per = sum(t.numel() * t.element_size() for t in tensors if isinstance(t, Tensor)) * AUTO_FACTOR
    return max(1, min(total, AUTO_BUDGET_BYTES // max(per, 1)))
