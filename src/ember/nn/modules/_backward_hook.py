"""Full backward hooks: identity autograd Functions around a module's tensor inputs and outputs
catch grad_output (on the way in) and grad_input (on the way out) of the module's subgraph."""
from ..._tensor import Tensor
from ...autograd.function import Function


def _tensors(xs):
    return [i for i, x in enumerate(xs) if isinstance(x, Tensor) and x.requires_grad]


class _Identity(Function):
    @staticmethod
    def forward(ctx, cb, *xs):
        ctx.cb = cb
        return tuple(x.view_as(x) for x in xs)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.cb(grads))


class BackwardHook:
    def __init__(self, module, hooks, pre_hooks):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_rg = False

    def _run_hooks(self, grad_inputs):
        for h in self.hooks:
            r = h(self.module, grad_inputs, self.grad_outputs)
            if r is not None:
                r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                if len(r) != len(grad_inputs):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                       f"{len(r)}, but expected {len(grad_inputs)}")
                grad_inputs = r
        return grad_inputs

    def setup_input_hook(self, args):
        idx = _tensors(args)
        self.n_inputs = len(args)
        if not idx:
            return args
        self.input_rg = True

        def on_inputs(grads):
            full = [None] * len(args)
            for i, g in zip(idx, grads):
                full[i] = g
            res = self._run_hooks(tuple(full))
            return [res[i] for i in idx]
        outs = _Identity.apply(on_inputs, *[args[i] for i in idx])
        if not isinstance(outs, tuple):
            outs = (outs,)
        new = list(args)
        for i, o in zip(idx, outs):
            new[i] = o
        return tuple(new)

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        res = (result,) if single else result
        if not isinstance(res, tuple):
            return result
        idx = _tensors(res)
        if not idx:
            return result

        def on_outputs(grads):
            full = [None] * len(res)
            for i, g in zip(idx, grads):
                full[i] = g
            full = tuple(full)
            for h in self.pre_hooks:
                r = h(self.module, full)
                if r is not None:
                    full = tuple(r) if isinstance(r, (tuple, list)) else (r,)
            self.grad_outputs = full
            if not self.input_rg and self.hooks:
                self._run_hooks((None,) * max(self.n_inputs, 1))
            return [full[i] for i in idx]
        outs = _Identity.apply(on_outputs, *[res[i] for i in idx])
        if not isinstance(outs, tuple):
            outs = (outs,)
        new = list(res)
        for i, o in zip(idx, outs):
            new[i] = o
        return new[0] if single else tuple(new)
