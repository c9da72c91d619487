"""torch._dynamo.config: the settings PyTorch programs write before torch.compile, with PyTorch's
defaults. ember runs eagerly, so they are recorded and read back and change nothing. Unknown names
raise AttributeError, as PyTorch's config does."""
import sys
import types

_DEFAULTS = {
    "suppress_errors": False, "cache_size_limit": 8, "recompile_limit": 8,
    "accumulated_cache_size_limit": 256, "accumulated_recompile_limit": 256, "verbose": False,
    "optimize_ddp": True, "capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": False,
    "automatic_dynamic_shapes": True, "assume_static_by_default": True, "specialize_int": False,
    "specialize_float": False, "inline_inbuilt_nn_modules": True, "error_on_recompile": False,
    "replay_record_enabled": False, "force_parameter_static_shapes": True,
    "allow_unspec_int_on_nn_module": False, "raise_on_ctx_manager_usage": True,
    "skip_nnmodule_hook_guards": True, "guard_nn_modules": True, "dynamic_shapes": True,
}


class _Config(types.ModuleType):
    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"{self.__name__}.{name} does not exist") from None

    def __setattr__(self, name, value):
        if name.startswith("_") or name in self.__dict__:
            return super().__setattr__(name, value)
        if name not in self.__dict__["_values"]:
            raise AttributeError(f"{self.__name__}.{name} does not exist")
        self.__dict__["_values"][name] = value

    def __dir__(self):
        return sorted(self.__dict__["_values"])


_module = sys.modules[__name__]
_module.__class__ = _Config
_values = dict(_DEFAULTS)
