"""ember.utils: data loading (ember.utils.data) and other helpers, imported on first use."""


def __getattr__(name):
    import importlib
    try:
        mod = importlib.import_module("." + name, __name__)
    except ModuleNotFoundError:
        raise AttributeError(f"module 'ember.utils' has no attribute {name!r}") from None
    globals()[name] = mod
    return mod
