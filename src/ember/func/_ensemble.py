"""Ensemble: N copies of a module stacked into one set of parameters and run with one vmap."""
import copy

from ._functional_call import functional_call, stack_module_state
from ._vmap import vmap


def _mangle(name):
    return name.replace(".", "__")


def Ensemble(models, *, same_input=True, randomness="different", chunk_size=None):
    """A module running ``models`` (same class) as one batched computation.

    Its parameters are the models' parameters stacked along a new leading dim (fresh leaves, so
    any optimizer trains all members at once); buffers are stacked the same way. ``forward(x)``
    returns the members' outputs stacked along dim 0: with ``same_input=True`` every member sees
    x, otherwise x's dim 0 indexes the members. ``members()`` gives the members back as ordinary
    modules holding the current (trained) values.
    """
    from .. import nn

    class _Ensemble(nn.Module):
        def __init__(self):
            super().__init__()
            ms = list(models)
            params, buffers = stack_module_state(ms)
            self.num_models = len(ms)
            self._pnames = list(params)
            self._bnames = list(buffers)
            for n, p in params.items():
                self.register_parameter(_mangle(n), nn.Parameter(p.detach(), requires_grad=p.requires_grad))
            for n, b in buffers.items():
                self.register_buffer(_mangle(n), b)
            object.__setattr__(self, "_base", copy.deepcopy(ms[0]).to("meta"))
            object.__setattr__(self, "_template", ms[0])
            self.same_input = same_input
            self.randomness = randomness
            self.chunk_size = chunk_size

        def _state(self):
            p = {n: getattr(self, _mangle(n)) for n in self._pnames}
            b = {n: getattr(self, _mangle(n)) for n in self._bnames}
            return p, b

        def forward(self, x, *args, **kwargs):
            base = self._base
            base.train(self.training)

            def one(p, b, xx, *a):
                return functional_call(base, (p, b), (xx,) + a, kwargs)
            p, b = self._state()
            dims = (0, 0, None if self.same_input else 0) + (None,) * len(args)
            return vmap(one, in_dims=dims, randomness=self.randomness, chunk_size=self.chunk_size)(p, b, x, *args)

        def members(self):
            """The members as separate modules (copies of the template) with the current values."""
            out = []
            p, b = self._state()
            for i in range(self.num_models):
                m = copy.deepcopy(self._template)
                sd = {n: t[i].detach().clone() for n, t in list(p.items()) + list(b.items())}
                m.load_state_dict(sd, strict=False)
                out.append(m)
            return out

        def extra_repr(self):
            return f"num_models={self.num_models}, member={type(self._template).__name__}"

    return _Ensemble()
