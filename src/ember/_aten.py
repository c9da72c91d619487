"""``ember.ops.aten``: PyTorch's ATen operator names (``torch.ops.aten.relu.default``,
``aten.add.Tensor``, ...) as callables that run ember's public functions, so that FX graphs written
or exported with ATen targets run on ember and print as PyTorch prints them.

An ATen name resolves, in order, to an adapter below (ATen signatures that differ from the public
function's), then ``ember.<name>``, ``ember.nn.functional.<name>``, the Tensor method ``<name>``,
and the ``linalg_`` / ``special_`` / ``fft_`` prefixed names to those modules. Every overload
(``.default``, ``.Tensor``, ``.Scalar``, ``.dim``, ...) runs the same function, which takes all of
the overloads' argument forms; ``.out`` overloads write into ``out=`` where the function has one."""

_ADAPTERS = {}


def _adapter(name):
    def register(fn):
        _ADAPTERS[name] = fn
        return fn
    return register


@_adapter("convolution")
def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    import ember.nn.functional as F
    nd = input.dim() - 2
    if transposed:
        f = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: getattr(F, "conv_transpose3d", None)}[nd]
        return f(input, weight, bias, stride, padding, output_padding, groups, dilation)
    f = {1: F.conv1d, 2: F.conv2d, 3: getattr(F, "conv3d", None)}[nd]
    return f(input, weight, bias, stride, padding, dilation, groups)


@_adapter("_softmax")
def _softmax(input, dim, half_to_float=False):
    import ember
    return ember.softmax(input, dim)


@_adapter("_log_softmax")
def _log_softmax(input, dim, half_to_float=False):
    import ember
    return ember.log_softmax(input, dim)


@_adapter("_unsafe_view")
def _unsafe_view(input, size):
    return input.reshape(size)


@_adapter("_to_copy")
def _to_copy(input, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    return input.to(dtype=dtype, memory_format=memory_format, copy=True) if dtype is not None or \
        memory_format is not None else input.clone()


@_adapter("alias")
def _alias(input):
    return input.view(input.shape)


@_adapter("lift_fresh_copy")
def _lift_fresh_copy(input):
    return input.clone()


def _resolve(name):
    if name in _ADAPTERS:
        return _ADAPTERS[name]
    import ember
    import ember.nn.functional as F
    for prefix, mod in (("linalg_", "linalg"), ("special_", "special"), ("fft_", "fft")):
        if name.startswith(prefix):
            f = getattr(getattr(ember, mod, None), name[len(prefix):], None)
            if f is not None:
                return f
    for ns in (ember, F):
        f = getattr(ns, name, None)
        if callable(f) and not isinstance(f, type) and not hasattr(f, "__path__"):
            return f
    m = getattr(ember.Tensor, name, None)
    if callable(m):
        return lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs)
    return None


class OpOverload:
    """One overload of an ATen op (``aten.add.Tensor``): callable."""

    def __init__(self, packet, overload):
        self.overloadpacket = packet
        self._overloadname = overload
        self.__name__ = f"{packet.__name__}.{overload}"
        self.__qualname__ = f"{packet.__name__}.{overload}"
        self.__module__ = "ember.ops.aten"

    def __call__(self, *args, **kwargs):
        return self.overloadpacket._fn(*args, **kwargs)

    def name(self):
        return f"aten::{self.overloadpacket.__name__}"

    def __repr__(self):
        return f"aten.{self.__name__}"


class OpOverloadPacket:
    """An ATen op with all its overloads (``aten.add``): callable, and ``.<overload>`` gives one."""

    def __init__(self, name, fn):
        self.__name__ = name
        self.__qualname__ = name
        self.__module__ = "ember.ops.aten"
        self._fn = fn
        self._overloads = {}

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        ov = self._overloads.get(overload)
        if ov is None:
            ov = self._overloads[overload] = OpOverload(self, overload)
        return ov

    def overloads(self):
        return list(self._overloads) or ["default"]

    def __repr__(self):
        return f"aten.{self.__name__}"


class _OpNamespace:
    """``ops.aten``: op packets made on first use and kept, so a name is always the same object."""

    def __init__(self, name):
        self.name = name
        self._packets = {}

    def __getattr__(self, op):
        if op.startswith("__"):
            raise AttributeError(op)
        p = self._packets.get(op)
        if p is None:
            fn = _resolve(op)
            if fn is None:
                raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op}' "
                                     f"(ember runs ATen ops through its public functions and has none "
                                     f"named {op!r})")
            p = self._packets[op] = OpOverloadPacket(op, fn)
        return p

    def __repr__(self):
        return f"ember.ops.{self.name}"


aten = _OpNamespace("aten")
