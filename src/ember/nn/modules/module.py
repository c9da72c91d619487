"""nn.Module: registration of parameters, buffers and submodules by attribute, traversal, state
dicts, train/eval, conversions (dtype, memory format, the 'meta' device), hooks and repr."""
from collections import OrderedDict, namedtuple
import itertools

from ...autograd.grad_mode import no_grad as _no_grad
from ..._tensor import Tensor
from ..parameter import Parameter, Buffer

_hook_ids = itertools.count()


class RemovableHandle:
    """Returned by the register_*_hook methods; ``remove()`` unregisters the hook."""

    def __init__(self, *dicts, extra=(), extra_dict=None):
        self.id = next(_hook_ids)
        self._dicts = list(dicts)
        self._extra = list(extra)
        if extra_dict is not None:  # PyTorch's keyword (torch.utils.hooks.RemovableHandle): a dict or a list
            self._extra += list(extra_dict) if isinstance(extra_dict, (list, tuple)) else [extra_dict]

    def remove(self):
        """Remove the hook this handle was returned for."""
        for d in self._dicts + self._extra:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.remove()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + l for l in lines[1:])


_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()


def register_module_forward_pre_hook(hook):
    """Register a forward pre-hook run for every module (global); returns a removable handle."""
    h = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[h.id] = hook
    return h


def register_module_forward_hook(hook):
    """Register a forward hook run for every module (global); returns a removable handle."""
    h = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[h.id] = hook
    return h


class Module:
    """Base class of every layer and model."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments "
                            f"{args or ''}{kwargs or ''}")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = set()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = set()
        d["_forward_hooks_always_called"] = set()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

    def forward(self, *input):
        """The computation of the module; every subclass defines it (call the module, not forward)."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if not (d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"]
                or d["_backward_pre_hooks"] or _global_forward_hooks or _global_forward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        pre = list(_global_forward_pre_hooks.items()) + list(self._forward_pre_hooks.items())
        for hid, hook in pre:
            if hid in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = None
        if self._backward_hooks or self._backward_pre_hooks:
            from ._backward_hook import BackwardHook
            bw = BackwardHook(self, list(self._backward_hooks.values()),
                              list(self._backward_pre_hooks.values()))
            args = bw.setup_input_hook(args)
        try:
            result = self.forward(*args, **kwargs)
        except Exception:
            for hid, hook in self._forward_hooks.items():
                if hid in self._forward_hooks_always_called:
                    try:
                        hook(self, args, None)
                    except Exception:
                        pass
            raise
        post = list(_global_forward_hooks.items()) + list(self._forward_hooks.items())
        for hid, hook in post:
            if hid in self._forward_hooks_with_kwargs:
                r = hook(self, args, kwargs, result)
            else:
                r = hook(self, args, result)
            if r is not None:
                result = r
        if bw is not None:
            result = bw.setup_output_hook(result)
        return result

    _call_impl = __call__

    # ------------------------------------------------------------------ registration
    def register_parameter(self, name, param):
        """Add a parameter (or None) under a name."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(self, name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                             "must be created explicitly. To express '{name}' as a function of another "
                             "Tensor, compute the value in the forward() method.")
        else:
            self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (persistent: saved in the state dict, unless persistent=False)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(self, name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = _plain(tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Register a child module under a name (an attribute of this module)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f"module name can't contain \".\", got: {name}")
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                return p[name]
            b = d["_buffers"]
            if name in b:
                return b[name]
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _remove_from(self, name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _remove_from(self, name, d, params, self._buffers, self._non_persistent_buffers_set)
            self._modules[name] = value
        elif params is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            d["_modules"][name] = value
        elif isinstance(value, Buffer) or (params is not None and name in d["_buffers"]):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            if isinstance(value, Buffer):
                _remove_from(self, name, d, params, self._modules, set())
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name):
        d = self.__dict__
        if name in d.get("_parameters", ()):
            del d["_parameters"][name]
        elif name in d.get("_buffers", ()):
            del d["_buffers"][name]
            d["_non_persistent_buffers_set"].discard(name)
        elif name in d.get("_modules", ()):
            del d["_modules"][name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = set(object.__dir__(self))
        keys.update(self._parameters, self._buffers, self._modules)
        return sorted(k for k in keys if not k[:1].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)

    # ------------------------------------------------------------------ traversal
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_prefix, mod in modules:
            for k, v in get_members(mod):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (mod_prefix + ("." if mod_prefix else "") + k, v)

    def parameters(self, recurse=True):
        """Iterate over the module's parameters (those of its submodules too when recurse)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterate over (dotted name, parameter) pairs."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """Iterate over the module's buffers (those of its submodules too when recurse)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterate over (dotted name, buffer) pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        """Iterate over the immediate child modules."""
        for _, m in self.named_children():
            yield m

    def named_children(self):
        """Iterate over (name, module) pairs of the immediate children."""
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self):
        """Iterate over every module of the tree, this one first."""
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Iterate over (dotted name, module) pairs of the whole tree, this one first ('')."""
        if memo is None:
            memo = set()
        if id(self) in memo and remove_duplicate:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    def get_submodule(self, target):
        """The submodule at a dotted path ('layer1.0')."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        """The parameter at a dotted path ('layer1.0.weight')."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    def get_buffer(self, target):
        """The buffer at a dotted path ('layer1.0.bn.running_mean')."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"{type(mod).__name__} has no buffer `{name}`")
        return mod._buffers[name]

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode=True):
        """Set training mode (True) or evaluation mode (False) on the whole tree."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        """Put the module in evaluation mode (train(False)); returns the module."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on every parameter; returns the module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the parameters' gradients (to None by default, or to zeros with set_to_none=False)."""
        for p in self.parameters():
            if p._grad is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                g = p._grad
                if g._fn is not None:
                    g = p._grad = g.detach()
                else:
                    g._rg = False
                g._data[...] = 0
                g._bump("zero_grad")

    def apply(self, fn):
        """Call fn on every submodule (children first) and on this module; returns this module."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ conversions
    def _apply(self, fn, recurse=True):
        if recurse:
            for m in self.children():
                m._apply(fn)
        for key, p in self._parameters.items():
            if p is None:
                continue
            with _no_grad():
                new = fn(p)
            _swap_data(p, new)
            if p._grad is not None:
                with _no_grad():
                    g = fn(p._grad)
                p._grad = g if g is not p._grad else p._grad
        for key, b in self._buffers.items():
            if b is not None:
                self._buffers[key] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """Move or cast parameters and buffers (dtype, device 'cpu' or 'meta', memory_format)."""
        from ..._tensor_methods import _parse_to
        dtype, dev, mf, _ = _parse_to(args, dict(kwargs))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")
        if dtype is not None and dtype.is_complex:
            import warnings
            warnings.warn("Complex modules are a new feature under active development whose design may change, "
                          "and some modules might not work as expected when using complex tensors as parameters "
                          "or buffers.")

        def convert(t):
            if t._meta and dev is not None and dev.type != "meta":
                raise NotImplementedError("Cannot copy out of meta tensor; no data! Please use "
                                          "torch.nn.Module.to_empty() instead of torch.nn.Module.to() when "
                                          "moving module from meta to a different device.")
            if dev is not None and dev.type == "meta" and not t._meta:
                from ..._creation import empty
                r = empty(t.shape, dtype=dtype if (dtype is not None and (t.is_floating_point() or t.is_complex()))
                          else t.dtype, device="meta")
                return r
            kw = {}
            if dtype is not None and (t.is_floating_point() or t.is_complex()):  # (complex too, as PyTorch)
                kw["dtype"] = dtype
            if mf is not None and t.dim() in (4, 5):
                kw["memory_format"] = mf
            if not kw:
                return t
            return t.to(**kw)
        return self._apply(convert)

    def to_empty(self, *, device=None, recurse=True):
        """Move the parameters and buffers to a device as uninitialised tensors (from 'meta')."""
        from ..._creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse)

    def float(self):
        """Cast the floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Cast the floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Cast the floating-point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        """Cast the floating-point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def type(self, dst_type):
        """Cast every parameter and buffer to a dtype."""
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self):
        """Return this module: its tensors live on the CPU already."""
        return self

    def cuda(self, device=None):
        """Refuse: there is no CUDA device.

        Differences from PyTorch: raises RuntimeError ("ember has no CUDA device") where PyTorch's CPU-only
        build raises AssertionError ("Torch not compiled with CUDA enabled")."""
        raise RuntimeError("ember has no CUDA device: modules live on the 'cpu' device")

    def share_memory(self):
        """Return this module.

        Differences from PyTorch: the parameters and buffers are not moved to shared memory, so
        processes forked afterwards (Hogwild-style training) do not share them."""
        return self

    # ------------------------------------------------------------------ state dicts
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        extra = getattr(type(self), "get_extra_state", None)
        if extra is not None and extra is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def get_extra_state(self):
        """Extra state to put in the state dict; a module that has some overrides it."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be "
                           "called.")

    def set_extra_state(self, state):
        """Restore extra state from the state dict; a module that has some overrides it."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be "
                           "called.")

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ordered dict of the parameters and persistent buffers by dotted name."""
        if args:  # the old positional form state_dict(destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            r = hook(self, destination, prefix, {})
            if r is not None:
                destination = r
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                 if v is not None}
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                try:
                    from ..._creation import as_tensor
                    value = as_tensor(value)
                except Exception:
                    error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor '
                                      f"or Tensor-like object from checkpoint but received "
                                      f"{type(value)}")
                    continue
            if tuple(value.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{_size(value.shape)} from checkpoint, the shape in current model is "
                                  f"{_size(param.shape)}.")
                continue
            try:
                if assign:
                    if isinstance(param, Parameter):
                        new = Parameter(value.detach(), requires_grad=param.requires_grad)
                        self._parameters[name] = new
                    else:
                        self._buffers[name] = value
                elif param._meta:
                    setattr_new = value.detach().to(dtype=param.dtype).clone()
                    _swap_data(param, setattr_new)
                else:
                    with _no_grad():
                        param.copy_(value)
            except Exception as e:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the '
                                  f"model are {_size(param.shape)} and whose dimensions in the checkpoint "
                                  f"are {_size(value.shape)}, an exception occurred : {e.args}.")
        extra_key = prefix + "_extra_state"
        if getattr(type(self), "set_extra_state", None) is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_key:
                    rest = key[len(prefix):]
                    head = rest.split(".", 1)[0]
                    if head not in self._modules and head not in local:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from a state dict into this module; returns the missing and unexpected
        keys."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, prefix=""):
            local_meta = {} if metadata is None else metadata.get(prefix[:-1], {})
            module._load_from_state_dict(state_dict, prefix, local_meta, True, missing, unexpected,
                                         errors, assign)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)
        load(self)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ hooks
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Register hook(module, args) to run before forward; returns a removable handle."""
        h = RemovableHandle(self._forward_pre_hooks, extra=())
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(h.id)
            h._extra.append(_SetAsDict(self._forward_pre_hooks_with_kwargs))
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """Register hook(module, args, output) to run after forward; returns a removable handle."""
        h = RemovableHandle(self._forward_hooks)
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(h.id)
            h._extra.append(_SetAsDict(self._forward_hooks_with_kwargs))
        if always_call:
            self._forward_hooks_always_called.add(h.id)
            h._extra.append(_SetAsDict(self._forward_hooks_always_called))
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_hook(self, hook, prepend=False):
        """Register hook(module, grad_input, grad_output) run when the gradients of the module's inputs are
        computed."""
        h = RemovableHandle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Register hook(module, grad_output) run before the gradients of the module's inputs are computed."""
        h = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[h.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_state_dict_pre_hook(self, hook):
        """Register hook(module, prefix, keep_vars) run before state_dict."""
        h = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[h.id] = hook
        return h

    def register_state_dict_post_hook(self, hook):
        """Register hook(module, state_dict, prefix, local_metadata) run after state_dict."""
        h = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = hook
        return h

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook):
        """Register a hook run before load_state_dict loads this module's entries."""
        h = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = \
            lambda sd, prefix, meta, strict, mk, uk, em: hook(self, sd, prefix, meta, strict, mk, uk, em)
        return h

    def register_load_state_dict_post_hook(self, hook):
        """Register hook(module, incompatible_keys) run after load_state_dict."""
        h = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[h.id] = hook
        return h

    # ------------------------------------------------------------------ repr
    def extra_repr(self):
        """The text inside the module's repr parentheses (its settings)."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        s = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                s += extra_lines[0]
            else:
                s += "\n  " + "\n  ".join(lines) + "\n"
        return s + ")"


class _SetAsDict:
    """Lets RemovableHandle drop an id from a set as it does from a dict."""

    def __init__(self, s):
        self._s = s

    def pop(self, key, default=None):
        self._s.discard(key)


def _remove_from(self, name, *containers):
    for c in containers:
        if c is None:
            continue
        if isinstance(c, set):
            c.discard(name)
        elif name in c:
            del c[name]


def _check_name(self, name, kind):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\"")
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


def _typename(v):
    if isinstance(v, Tensor):
        return "torch." + {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                           "int64": "LongTensor", "int32": "IntTensor", "bool": "BoolTensor"}.get(
            v.dtype.name, "Tensor")
    return type(v).__name__


def _size(shape):
    return "torch.Size([" + ", ".join(str(s) for s in shape) + "])"


def _plain(t):
    from ..._tensor import new_tensor
    r = new_tensor(t._data)
    r._vc = t._vc
    r._rg = t._rg
    if t._meta:
        r._meta = True
    return r


def _swap_data(p, new):
    """Give parameter ``p`` the storage of ``new`` in place, keeping the object (as param.data = new)."""
    if new is p:
        return
    p._data = new._data
    p._vc = None
    if new._meta:
        p._meta = True
    elif p._meta:
        p.__dict__.pop("_meta", None)
