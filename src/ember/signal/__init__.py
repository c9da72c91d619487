"""torch.signal: window functions (ember.signal.windows)."""
from . import windows  # noqa: F401

__all__ = ["windows"]
