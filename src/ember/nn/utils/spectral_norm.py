"""nn.utils.spectral_norm / remove_spectral_norm: the hook-based (legacy) spectral normalisation,
still what many GAN programs call. ``weight_orig`` is the parameter, ``weight_u`` / ``weight_v`` the
power-iteration vectors (buffers), and ``weight = weight_orig / sigma`` is recomputed before every
forward (one power iteration per training forward: v first, then u, as PyTorch's)."""
from ... import ops as _ops
from ..parameter import Parameter


def _no_grad():
    from ...autograd.grad_mode import no_grad
    return no_grad()


def _normalize(x, eps):
    return x / _ops.clamp_min(x.norm(), eps)


class SpectralNorm:
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations="
                             f"{n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with _no_grad():
                wm = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(_normalize(_ops.mv(wm.t(), u), self.eps))
                    u.copy_(_normalize(_ops.mv(wm, v), self.eps))
                u = u.clone()
                v = v.clone()
        sigma = _ops.dot(u, _ops.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with _no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        del module._buffers[self.name + "_u"]
        del module._buffers[self.name + "_v"]
        del module._parameters[self.name + "_orig"]
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with _no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            from ..._creation import empty
            u = _normalize(empty((h,), dtype=weight.dtype).normal_(0, 1), fn.eps)
            v = _normalize(empty((w,), dtype=weight.dtype).normal_(0, 1), fn.eps)
        del module._parameters[fn.name]
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparameterise a module's weight as weight / sigma, sigma its largest singular value (power iteration)."""
    if dim is None:
        from ..modules.conv import _ConvTransposeNd
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: the module's weight becomes a plain parameter again."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
