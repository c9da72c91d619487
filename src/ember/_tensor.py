"""Tensor: an array with autograd metadata. Its operators and methods call the registry's ops
(bound in ember.ops), so this file holds only what is about the tensor itself."""
import numpy as np

from . import _dispatch as D
from . import _dtype as dt
from .autograd import graph as G

_new = object.__new__


class device:
    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        if ":" in type:
            type, idx = type.split(":", 1)
            index = int(idx)
        if type not in ("cpu", "meta"):
            raise RuntimeError(f"ember supports the 'cpu' and 'meta' devices, got {type!r}")
        self.type, self.index = type, index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and other.type == self.type

    def __hash__(self):
        return hash(self.type)

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


CPU = device("cpu")
META = device("meta")


class Size(tuple):
    """torch.Size: a tuple of ints that prints as ember.Size([...])."""

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    # concatenation and repetition stay Sizes, as torch.Size's do
    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to ember.Size")
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__


class Tensor:
    __slots__ = ("_data", "_rg", "_fn", "_nr", "_vc", "_base", "_grad", "__dict__", "__weakref__")
    # rarely set attributes live in __dict__ and default here
    _hooks = None
    _post_acc_hooks = None
    _acc = None
    _fw = None      # forward-mode tangents: {level: tangent}
    _wr = None      # the vmap / func.grad level this tensor wraps a value at (see _dispatch.Level)
    _val = None     # the wrapped value, one level down
    _meta = False
    _inference = False
    _grad_owned = False
    __array_priority__ = 1000  # numpy defers to our reflected operators

    def __new__(cls, *args, **kwargs):
        # ember.Tensor(data) / Tensor(2, 3) as in torch: sizes give an uninitialised float tensor
        t = _new(cls)
        _init(t, np.empty(0, dt.get_default_dtype().np))
        return t

    def __init__(self, *args, dtype=None, device=None):
        if not args:
            return
        if len(args) == 1 and isinstance(args[0], Size):  # Tensor(torch.Size([2, 3])): sizes, as PyTorch
            args = tuple(args[0])
        if len(args) == 1 and not isinstance(args[0], int):
            from ._creation import _to_array
            a = _to_array(args[0], dt.get_default_dtype())
        else:
            a = np.empty(tuple(args), (dtype or dt.get_default_dtype()).np)
        self._data = a

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim, "size")]

    def dim(self):
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    nelement = numel

    @property
    def dtype(self):
        return dt.FROM_NP[self._data.dtype]

    @property
    def device(self):
        return META if self._meta else CPU

    @property
    def is_meta(self):
        return self._meta

    is_cuda = False
    # the other devices and layouts PyTorch's Tensor reports on (all False for a CPU tensor)
    is_xpu = is_mps = is_ipu = is_xla = is_mtia = is_maia = is_vulkan = is_mkldnn = False
    is_nested = is_sparse_csr = False
    is_sparse = False
    is_quantized = False
    layout = "strided"

    def stride(self, dim=None):
        isz = self._data.itemsize
        st = tuple(s // isz for s in self._data.strides)
        if self._meta:  # a meta tensor's strides are recorded, its array is a zero-strided stand-in
            st = self.__dict__.get("_mstride") or _contiguous_strides(self._data.shape)
        return st if dim is None else st[_wrap_dim(dim, self._data.ndim, "stride")]

    def storage_offset(self):
        base = self._base
        if base is None:
            return 0
        return (_addr(self._data) - _addr(base._data)) // self._data.itemsize

    def data_ptr(self):
        return _addr(self._data)

    def untyped_storage(self):
        return _Storage(self)

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.size * self._data.itemsize

    def is_floating_point(self):
        return self._data.dtype.kind in "fV"  # ('V': bfloat16, ember's one such dtype)

    def is_complex(self):
        return self._data.dtype.kind == "c"

    def is_signed(self):
        return self._data.dtype.kind in "ifcV"

    def get_device(self):
        return -1

    def is_contiguous(self, memory_format=None):
        from ._memory_format import is_contiguous
        return is_contiguous(self, memory_format)

    def is_inference(self):
        return self._inference

    def _version_get(self):
        vc = self._vc
        return vc[0] if vc is not None else 0

    _version = property(_version_get)

    def _bump(self, by=None):
        vc = self._vc
        if vc is None:
            self._vc = [1, by]
        else:
            vc[0] += 1
            vc[1] = by

    def _shallow(self):
        """A new tensor object sharing data and version counter, with no autograd history.
        A plain Tensor, as every op result is (p.detach() of a Parameter is no Parameter)."""
        t = _new(Tensor)
        _init(t, self._data)
        if self._vc is None:
            self._vc = [0, None]
        t._vc = self._vc
        t._base = self._base if self._base is not None else self
        if self._meta:
            t._meta = True
        return t

    def _level_of(self):
        """The highest transform level this tensor takes part in (see ember._dispatch.Level)."""
        best = self._wr
        fw = self._fw
        if fw:
            for lvl in fw:
                if lvl.active and (best is None or lvl.index > best.index):
                    best = lvl
        return best

    # ------------------------------------------------------------------ autograd
    @property
    def requires_grad(self):
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        requires_grad = bool(requires_grad)
        if self._fn is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want "
                               "to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and self._data.dtype.kind not in "fcV":
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients, "
                               f"got {self.dtype}")
        if requires_grad and self._inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode "
                               "is not allowed.")
        self._rg = requires_grad
        return self

    @property
    def is_leaf(self):
        return self._fn is None

    @property
    def grad_fn(self):
        return self._fn

    @property
    def output_nr(self):
        return self._nr

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: expected "
                                   f"{list(self.shape)}, got {list(value.shape)}")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"assigned grad has data of a different type: expected "
                                   f"{self.dtype}, got {value.dtype}")
        self._grad = value
        # PyTorch accumulates into an assigned .grad in place (into its storage, a view's too)
        self._grad_owned = value is not None

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        fn = self._fn
        return fn is not None and bool(fn._retain) and self._nr in fn._retain

    def retain_grad(self):
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self._fn
        if fn is None:
            return
        import weakref
        if fn._retain is None:
            fn._retain = {}
        fn._retain[self._nr] = weakref.ref(self)
        fn._hooked = True

    def register_hook(self, hook):
        """hook(grad) -> None or a replacement gradient; runs when this tensor's grad is computed."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._fn is not None:
            return self._fn._tensor_hook(self._nr, hook)
        if self._hooks is None:
            self._hooks = []
            G.mark_hooked_leaf(self)
        self._hooks.append(hook)
        return G._RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        if self._fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = []
            G.mark_hooked_leaf(self)
        self._post_acc_hooks.append(hook)
        return G._RemovableHandle(self._post_acc_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        _autograd_backward(self, gradient, retain_graph, create_graph, None, inputs)

    def detach(self):
        if self._wr is not None:  # wrapped by a transform level: the registry's detach, which levels see
            from .ops.layout import detach_op
            return D.dispatch(detach_op, (self,))
        t = self._shallow()
        if self._inference:
            t._inference = True
        return t

    def detach_(self):
        if self._base is not None and self._base._rg:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._fn = None
        self._rg = False
        return self

    @property
    def data(self):
        # shares the array but not the version counter, and is no view: in-place changes
        # through .data are invisible to autograd's checks (the difference from detach())
        t = _new(Tensor)
        _init(t, self._data)
        if self._meta:
            t._meta = True
        if self._inference:
            t._inference = True
        return t

    @data.setter
    def data(self, value):
        self._data = value._data
        self._vc = value._vc

    # ------------------------------------------------------------------ conversions
    def numpy(self, *, force=False):
        if self._wr is not None:
            self._check_wrapped("numpy()")
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self._meta:
            raise RuntimeError("Cannot convert a meta tensor to numpy: it has no data")
        return self._data

    def __array__(self, dtype=None, copy=None):
        a = self._data
        return a.astype(dtype) if dtype is not None else a

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export for any DLPack consumer (torch.from_dlpack, np.from_dlpack, ...), sharing memory."""
        if self._rg:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        if self._meta:
            raise RuntimeError("Cannot export a meta tensor through DLPack: it has no data")
        if dl_device is not None and tuple(dl_device)[0] != 1:
            raise BufferError(f"ember tensors live on the CPU; DLPack device {tuple(dl_device)} was asked for")
        a = self._data
        if not a.flags.writeable and (max_version is None or tuple(max_version)[0] < 1):
            # the legacy protocol cannot flag read-only memory (a broadcast view): give a copy
            a = a.copy()
        kw = {} if max_version is None else {"max_version": max_version}
        if copy is not None:
            kw["copy"] = copy
        return a.__dlpack__(stream=stream, **kw)

    def __dlpack_device__(self):
        return (1, 0)  # (kDLCPU, device 0)

    def item(self):
        if self._meta:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if self._data.size != 1:
            raise RuntimeError(f"item(): a Tensor with {self._data.size} elements cannot be converted to Scalar")
        lv = D.state.levels
        if lv:
            for l in lv:
                chk = getattr(l, "check_item", None)
                if chk is not None:
                    chk(self)
        return self._data.reshape(()).item()

    def tolist(self):
        if self._meta:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        if self._wr is not None:
            self._check_wrapped("tolist()")
        return self._data.tolist()

    def _check_wrapped(self, what):
        """A vmap-batched tensor has no single value: reading it out is data-dependent control flow."""
        chk = getattr(self._wr, "check_item", None)
        if chk is not None:
            chk(self, what)

    def __float__(self):
        self._check_scalar("float")
        if self._data.dtype.kind == "c":  # (PyTorch's wording for a complex scalar)
            raise RuntimeError("value cannot be converted to type double without overflow")
        return float(self.item())

    def __int__(self):
        self._check_scalar("int")
        return int(self.item())

    def _check_scalar(self, to):
        if self._data.size != 1:
            raise ValueError(f"{to}(): only one element tensors can be converted to Python scalars "
                             f"(got shape {list(self._data.shape)})")

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __complex__(self):
        return complex(self.item())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element):
        # PyTorch: ``element in t`` is (t == element).any() for a number or a tensor
        if not isinstance(element, (Tensor, int, float, bool)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element).__name__}.")
        return bool((self == element).any())

    __hash__ = object.__hash__

    def __reduce_ex__(self, proto):
        # deepcopy/pickle within a process: data copied, leaf-ness and requires_grad kept
        return (_rebuild, (type(self), self._data.copy(), self._rg, self._meta))

    def __deepcopy__(self, memo):
        if self._fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.")
        t = _rebuild(type(self), self._data.copy() if not self._meta else self._data,
                     self._rg, self._meta)
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        if type(self).__dict__.get("_extra_deepcopy"):
            pass
        d = getattr(self, "__dict__", None)
        if d:
            for k, v in d.items():
                if k not in ("_acc", "_hooks", "_post_acc_hooks", "_grad_owned"):
                    import copy
                    t.__dict__[k] = copy.deepcopy(v, memo)
        memo[id(self)] = t
        return t

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __repr__(self):
        from ._printing import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __dir__(self):
        return sorted(set(object.__dir__(self)))


def _autograd_backward(*args, **kwargs):
    global _autograd_backward
    from .autograd import backward as _autograd_backward
    return _autograd_backward(*args, **kwargs)


def _init(t, arr):
    t._data = arr
    t._rg = False
    t._fn = None
    t._nr = 0
    t._vc = None
    t._base = None
    t._grad = None


def new_tensor(arr):
    t = _new(Tensor)
    t._data = arr
    t._rg = False
    t._fn = None
    t._nr = 0
    t._vc = None
    t._base = None
    t._grad = None
    return t


def _rebuild(cls, data, rg, meta):
    canon = dt.FROM_NP[data.dtype].np
    if data.dtype is not canon:  # unpickled arrays carry an equal but distinct dtype object, and
        data = data.view(canon)  # the kernels compare dtypes by identity
    t = _new(cls)
    _init(t, dt.canonical(data))
    t._rg = rg
    if meta:
        t._meta = True
    return t


def _addr(a):
    return a.__array_interface__["data"][0]


def _contiguous_strides(shape):
    st = []
    acc = 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def _wrap_dim(dim, ndim, op="dim"):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


class _Storage:
    """Enough of untyped_storage() to compare storages and read the pointer."""

    def __init__(self, t):
        a = t._data
        while isinstance(a.base, np.ndarray):
            a = a.base
        self._root = a

    def data_ptr(self):
        return _addr(self._root)

    def nbytes(self):
        return self._root.nbytes

    def __eq__(self, other):
        return isinstance(other, _Storage) and other._root is self._root


D.Tensor = Tensor
G.Tensor = Tensor
D._new_tensor = new_tensor
