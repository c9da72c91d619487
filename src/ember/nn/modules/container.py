"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
from collections import OrderedDict
import operator

from .module import Module, _addindent
from ..parameter import Parameter


class Sequential(Module):
    """Modules run one after another, each on the previous one's output."""
    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, m in args[0].items():
                self.add_module(key, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def _get_item_by_idx(self, iterator, idx):
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        idx %= size
        for i, it in enumerate(iterator):
            if i == idx:
                return it

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx, module):
        key = self._get_item_by_idx(self._modules.keys(), idx)
        setattr(self, key, module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            delattr(self, self._get_item_by_idx(self._modules.keys(), idx))
        mods = list(self._modules.items())
        self._modules.clear()
        for i, (_, m) in enumerate(mods):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def append(self, module):
        """Add a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Insert a module before an index."""
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m
        return self

    def extend(self, sequential):
        """Add the modules of an iterable at the end."""
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key):
        """Remove the module at an index and return it."""
        v = self[key]
        del self[key]
        return v

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input


class ModuleList(Module):
    """Submodules held in a list, registered under their indices."""
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _idx(self, idx):
        idx = operator.index(idx)
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return str(idx % n)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[self._idx(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._idx(idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in list(self._modules.keys())[idx]:
                delattr(self, k)
        else:
            delattr(self, self._idx(idx))
        mods = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def insert(self, index, module):
        """Insert a module before an index."""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def append(self, module):
        """Add a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Remove the module at an index and return it."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        """Add the modules of an iterable at the end."""
        if isinstance(modules, Module) and not isinstance(modules, (ModuleList, Sequential)):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        off = len(self)
        for i, m in enumerate(modules):
            self.add_module(str(off + i), m)
        return self

    def forward(self, *a, **k):
        raise NotImplementedError("ModuleList is a container: it has no forward()")

    def __repr__(self):
        """Runs of consecutive children with the same repr print once, as "(i-j): n x child"."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        groups = []  # [first index, last index, repr]
        for i, r in enumerate(reprs):
            if groups and groups[-1][2] == r:
                groups[-1][1] = i
            else:
                groups.append([i, i, r])
        lines = []
        for a, b, r in groups:
            head = f"({a}): " if a == b else f"({a}-{b}): {b - a + 1} x "
            lines.append(_addindent(head + r, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """Submodules held in a dict, registered under their keys."""
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        """Remove every module."""
        self._modules.clear()

    def pop(self, key):
        """Remove a key and return its module."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        """The keys."""
        return self._modules.keys()

    def items(self):
        """The (key, module) pairs."""
        return self._modules.items()

    def values(self):
        """The modules."""
        return self._modules.values()

    def update(self, modules):
        """Add the modules of a mapping or of (key, module) pairs."""
        if hasattr(modules, "items"):
            for k, m in modules.items():
                self[k] = m
        else:
            for j, kv in enumerate(modules):
                if len(kv) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} has length {len(kv)}; "
                                     "2 is required")
                self[kv[0]] = kv[1]

    def forward(self, *a, **k):
        raise NotImplementedError("ModuleDict is a container: it has no forward()")


class ParameterList(Module):
    """Parameters held in a list, registered under their indices."""
    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __len__(self):
        return self._size

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        idx = operator.index(idx)
        if not -self._size <= idx < self._size:
            raise IndexError(f"index {idx} is out of range")
        return getattr(self, str(idx % self._size))

    def __setitem__(self, idx, param):
        idx = operator.index(idx) % self._size
        if not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def append(self, value):
        """Add a parameter at the end."""
        n = self._size
        self._size += 1
        if not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, str(n), value)
        return self

    def extend(self, values):
        """Add the parameters of an iterable at the end."""
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        lines = []
        for i, p in enumerate(self):
            size = "x".join(str(s) for s in p.size())
            lines.append(f"  ({i}): Parameter containing: [torch.{_tname(p)} of size {size}]")
        return "\n".join(lines)

    def __repr__(self):
        body = self.extra_repr()
        return "ParameterList(\n" + body + "\n)" if body else "ParameterList()"


class ParameterDict(Module):
    """Parameters held in a dict, registered under their keys."""
    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        if not isinstance(value, Parameter):
            value = Parameter(value)
        self.register_parameter(key, value)

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        """The keys."""
        return self._parameters.keys()

    def items(self):
        """The (key, parameter) pairs."""
        return self._parameters.items()

    def values(self):
        """The parameters."""
        return self._parameters.values()

    def update(self, parameters):
        """Add the parameters of a mapping or of (key, parameter) pairs."""
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v


def _tname(p):
    return {"float32": "FloatTensor", "float64": "DoubleTensor"}.get(p.dtype.name, "Tensor")
