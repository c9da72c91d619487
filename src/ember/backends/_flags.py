"""The one helper the backend flag modules share: a ``flags(...)`` context manager that sets module
attributes for a block and restores them after, as torch.backends.cudnn.flags does."""
import contextlib


def flags_context(module, names):
    """A ``flags(**values)`` function for ``module``: each keyword in ``names`` that is given (not
    None) is set on the module inside the block and restored on exit."""
    @contextlib.contextmanager
    def flags(**values):
        unknown = set(values) - set(names)
        if unknown:
            raise TypeError(f"flags() got unexpected keyword arguments {sorted(unknown)}; expected {list(names)}")
        old = {k: getattr(module, k) for k in names}
        try:
            for k, v in values.items():
                if v is not None:
                    setattr(module, k, v)
            yield
        finally:
            for k, v in old.items():
                setattr(module, k, v)
    return flags
