"""Forward-mode AD: dual tensors whose tangents live at a dual level.

A dual tensor is an ordinary tensor (the primal, with its own autograd history) carrying a
tangent per forward level in its ``_fw`` dict. When an op sees a tangent at an active level the
level runs it (``_DualLevel.process``): it computes the primal with its own tangents hidden, then
the output tangent with the op's jvp rule, written in ember ops, so that the tangent is itself
differentiable, batchable and carries the tangents of outer levels (jvp of jvp).
"""
from collections import namedtuple

from .. import _dispatch as D

__all__ = ["dual_level", "make_dual", "unpack_dual", "enter_dual_level", "exit_dual_level",
           "UnpackedDualTensor"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class _JvpCtx:
    """What a jvp rule reads: the primal inputs, outputs and the op's parameters."""
    __slots__ = ("inputs", "outs", "params", "needs")

    def __init__(self, inputs, outs, params, needs):
        self.inputs = inputs
        self.outs = outs
        self.params = params
        self.needs = needs

    @property
    def out(self):
        return self.outs[0]

    @property
    def shapes(self):
        return tuple(a.shape if isinstance(a, D.Tensor) else None for a in self.inputs)


def _tangent_of(x, level):
    if isinstance(x, D.Tensor):
        fw = x._fw
        return fw.get(level) if fw else None
    if isinstance(x, (list, tuple)):
        return [_tangent_of(a, level) for a in x]
    return None


def _set_tangent(t, level, tangent):
    fw = t._fw
    t._fw = {level: tangent} if not fw else {**fw, level: tangent}


def _fit(tangent, out, opname):
    """The tangent with the output's shape and dtype (rules may return broadcastable tangents)."""
    if not isinstance(tangent, D.Tensor):
        from .._creation import tensor
        tangent = tensor(tangent, dtype=out.dtype)
    if tangent.shape != out.shape:
        try:
            tangent = tangent.expand(out.shape)
        except RuntimeError:
            raise RuntimeError(f"forward AD: the jvp rule of {opname} returned a tangent of shape "
                               f"{list(tangent.shape)} for an output of shape {list(out.shape)}") from None
    if tangent.dtype is not out.dtype:
        if tangent._data.dtype.kind == "c" and out._data.dtype.kind != "c":
            tangent = tangent.real  # a real output's tangent is real (the rule's complex arithmetic aside)
        tangent = tangent.to(out.dtype)
    return tangent


class _DualLevel(D.Level):
    kind = "forward"

    def process(self, op, args, params):
        tans = [_tangent_of(a, self) for a in args]
        self.active = False
        try:
            out = D.dispatch(op, args, params)
            if not op.differentiable:
                return out
            if op.jvp is None:
                raise RuntimeError(f"forward AD not implemented for {op.name}")
            outs = (out,) if op.nout == 1 else tuple(out)
            needs = tuple(t is not None and (not isinstance(t, list) or any(x is not None for x in t))
                          for t in tans)
            tout = op.jvp(_JvpCtx(tuple(args), outs, params, needs), *tans)
            touts = (tout,) if op.nout == 1 else tuple(tout)
            diff = op.diff_outputs
            fitted = []
            for i, (o, t) in enumerate(zip(outs, touts)):
                if t is None or (diff is not None and i not in diff) or o._data.dtype.kind not in "fc":
                    fitted.append(None)
                else:
                    fitted.append(_fit(t, o, op.name))
        finally:
            self.active = self.alive
        for o, t in zip(outs, fitted):
            if t is not None:
                _set_tangent(o, self, t)
        # outputs the backward node saved (aliases made before the tangents existed) get them too,
        # so a backward run inside this level (forward-over-reverse) sees dual saved outputs
        node = outs[0]._fn if outs else None
        saved = getattr(node, "_out", None) if node is not None else None
        if saved is not None and len(saved) == len(outs):
            for a, o in zip(saved, outs):
                if o._fw is not None and a._vc is o._vc:
                    a._fw = o._fw
        return out

    # hooks used by autograd.Function.apply
    def run_custom_function(self, cls, ctx, args, forward):
        """Run a custom Function's forward with this level's tangents hidden, then its jvp."""
        tans = [_tangent_of(a, self) if isinstance(a, D.Tensor) else None for a in args]
        self.active = False
        try:
            outs = forward()
            olist = outs if isinstance(outs, tuple) else (outs,)
            from .._creation import zeros_like
            full = [t if t is not None else (zeros_like(a) if isinstance(a, D.Tensor) else None)
                    for a, t in zip(args, tans)]
            tout = cls.jvp(ctx, *full)
        finally:
            self.active = self.alive
        touts = (tout,) if not isinstance(tout, tuple) else tout
        if len(touts) != len(olist):
            raise RuntimeError(f"{cls.__name__}.jvp returned {len(touts)} tangents for "
                               f"{len(olist)} outputs")
        for o, t in zip(olist, touts):
            if isinstance(o, D.Tensor) and t is not None and o._data.dtype.kind in "fc":
                _set_tangent(o, self, _fit(t, o, cls.__name__))
        return outs


_stack = []


def enter_dual_level():
    """Open a new forward-mode level and return its index (dual_level does it for a with block)."""
    lvl = D.push_level(_DualLevel())
    _stack.append(lvl)
    return lvl


def exit_dual_level(*, level=None):
    """Close a forward-mode level (the innermost by default)."""
    lvl = _stack[-1] if level is None else level
    if not _stack or _stack[-1] is not lvl:
        raise RuntimeError("forward AD levels must be exited in the reverse order of entry")
    _stack.pop()
    D.pop_level(lvl)


class dual_level:
    """Context manager for a forward-AD level: dual tensors made inside lose their tangents
    when it exits."""

    def __enter__(self):
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc):
        exit_dual_level(level=self.level)


def _current(level):
    if level is not None:
        return level
    if not _stack:
        raise RuntimeError("make_dual/unpack_dual: no forward AD level is active; enter one with "
                           "`with ember.autograd.forward_ad.dual_level():`")
    return _stack[-1]


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` whose tangent at the (current) dual level is ``tangent``."""
    lvl = _current(level)
    if not isinstance(tensor, D.Tensor) or not isinstance(tangent, D.Tensor):
        raise TypeError("make_dual: expected Tensors for both the primal and the tangent")
    if tensor._data.dtype.kind not in "fc":
        raise ValueError(f"make_dual: expected primal to be floating point or complex, got {tensor.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"make_dual: Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of size "
                           f"{list(tensor.shape)} while the given forward gradient is of size "
                           f"{list(tangent.shape)}.")
    if not (tangent.dtype.is_floating_point or tangent.dtype.is_complex):
        # another floating dtype than the primal's is accepted and kept, as PyTorch keeps it
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    lvl.active = False
    try:
        view = tensor.view(tuple(tensor.shape))  # a view: same storage, autograd history kept
    finally:
        lvl.active = lvl.alive
    _set_tangent(view, lvl, tangent)
    return view


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor; tangent is None outside the level or for plain tensors."""
    if not isinstance(tensor, D.Tensor):
        return UnpackedDualTensor(tensor, None)
    lvl = level if level is not None else (_stack[-1] if _stack else None)
    fw = tensor._fw
    tangent = fw.get(lvl) if (fw and lvl is not None and lvl.alive) else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    lvl.active = False
    try:
        primal = tensor.view(tuple(tensor.shape))
    finally:
        lvl.active = lvl.alive
    if primal._fw:
        primal._fw = {k: v for k, v in primal._fw.items() if k is not lvl} or None
    return UnpackedDualTensor(primal, tangent)
