"""weight_norm / remove_weight_norm: w = g * v / ||v|| recomputed before every forward."""
from ... import ops as _ops
from ..parameter import Parameter


def _norm_except_dim(v, dim):
    if dim is None or dim == -1 and v.dim() == 0:
        return v.norm()
    dims = tuple(d for d in range(v.dim()) if d != (dim % v.dim()))
    return _ops.sqrt((v * v).sum(dims, keepdim=True))


class WeightNorm:
    def __init__(self, name, dim):
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach().clone()))
        module.register_parameter(name + "_v", Parameter(weight.detach().clone()))
        setattr(module, name, fn.compute_weight(module))
        fn.handle = module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight.detach()))
        self.handle.remove()

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparameterise a module's weight as g * v / norm(v) (weight_g and weight_v)."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: the module's weight becomes a plain parameter again."""
    for hook in list(module._forward_pre_hooks.values()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
