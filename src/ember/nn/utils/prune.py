"""nn.utils.prune: masks on parameters, as PyTorch's.

Pruning ``module.weight`` moves the parameter to ``weight_orig``, adds the buffer ``weight_mask``
and makes ``module.weight`` the plain tensor ``weight_orig * weight_mask``, recomputed by a forward
pre-hook before every call. Pruning the same tensor again combines the masks (a
PruningContainer): the new method only sees the entries (or channels) still unpruned.
"""
import numbers
from abc import ABC, abstractmethod

import numpy as np

from ... import ops as _ops
from ..._tensor import Tensor
from ..parameter import Parameter


def _no_grad():
    from ...autograd.grad_mode import no_grad
    return no_grad()


def _validate_amount(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_amount_vs_size(amount, n):
    if isinstance(amount, numbers.Integral) and amount > n:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={n}")


def _compute_nparams_toprune(amount, n):
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return int(round(amount * n))


def _validate_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {list(t.shape)}")


def _compute_norm(t, n, dim):
    dims = [d for d in range(t.dim()) if d != (dim % t.dim())]
    return _ops.norm(t, n, dims)


class BasePruningMethod(ABC):
    _tensor_name = None
    PRUNING_TYPE = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask (same shape as t) combining default_mask with this method's pruning."""

    def apply_mask(self, module):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return orig * mask.to(orig.dtype)

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        def _get_composite_method(cls, module, name, *args, **kwargs):
            old_method = None
            found = 0
            hooks_to_remove = []
            for k, hook in module._forward_pre_hooks.items():
                if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                    old_method = hook
                    hooks_to_remove.append(k)
                    found += 1
            if found > 1:
                raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                     f"{module}. Use a PruningContainer.")
            for k in hooks_to_remove:
                del module._forward_pre_hooks[k]
            method = cls(*args, **kwargs)
            method._tensor_name = name
            if old_method is not None:
                if isinstance(old_method, PruningContainer):
                    old_method.add_pruning_method(method)
                    method = old_method
                else:
                    container = PruningContainer(old_method)
                    container.add_pruning_method(method)
                    method = container
            return method

        method = _get_composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                     f"{module}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            module._parameters.pop(name)
            from ..._creation import ones_like
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with _no_grad():
                mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception as e:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise e
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(t.shape):
            raise AssertionError("importance_scores should have the same shape as tensor t")
        from ..._creation import ones_like
        scores = importance_scores if importance_scores is not None else t
        mask = self.compute_mask(scores, default_mask if default_mask is not None else ones_like(t))
        return t * mask

    def remove(self, module):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        with _no_grad():
            orig.copy_(weight.detach())
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        module.register_parameter(self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied to one tensor (iterative pruning)."""

    def __init__(self, *args):
        self._pruning_methods = tuple()
        if not isinstance(args, (tuple, list)) or len(args) == 0:
            raise TypeError("PruningContainer needs at least one pruning method")
        if len(args) == 1 and not isinstance(args[0], BasePruningMethod):
            args = tuple(args[0])
        self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        new_mask = default_mask.clone()
        if method.PRUNING_TYPE == "unstructured":
            keep = default_mask.numpy() == 1
            sub = method.compute_mask(_take(t, keep), default_mask=_take(default_mask, keep))
            m = new_mask.numpy().copy()
            m[keep] = sub.numpy()
            return _like(m, default_mask)
        if method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` "
                                     "defined.")
            dim = method.dim % t.dim()
            dm = np.moveaxis(default_mask.numpy(), dim, 0)
            alive = dm.reshape(dm.shape[0], -1).sum(1) != 0          # channels not already fully pruned
            tt = np.moveaxis(t.numpy(), dim, 0)[alive]
            sub = method.compute_mask(_like(np.moveaxis(tt, 0, dim).copy(), t),
                                      default_mask=_like(np.moveaxis(dm[alive], 0, dim).copy(), default_mask))
            m = np.moveaxis(new_mask.numpy().copy(), dim, 0)
            m[alive] = np.moveaxis(sub.numpy(), dim, 0)
            return _like(np.ascontiguousarray(np.moveaxis(m, 0, dim)), default_mask)
        if method.PRUNING_TYPE == "global":
            return method.compute_mask(t, default_mask=default_mask) * default_mask
        raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")


def _take(t, keep):
    from ..._creation import tensor
    return tensor(t.numpy()[keep], dtype=t.dtype)


def _like(a, ref):
    from ..._creation import tensor
    return tensor(a, dtype=ref.dtype)


class Identity(BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        n = t.numel()
        _validate_amount_vs_size(self.amount, n)
        k = _compute_nparams_toprune(self.amount, n)
        mask = default_mask.clone()
        if k:
            from ..._creation import rand
            prob = rand(*tuple(t.shape))
            idx = _ops.topk(prob.reshape(-1), k, largest=False).indices
            mask.reshape(-1)[idx] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        n = t.numel()
        _validate_amount_vs_size(self.amount, n)
        k = _compute_nparams_toprune(self.amount, n)
        mask = default_mask.clone()
        if k:
            idx = _ops.topk(t.abs().reshape(-1), k, largest=False).indices
            mask.reshape(-1)[idx] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_dim(t, self.dim)
        n = t.shape[self.dim]
        _validate_amount_vs_size(self.amount, n)
        k = _compute_nparams_toprune(self.amount, n)
        keep = n - k
        if k == 0:
            return default_mask
        from ..._creation import rand
        prob = rand(n)
        idx = _ops.topk(prob, keep).indices.numpy()
        return _channel_mask(t, self.dim, idx, default_mask)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


def _channel_mask(t, dim, keep_idx, default_mask):
    m = np.zeros(tuple(t.shape), default_mask.dtype.np)
    sl = [slice(None)] * t.dim()
    sl[dim] = keep_idx
    m[tuple(sl)] = 1
    return _like(m, default_mask) * default_mask


class LnStructured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_dim(t, self.dim)
        size = t.shape[self.dim]
        _validate_amount_vs_size(self.amount, size)
        k = _compute_nparams_toprune(self.amount, size)
        keep = size - k
        norm = _compute_norm(t, self.n, self.dim)
        idx = _ops.topk(norm, keep).indices.numpy()
        return _channel_mask(t, self.dim, idx, default_mask)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError("the mask must have the shape of the tensor it prunes")
        return default_mask * self.mask.to(default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the given (module, name) pairs together: the method sees all their entries at once."""
    from collections.abc import Iterable
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = [importance_scores.get((m, n), getattr(m, n)).detach().reshape(-1) for m, n in parameters]
    relevant = _ops.cat(scores)
    from ..._creation import ones_like
    masks = [getattr(m, n + "_mask", ones_like(getattr(m, n))).reshape(-1) for m, n in parameters]
    default_mask = _ops.cat(masks)
    container = PruningContainer(_global_dummy())
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f'{pruning_method} of type {method.PRUNING_TYPE}')
    container.add_pruning_method(method)
    final = container.compute_mask(relevant, default_mask)
    pointer = 0
    for (m, n) in parameters:
        p = getattr(m, n)
        k = p.numel()
        custom_from_mask(m, n, mask=final[pointer:pointer + k].reshape(tuple(p.shape)))
        pointer += k


def _global_dummy():
    d = Identity()
    d._tensor_name = "temp"
    return d


def remove(module, name):
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False


__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]
del Tensor, Parameter
