"""nn.Parameter and nn.Buffer: tensors that a Module registers when they are assigned to it."""
from .._tensor import Tensor, _init, _new


def _share(t, data, requires_grad):
    """Make ``t`` a leaf sharing ``data``'s array and version counter."""
    _init(t, data._data)
    if data._vc is None:
        data._vc = [0, None]
    t._vc = data._vc
    if data._meta:
        t._meta = True
    t._rg = bool(requires_grad)
    return t


class Parameter(Tensor):
    """A Tensor that is a module parameter: a leaf that requires grad by default."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .._creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): expected a Tensor as data, got {type(data).__name__}")
        if requires_grad and data._data.dtype.kind not in "fV":
            raise RuntimeError(f"Parameter(): Only Tensors of floating point and complex dtype can require "
                               f"gradients, got {data.dtype}")
        return _share(_new(cls), data, requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        from .._tensor import _rebuild
        return (_rebuild, (type(self), self._data.copy(), self._rg, self._meta))


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .._creation import empty
            data = empty(0)
        t = _share(_new(cls), data, data._rg)
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass


def is_lazy(param):
    return False

