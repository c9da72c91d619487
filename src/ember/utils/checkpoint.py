"""Activation checkpointing (torch.utils.checkpoint): the forward runs without recording a graph, and
the backward runs the function again, with the random state it first saw, to get the gradients.

The recomputed graph's backward accumulates into the ``.grad`` of the parameters the function uses
(as PyTorch's reentrant checkpoint does), so gradients reach them through ``loss.backward()``;
``autograd.grad`` with respect to such parameters is not supported through a checkpoint."""
from .. import _creation
from .. import _dispatch as D
from ..autograd import backward as _backward
from ..autograd.function import Function


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, run, preserve_rng, anchor, *args):
        ctx.run = run
        ctx.rng = _creation.get_rng_state() if preserve_rng else None
        ctx.tensor_idx = [i for i, a in enumerate(args) if isinstance(a, D.Tensor)]
        ctx.others = args
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_idx))
        out = run(*args)
        ctx.tuple_out = isinstance(out, tuple)
        return out

    @staticmethod
    def backward(ctx, *grads):
        args = list(ctx.others)
        inputs = []
        for i, t in zip(ctx.tensor_idx, ctx.saved_tensors):
            d = t.detach()
            d.requires_grad_(t.requires_grad)
            args[i] = d
            inputs.append(d)
        state = _creation.get_rng_state() if ctx.rng is not None else None
        if ctx.rng is not None:
            _creation.set_rng_state(ctx.rng)
        prev = D.grad_mode.enabled
        D.grad_mode.enabled = True
        try:
            out = ctx.run(*args)
        finally:
            D.grad_mode.enabled = prev
            if state is not None:
                _creation.set_rng_state(state)
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, D.Tensor) and o.requires_grad
                 and g is not None]
        if pairs:
            _backward([o for o, _ in pairs], [g for _, g in pairs])
        res = [None] * len(args)
        for i, d in zip(ctx.tensor_idx, inputs):
            res[i] = d.grad if d.requires_grad else None
        return (None, None, None) + tuple(res)


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs) with its activations recomputed in the backward instead of kept."""
    if context_fn is not None:
        raise NotImplementedError("checkpoint: context_fn is not supported by ember")
    run = (lambda *a: function(*a, **kwargs)) if kwargs else function
    if not D.grad_mode.enabled:
        return run(*args)
    # an anchor that requires grad: the node is recorded even when no input requires grad, so the
    # parameters used inside still get their gradients
    anchor = _creation.zeros((), requires_grad=True)
    return _Checkpoint.apply(run, preserve_rng_state, anchor, *args)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs a Sequential (or a list of modules) in ``segments`` checkpointed chunks."""
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = max(len(fns) // segments, 1)

    def run_segment(start, end):
        def f(x):
            for fn in fns[start:end]:
                x = fn(x)
            return x
        return f
    x = input
    for start in range(0, len(fns), size):
        end = min(start + size, len(fns))
        x = run_segment(start, end)(x) if end == len(fns) else checkpoint(run_segment(start, end), x, **kwargs)
    return x
