"""ember.serialization: torch.serialization's public names (save, load and the safe-globals list
of the restricted loader). See ember._serialization for the format and the checks."""
from ._serialization import (save, load, add_safe_globals, get_safe_globals,  # noqa: F401
                             clear_safe_globals, safe_globals, get_unsafe_globals_in_checkpoint,
                             UnpicklingError)

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]
