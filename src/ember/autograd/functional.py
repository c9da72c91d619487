"""ember.autograd.functional: vjp, jvp, vhp, hvp, jacobian and hessian of a Python function.

Every entry point is one ``_Call`` (the user's function evaluated once at differentiable
stand-ins of its inputs, remembering whether inputs and outputs came as a Tensor or a tuple, so
results come back shaped the same way) followed by reverse passes over that evaluation:

- ``pull``: cotangents -> input gradients, one ``autograd.grad`` (vjp, vhp, jacobian rows);
- ``push``: tangents -> output tangents. u -> J^T u is linear, so J v is the derivative of
  J^T u with respect to u along v: two pulls, and no forward-mode rule is needed (jvp, hvp);
- ``gradient``: the differentiable gradient of a scalar function (vhp, hvp, hessian).

strict=True turns a derivative that is structurally zero (a None from autograd, or a constant
where a further derivative or create_graph=True needs a graph) into an error naming the function,
the index and what it is independent of; otherwise it is replaced by zeros. The vectorized
Jacobian batches the cotangents through ``autograd.grad(is_grads_batched=True)``; the
forward-mode one is ``ember.func.jacfwd``.
"""
from .. import _dispatch as D
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_OUTPUTS = "outputs of the user-provided function"
_STRICT = " (not allowed with strict=True)"
_STRATEGIES = ("forward-mode", "reverse-mode")
_OUT_INDEP = "the output of the user-provided function is independent of input {j}"
_GRAD_INDEP = "the gradient of the user-provided function is independent of input {j}"


def _tensors(value, what, fn):
    """(value as a tuple of Tensors, whether it was given as a tuple)."""
    tupled = isinstance(value, tuple)
    items = value if tupled else (value,)
    for i, t in enumerate(items):
        if not isinstance(t, D.Tensor):
            where = f"the value at index {i}" if tupled else "it"
            raise TypeError(f"{fn}: the {what} must be either a Tensor or a tuple of Tensors, but {where} "
                            f"has type {type(t).__name__}")
    return items, tupled


def _shaped(items, tupled, keep_graph):
    """items (nested tuples of Tensors) as the user gave them: a lone Tensor unwrapped; detached
    unless the caller asked for create_graph."""
    if not keep_graph:
        items = _detached(items)
    return tuple(items) if tupled else items[0]


def _detached(x):
    return x.detach() if isinstance(x, D.Tensor) else tuple(_detached(e) for e in x)


class _Call:
    """func evaluated once at differentiable stand-ins of ``inputs``.

    A stand-in is a fresh leaf, or under create_graph an alias of an input that requires grad,
    so that results stay differentiable with respect to the caller's tensors. ``v`` is checked
    against the inputs (``v_of="input"``) before func runs, or against its outputs after."""

    def __init__(self, fn, func, inputs, create_graph, strict, v=None, v_of=None):
        self.fn, self.create_graph, self.strict = fn, create_graph, strict
        xs, self.in_tuple = _tensors(inputs, "inputs", fn)
        with enable_grad():
            self.inputs = tuple(x.view_as(x) if create_graph and x.requires_grad
                                else x.detach().requires_grad_() for x in xs)
            if v_of == "input":
                self.v = self._match(v, self.inputs, v_of)
            outs = func(*self.inputs)
        self.outputs, self.out_tuple = _tensors(outs, _OUTPUTS, fn)
        if v_of == "output":
            self.v = self._match(v, self.outputs, v_of)
        if strict:
            for i, o in enumerate(self.outputs):
                if not o.requires_grad:
                    raise RuntimeError(f"{fn}: output {i} of the user-provided function does not require "
                                       f"grad, so it is not computed differentiably from the inputs{_STRICT}")

    def _match(self, v, like, noun):
        """v as a tuple of Tensors shaped like ``like``; None stands for ones when like is one element."""
        from .._creation import ones_like
        if v is None:
            if len(like) != 1 or like[0].numel() != 1:
                raise RuntimeError(f"{self.fn}: v can only be None when the user-provided function has a "
                                   f"single {noun} with a single element")
            return (ones_like(like[0]),)
        vs, _ = _tensors(v, "v", self.fn)
        if len(vs) != len(like):
            raise RuntimeError(f"{self.fn}: v has {len(vs)} Tensors but the user-provided function has "
                               f"{len(like)} {noun}s")
        for i, (a, b) in enumerate(zip(vs, like)):
            if tuple(a.shape) != tuple(b.shape):
                raise RuntimeError(f"{self.fn}: v[{i}] has shape {tuple(a.shape)} but {noun} {i} of the "
                                   f"user-provided function has shape {tuple(b.shape)}")
        return vs

    def pull(self, outs, wrt, cots, create_graph, none, const="the result for input {j}", batched=False):
        """sum_i cots[i] . d outs[i] / d wrt[j] for every j, by one autograd.grad.

        Where autograd finds no path the gradient is zeros, or in strict mode an error worded by
        ``none`` (a format with ``{j}``); ``const`` names gradient j for the strict-mode error when
        create_graph needs it to require grad and it does not."""
        from . import grad
        from .._creation import zeros
        live = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
        gs = (grad([o for o, _ in live], wrt, [c for _, c in live], retain_graph=True,
                   create_graph=create_graph, allow_unused=True, is_grads_batched=batched)
              if live else (None,) * len(wrt))
        lead = tuple(cots[0].shape[:1]) if batched else ()
        res = []
        for j, (g, x) in enumerate(zip(gs, wrt)):
            if self.strict and g is None:
                raise RuntimeError(f"{self.fn}: {none.format(j=j)}{_STRICT}")
            if self.strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"{self.fn}: {const.format(j=j)} does not depend on the inputs, so it "
                                   f"cannot be differentiated further{_STRICT}")
            res.append(zeros(lead + tuple(x.shape), dtype=x.dtype) if g is None else g)
        return tuple(res)

    def push(self, outs, tangents, none, noun):
        """sum_j d outs[i] / d inputs[j] . tangents[j] for every i (see the module docstring)."""
        from .._creation import zeros_like
        u = tuple(zeros_like(o, requires_grad=True) for o in outs)
        w = self.pull(outs, self.inputs, u, True, none, "the gradient with respect to input {j}")
        return self.pull(w, u, tangents, self.create_graph,
                         f"the result for {noun} is structurally zero: nothing connects it to the inputs",
                         f"the result for {noun}")

    def gradient(self):
        """d output / d inputs for a single-element output, differentiable for a second derivative."""
        from .._creation import ones_like
        if self.out_tuple:
            raise RuntimeError(f"{self.fn}: the user-provided function should return a single Tensor, got "
                               f"a tuple of {len(self.outputs)}")
        out = self.outputs[0]
        if out.numel() != 1:
            raise RuntimeError(f"{self.fn}: the Tensor returned by the user-provided function should "
                               f"contain a single element, got shape {tuple(out.shape)}")
        return self.pull(self.outputs, self.inputs, (ones_like(out),), True, _OUT_INDEP,
                         "the gradient with respect to input {j}")

    def result(self, value, tupled):
        """(outputs, value), shaped like the user's arguments."""
        return (_shaped(self.outputs, self.out_tuple, self.create_graph),
                _shaped(value, tupled, self.create_graph))


# ----------------------------------------------------------------------------- products


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``; v is shaped like the outputs."""
    c = _Call("vjp", func, inputs, create_graph, strict, v, "output")
    return c.result(c.pull(c.outputs, c.inputs, c.v, create_graph, _OUT_INDEP), c.in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product at ``inputs``; v is shaped like the inputs."""
    c = _Call("jvp", func, inputs, create_graph, strict, v, "input")
    out_tangents = c.push(c.outputs, c.v, _OUT_INDEP, "output {j} of the user-provided function")
    return c.result(out_tangents, c.out_tuple)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a function with a single-element output."""
    c = _Call("vhp", func, inputs, create_graph, strict, v, "input")
    return c.result(c.pull(c.gradient(), c.inputs, c.v, create_graph, _GRAD_INDEP), c.in_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a function with a single-element output."""
    c = _Call("hvp", func, inputs, create_graph, strict, v, "input")
    return c.result(c.push(c.gradient(), c.v, _GRAD_INDEP, "input {j}"), c.in_tuple)


# ----------------------------------------------------------------------------- jacobian / hessian


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """d output / d input of shape output.shape + input.shape, for every output and input (a tuple
    of outputs gives a tuple of rows, a tuple of inputs a tuple per row)."""
    return _jacobian("jacobian", func, inputs, create_graph, strict, vectorize, strategy)


def _jacobian(fn, func, inputs, create_graph, strict, vectorize, strategy,
              of="output {i} of the user-provided function"):
    if strategy not in _STRATEGIES:
        raise ValueError(f'{fn}: expected strategy to be "forward-mode" or "reverse-mode", got '
                         f'{strategy!r} ("forward-mode" is usually faster for more outputs than inputs)')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(f'{fn}: create_graph=True is not supported with '
                                      f'strategy="forward-mode"; use strategy="reverse-mode"')
        if strict:
            raise RuntimeError(f'{fn}: strict=True is not supported with strategy="forward-mode"; use '
                               f'strategy="reverse-mode"')
        if not vectorize:
            raise NotImplementedError(f'{fn}: strategy="forward-mode" is only implemented with '
                                      f'vectorize=True')
        return _jacfwd(fn, func, inputs)
    if strict and vectorize:
        raise RuntimeError(f"{fn}: strict=True is not supported with vectorize=True; set one of them to "
                           f"False")
    c = _Call(fn, func, inputs, create_graph, strict)
    rows = tuple(_shaped(_rows(c, out, vectorize, of.format(i=i)), c.in_tuple, True)
                 for i, out in enumerate(c.outputs))
    return _shaped(rows, c.out_tuple, create_graph)


def _rows(c, out, vectorize, of):
    """d out / d inputs[j] for every j, shaped out.shape + inputs[j].shape; ``of`` names out."""
    from .._creation import eye, zeros
    from ..ops import stack
    n = out.numel()
    shapes = [tuple(out.shape) + tuple(x.shape) for x in c.inputs]
    if n == 0:
        return tuple(zeros(s, dtype=x.dtype) for s, x in zip(shapes, c.inputs))
    basis = eye(n, dtype=out.dtype).reshape((n,) + tuple(out.shape))
    none = of + " is independent of input {j}"
    const = f"the derivative of {of} with respect to input {{j}}"
    if vectorize:
        rows = c.pull((out,), c.inputs, (basis,), c.create_graph, none, const, batched=True)
    else:
        units = [D._new_tensor(e) for e in basis._data]  # the rows as plain tensors, no view ops
        per = [c.pull((out,), c.inputs, (e,), c.create_graph, none, const) for e in units]
        rows = [stack(col) for col in zip(*per)]
    return tuple(r.reshape(s) for r, s in zip(rows, shapes))


def _jacfwd(fn, func, inputs):
    """Forward-mode Jacobian: ember.func.jacfwd (vmap of a jvp over one-hot tangents)."""
    from ..func import jacfwd
    xs, tupled = _tensors(inputs, "inputs", fn)

    def checked(*args):
        out = func(*args)
        _tensors(out, _OUTPUTS, fn)
        return out
    jac = jacfwd(checked, argnums=tuple(range(len(xs))) if tupled else 0)(*(x.detach() for x in xs))
    return _detached(jac)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function with a single-element output: the jacobian of its gradient, of shape
    input_i.shape + input_j.shape for every pair of inputs (nested tuples for a tuple of inputs)."""
    _, tupled = _tensors(inputs, "inputs", "hessian")
    forward = outer_jacobian_strategy == "forward-mode"

    def gradient(*xs):
        if forward:  # dual inputs: an alias (not a detached copy) keeps the tangent for the inner pass
            xs = tuple(x.requires_grad_() for x in xs)
        c = _Call("hessian", func, _shaped(xs, tupled, True), True, strict)
        return _shaped(c.gradient(), tupled, True)
    return _jacobian("hessian", gradient, inputs, create_graph, strict, vectorize, outer_jacobian_strategy,
                     of="the gradient with respect to input {i}")
