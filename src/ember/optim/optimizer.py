"""Optimizer: param groups, per-parameter state, state_dict/load_state_dict, zero_grad.

Steps run without recording gradients and update the parameters' arrays in place with NumPy
(bumping each parameter's version counter, so a graph that saved the old value notices)."""
from collections import defaultdict
import copy
import functools

import numpy as np

from .. import _dispatch as D
from .._tensor import Tensor


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


_HYPER_NAMES = {"lr": "learning rate", "eps": "epsilon value"}


def _check_nonnegative(**hyper):
    """Hyper-parameters that must be >= 0: a ValueError naming the first one that is not."""
    for name, value in hyper.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {_HYPER_NAMES.get(name, name + ' value')}: {value}")


def _check_betas(betas):
    """Adam-family betas: each in [0, 1), a ValueError naming the index of the first that is not."""
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def _closure_loss(closure):
    """The loss of a step's closure, evaluated with grad mode on; None without a closure."""
    if closure is None:
        return None
    from ..autograd.grad_mode import enable_grad
    with enable_grad():
        return closure()


_global_pre_hooks = {}
_global_post_hooks = {}


def register_optimizer_step_pre_hook(hook):
    from ..nn.modules.module import RemovableHandle
    h = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[h.id] = hook
    return h


def register_optimizer_step_post_hook(hook):
    from ..nn.modules.module import RemovableHandle
    h = RemovableHandle(_global_post_hooks)
    _global_post_hooks[h.id] = hook
    return h


def _with_hooks(step):
    """Run the step hooks around a subclass's step: global then own pre hooks, own then global post
    hooks (PyTorch's order)."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        pre = self.__dict__.get("_step_pre_hooks")
        post = self.__dict__.get("_step_post_hooks")
        if not (pre or post or _global_pre_hooks or _global_post_hooks):
            return step(self, *args, **kwargs)
        for hook in list(_global_pre_hooks.values()) + list((pre or {}).values()):
            r = hook(self, args, kwargs)
            if r is not None:
                if not (isinstance(r, tuple) and len(r) == 2):
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {r}.")
                args, kwargs = r
        out = step(self, *args, **kwargs)
        for hook in list((post or {}).values()) + list(_global_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    return wrapper


class Optimizer:
    """Base class of the optimizers: parameter groups with their options, per-parameter state, hooks."""
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _with_hooks(cls.__dict__["step"])

    def register_step_pre_hook(self, hook):
        """Register hook(optimizer, args, kwargs) run before each step; returns a removable handle."""
        from ..nn.modules.module import RemovableHandle
        hooks = self.__dict__.setdefault("_step_pre_hooks", {})
        h = RemovableHandle(hooks)
        hooks[h.id] = hook
        return h

    def register_step_post_hook(self, hook):
        """Register hook(optimizer, args, kwargs) run after each step; returns a removable handle."""
        from ..nn.modules.module import RemovableHandle
        hooks = self.__dict__.setdefault("_step_post_hooks", {})
        h = RemovableHandle(hooks)
        hooks[h.id] = hook
        return h

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        self._optimizer_step_code = None
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or "
                            f"dicts, but got {type(params).__name__}")
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for g in param_groups:
            self.add_param_group(g)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __deepcopy__(self, memo):
        import copy as _copy
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(_copy.deepcopy(self.__getstate__(), memo))
        return new

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n" + f"Parameter Group {i}"
            for key in sorted(group.keys()):
                if key != "params":
                    s += "\n" + f"    {key}: {group[key]}"
        return s + "\n)"

    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (missing ones take the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(map(id, params))):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, "
                          "this will cause an error", stacklevel=3)
        seen = set()
        for g in self.param_groups:
            seen.update(map(id, g["params"]))
        if not seen.isdisjoint(map(id, params)):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset the parameters' gradients (to None by default, or to zeros with set_to_none=False)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if g._fn is not None:
                        g = p._grad = g.detach()
                    else:
                        g._rg = False
                    if not g._data.flags.writeable:
                        g._data = np.zeros_like(g._data)
                    else:
                        g._data[...] = 0
                    g._bump("zero_grad")

    def step(self, closure=None):
        """Update the parameters from their gradients (closure: re-evaluates the loss and returns it)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ state dicts
    def state_dict(self):
        """The per-parameter state and the groups' options, parameters named by index (PyTorch's layout)."""
        index = {}
        start = 0
        groups = []
        for g in self.param_groups:
            for p in g["params"]:
                if id(p) not in index:
                    index[id(p)] = start
                    start += 1
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {index[id(k)]: v for k, v in self.state.items() if id(k) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore the state and group options from state_dict()."""
        state_dict = dict(state_dict)
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, sg in zip(groups, saved_groups):
            if len(g["params"]) != len(sg["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size "
                                 "of optimizer's group")
        id_map = {old: p for g, sg in zip(groups, saved_groups) for old, p in zip(sg["params"], g["params"])}
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            k = int(k) if isinstance(k, str) and k.isdigit() else k
            if k in id_map:
                p = id_map[k]
                state[p] = {key: _cast(p, val, key) for key, val in v.items()}
            else:
                state[k] = v
        new_groups = []
        for g, sg in zip(groups, saved_groups):
            ng = dict(sg)
            for key in ("betas",):
                if key in ng and isinstance(ng[key], list):
                    ng[key] = tuple(ng[key])
            ng["params"] = g["params"]
            new_groups.append(ng)
        self.state = state
        self.param_groups = new_groups


def _cast(param, value, key):
    """State tensors follow the parameter's dtype, except the step counter."""
    if isinstance(value, Tensor):
        if key != "step" and value.is_floating_point() and value.dtype is not param.dtype:
            return value.to(param.dtype).clone()
        return value.clone()
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    return copy.deepcopy(value)


def _params_with_grad(group):
    """(param, param array, grad array) for each parameter of a group that has a gradient."""
    out = []
    for p in group["params"]:
        g = p._grad
        if g is None:
            continue
        if g._data.dtype != p._data.dtype:
            raise RuntimeError(f"{p.dtype} parameter has a gradient of dtype {g.dtype}")
        out.append((p, g._data))
    return out


def _writeable(p):
    a = p._data
    if not a.flags.writeable:
        a = p._data = a.copy()
    return a


def _new_state(arr):
    return D._new_tensor(arr)


def _step_tensor(state):
    st = state.get("step")
    if st is None:
        st = state["step"] = D._new_tensor(np.zeros((), np.float32))
    st._data = st._data + np.float32(1)
    return float(st._data)




def _real_view(a, writes=True):
    """A complex array as its real and imaginary parts, one real array (writes go through); other
    arrays as they are. PyTorch's adaptive optimizers treat a complex parameter as two real ones
    (view_as_real), so that squares and square roots act on each part. ``writes=False``: a read-only
    operand (the gradient), copied when not contiguous."""
    if a.dtype.kind != "c":
        return a
    if not a.flags.c_contiguous:
        if writes:
            raise NotImplementedError("optimizers: a non-contiguous complex parameter or state is not supported")
        a = np.ascontiguousarray(a)
    return a.reshape(-1).view(a.real.dtype)


def _scratch(opt, p, a):
    """A reusable temporary the shape of parameter ``p`` (not part of the optimizer's state): a
    fresh array per parameter per step costs more than the arithmetic of the update. It has the
    parameter's strides, so a channels_last weight is updated in one contiguous pass."""
    bufs = opt.__dict__.get("_scratch_bufs")
    if bufs is None:
        bufs = opt.__dict__["_scratch_bufs"] = {}
    t = bufs.get(id(p))
    if t is None or t.strides != a.strides or t.shape != a.shape or t.dtype != a.dtype:
        t = bufs[id(p)] = np.empty_like(a)
    return t
