"""torch.utils.hooks: the handle every register_*_hook returns, and the hook helpers."""
import functools
import warnings

from ..nn.modules.module import RemovableHandle  # noqa: F401  (the one handle class of ember)

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Mark a hook as not to be serialized (warn_if_has_hooks stays silent about it)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    hooks = getattr(tensor, "_backward_hooks", None)
    if hooks:
        for k in hooks:
            hook = hooks[k]
            if not hasattr(hook, "__torch_unserializable__"):
                warnings.warn(f"backward hook {repr(hook)} on tensor will not be serialized.  If this is expected, "
                              f"you can decorate the function with @torch.utils.hooks.unserializable_hook to "
                              f"suppress this warning")


del functools
