"""ember.jit: the parts of torch.jit that eager model code calls. ember has no TorchScript compiler,
so nothing is ever being scripted or traced (is_scripting()/is_tracing() are False), the annotations
and decorators return what they are given, and script/trace return the module or function itself:
it runs eagerly with the same numbers (trace does not record a graph)."""


def is_scripting():
    """False: ember never scripts (there is no TorchScript compiler)."""
    return False


def is_tracing():
    """False: ember never traces."""
    return False


def annotate(the_type, the_value):
    """Return the_value (a type hint for TorchScript, which ember does not have)."""
    return the_value


def _identity_decorator(fn=None, *args, **kwargs):
    """Return the function unchanged (TorchScript's decorators ignore, unused and export; usable with
    or without arguments)."""
    if fn is None or not callable(fn):
        return lambda f: f
    return fn


ignore = unused = export = _identity_decorator


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Returns ``obj`` unchanged: ember runs it eagerly.

    Differences from PyTorch: no TorchScript: the module or function itself comes back (the same
    numbers, eager speed; ember.jit has no save or load)."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """Returns ``func`` unchanged (no graph is recorded): ember runs it eagerly.

    Differences from PyTorch: no graph is recorded: the module or function itself comes back (the
    same numbers, eager speed)."""
    return func


class Final:
    """torch.jit.Final[T] in annotations."""

    def __class_getitem__(cls, item):
        return item
