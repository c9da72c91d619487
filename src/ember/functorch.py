"""functorch, the package PyTorch still ships beside torch: the transforms of ember.func under their
old names, and the deprecated stateless-module API (make_functional, make_functional_with_buffers,
combine_state_for_ensemble) built on ``func.functional_call`` / ``stack_module_state``. As in
PyTorch, the stateless-module calls warn that they are deprecated."""
import copy
import warnings

from .func import (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap,  # noqa: F401
                   functional_call, stack_module_state)
from . import nn as _nn

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "make_functional", "make_functional_with_buffers", "combine_state_for_ensemble",
           "FunctionalModule", "FunctionalModuleWithBuffers"]


def _deprecated(name, instead):
    warnings.warn(f"functorch.{name} is deprecated since PyTorch 2.0 (and in ember): use {instead} instead",
                  FutureWarning, stacklevel=3)


class FunctionalModule(_nn.Module):
    """``fmodel(params, *args)``: the module run with the given parameters."""

    def __init__(self, stateless_model, param_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)

    def forward(self, params, *args, **kwargs):
        return functional_call(self.stateless_model, dict(zip(self.param_names, params)), args, kwargs)


class FunctionalModuleWithBuffers(_nn.Module):
    """``fmodel(params, buffers, *args)``: the module run with the given parameters and buffers."""

    def __init__(self, stateless_model, param_names, buffer_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)
        self.buffer_names = tuple(buffer_names)

    def forward(self, params, buffers, *args, **kwargs):
        state = dict(zip(self.param_names, params))
        state.update(zip(self.buffer_names, buffers))
        return functional_call(self.stateless_model, state, args, kwargs)


def _params(model, disable_autograd_tracking):
    names, params = zip(*model.named_parameters()) if any(True for _ in model.parameters()) else ((), ())
    if disable_autograd_tracking:
        params = tuple(p.detach() for p in params)
    return names, tuple(params)


def make_functional(model, disable_autograd_tracking=False):
    """(FunctionalModule, params): the module as a function of its parameters."""
    _deprecated("make_functional", "ember.func.functional_call")
    if any(True for _ in model.buffers()):
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    names, params = _params(model, disable_autograd_tracking)
    return FunctionalModule(copy.deepcopy(model), names), params


def make_functional_with_buffers(model, disable_autograd_tracking=False):
    """(FunctionalModuleWithBuffers, params, buffers)."""
    _deprecated("make_functional_with_buffers", "ember.func.functional_call")
    names, params = _params(model, disable_autograd_tracking)
    bnames = tuple(n for n, _ in model.named_buffers())
    buffers = tuple(b for _, b in model.named_buffers())
    return FunctionalModuleWithBuffers(copy.deepcopy(model), names, bnames), params, buffers


def combine_state_for_ensemble(models):
    """(fmodel, stacked params, stacked buffers) of models of one architecture, for vmap."""
    _deprecated("combine_state_for_ensemble", "ember.func.stack_module_state")
    models = list(models)
    if not models:
        raise RuntimeError("combine_state_for_ensemble: Expected at least one model, got 0.")
    if any(m.training != models[0].training for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to be of the same class.")
    params, buffers = stack_module_state(models)
    pnames = tuple(n for n, _ in models[0].named_parameters())
    bnames = tuple(n for n, _ in models[0].named_buffers())
    fmodel = FunctionalModuleWithBuffers(copy.deepcopy(models[0]), pnames, bnames)
    return fmodel, tuple(params[n] for n in pnames), tuple(buffers[n] for n in bnames)
