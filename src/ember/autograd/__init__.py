"""ember.autograd: backward, grad, custom Functions, grad modes, anomaly detection."""
import numpy as np

from .. import _dispatch as D
from . import graph
from .function import Function, FunctionCtx, once_differentiable, InplaceFunction, NestedIOFunction
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled)
from . import profiler  # noqa: F401  (ember.autograd.profiler.profile)
from .anomaly_mode import detect_anomaly, set_detect_anomaly, is_anomaly_enabled, \
    is_anomaly_check_nan_enabled
from .gradcheck import gradcheck, gradgradcheck, GradcheckError
from . import functional
from . import forward_ad  # noqa: F401  (torch.autograd.forward_ad works without its own import)

__all__ = ["backward", "grad", "Function", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "detect_anomaly", "set_detect_anomaly", "Variable", "gradcheck",
           "gradgradcheck", "GradcheckError", "functional"]


def _as_list(x):
    if x is None:
        return None
    if isinstance(x, D.Tensor):
        return [x]
    return list(x)


def _make_grads(outputs, grad_outputs, create_graph):
    from .._creation import ones_like
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out._rg and out._data.size == 1 and out._data.dtype.kind == "f" and not out._meta:
                one = np.empty(out._data.shape, out._data.dtype)
                one.fill(1)
                grads.append(D._new_tensor(one))
                continue
            if out._rg:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but "
                                       f"got {out.dtype}")
            g = ones_like(out, memory_format=None)
        else:
            if not isinstance(g, D.Tensor):
                from .._creation import tensor
                g = tensor(g, dtype=out.dtype)
            if tuple(g.shape) != tuple(out.shape):
                if g.numel() == out.numel() == 1:
                    g = g.reshape(out.shape)
                else:
                    raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                                       f"output[{i}] has a shape of {out.shape}.")
            if g.dtype is not out.dtype and g.dtype.is_floating_point != out.dtype.is_floating_point:
                raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have "
                                   f"the same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                                   f"{g.dtype} and output[{i}] has a dtype of {out.dtype}.")
            if g.dtype is not out.dtype and out.dtype.is_floating_point:
                g = g.to(out.dtype)  # the engine works in the output's dtype (PyTorch casts too)
        grads.append(g)
    return grads


def _roots(outputs):
    edges = []
    for i, o in enumerate(outputs):
        if not o._rg:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(graph.edge(o))
    return edges


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate d(tensors)/d(leaves) into the leaves' .grad (or only into ``inputs``)."""
    if (grad_tensors is None and grad_variables is None and inputs is None and not create_graph
            and isinstance(tensors, D.Tensor)):
        # the common call, loss.backward(): a scalar root seeded with one
        fn = tensors._fn
        d = tensors._data
        if fn is not None and d.size == 1 and d.dtype.kind == "f" and not tensors._meta:
            one = d.copy()  # shape and dtype of the root, in a fresh array
            one.fill(1)
            if fn._nout == 1:
                graph.execute_simple(fn, D._new_tensor(one), True if retain_graph else False)
            else:
                graph.execute([(fn, tensors._nr)], [D._new_tensor(one)],
                              True if retain_graph else False, False, None, True)
            return
    outputs = _as_list(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    gts = _as_list(grad_tensors) if grad_tensors is not None else [None] * len(outputs)
    if len(gts) != len(outputs):
        raise RuntimeError(f"got {len(gts)} gradients for {len(outputs)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, gts, create_graph)
    roots = _roots(outputs)
    if inputs is not None:
        inputs = _as_list(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        capture = [graph.edge(t) if t._rg else (None, 0) for t in inputs]
        res = graph.execute(roots, grads, retain_graph, create_graph, capture)
        prev = D.grad_mode.enabled
        D.grad_mode.enabled = bool(create_graph)
        try:
            for t, g in zip(inputs, res):
                if g is not None:
                    graph.accumulate_into(t, g)
        finally:
            D.grad_mode.enabled = prev
        return
    graph.execute(roots, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, returned rather than accumulated."""
    single = isinstance(inputs, D.Tensor)
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        from ..func import vmap

        unused = []

        def one(*gos):
            # vmap returns only tensors: an unused input's None (the same for every batch entry,
            # it depends on the graph alone) travels as zeros and is restored below
            res = grad(outs, ins, list(gos), retain_graph=True, create_graph=create_graph,
                       allow_unused=allow_unused, materialize_grads=materialize_grads)
            unused[:] = [r is None for r in res]
            from .._creation import zeros_like
            return tuple(zeros_like(t) if r is None else r for r, t in zip(res, ins))
        res = vmap(one)(*_as_list(grad_outputs))
        return tuple(None if u else r for r, u in zip(res, unused))
    gos = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outs)
    if len(gos) != len(outs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(gos)} grad_outputs and "
                           f"{len(outs)} outputs")
    for i, t in enumerate(ins):
        if not isinstance(t, D.Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, got {type(t).__name__} at position {i}")
        if not t._rg:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outs, gos, create_graph)
    roots = _roots(outs)
    capture = [graph.edge(t) for t in ins]
    res = graph.execute(roots, grads, retain_graph, create_graph, capture)
    out = []
    for t, g in zip(ins, res):
        if g is None:
            if materialize_grads:
                from .._creation import zeros_like
                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph and g._rg:
            g = g.detach()
        out.append(g)
    return tuple(out)


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        from .._tensor import Tensor
        return isinstance(obj, Tensor)

    def __subclasscheck__(cls, sub):
        from .._tensor import Tensor
        return issubclass(sub, Tensor)


class Variable(metaclass=_VariableMeta):
    """The deprecated ``Variable``: every tensor is one (``isinstance(t, Variable)`` is True, as in
    PyTorch), and ``Variable(t, requires_grad=True)`` returns the tensor itself (same memory)."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        from .._creation import as_tensor, empty
        t = empty(0) if data is None else as_tensor(data).detach()  # a new tensor, the same memory
        if requires_grad:
            t.requires_grad_(True)
        return t


