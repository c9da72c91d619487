"""functional_call and stack_module_state: running a module with parameters given as arguments."""
import contextlib

from .. import _dispatch as D


def _split(name):
    mod, _, leaf = name.rpartition(".")
    return mod, leaf


def _get_sub(module, path):
    m = module
    if path:
        for part in path.split("."):
            m = getattr(m, part)
    return m


def _swap(module, name, value):
    """Put value at module.<name>; returns a callable restoring the old state."""
    path, leaf = _split(name)
    m = _get_sub(module, path)
    for store in ("_parameters", "_buffers"):
        d = m.__dict__.get(store)
        if d is not None and leaf in d:
            old = d[leaf]
            d[leaf] = value

            def restore(d=d, leaf=leaf, old=old):
                d[leaf] = old
            return restore
    had = leaf in m.__dict__
    old = m.__dict__.get(leaf)
    object.__setattr__(m, leaf, value)

    def restore2():
        if had:
            object.__setattr__(m, leaf, old)
        else:
            try:
                object.__delattr__(m, leaf)
            except AttributeError:
                pass
    return restore2


def _tied_names(module):
    """Groups of parameter/buffer names that are the same tensor (weight tying)."""
    groups = {}
    for getter in ("named_parameters", "named_buffers"):
        fn = getattr(module, getter, None)
        if fn is None:
            continue
        try:
            items = fn(remove_duplicate=False)
        except TypeError:
            items = fn()
        for n, t in items:
            if t is not None:
                groups.setdefault(id(t), []).append(n)
    return [g for g in groups.values() if len(g) > 1]


@contextlib.contextmanager
def _reparametrize(module, tensors, tie_weights=True, strict=False):
    tensors = dict(tensors)
    if tie_weights:
        for group in _tied_names(module):
            given = [n for n in group if n in tensors]
            if given:
                vals = {id(tensors[n]) for n in given}
                if len(vals) > 1:
                    raise ValueError(f"functional_call got multiple values for keys {given}, which are "
                                     f"tied. Consider using tie_weights=False")
                for n in group:
                    tensors.setdefault(n, tensors[given[0]])
    if strict:
        expected = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
        missing = sorted(expected - set(tensors))
        unexpected = sorted(set(tensors) - expected)
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}: missing keys "
                               f"{missing}, unexpected keys {unexpected}")
    restores = []
    try:
        for name, value in tensors.items():
            restores.append(_swap(module, name, value))
        yield
    finally:
        for r in reversed(restores):
            r()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """Call module with its parameters and buffers replaced by the given tensors."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        tensors = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(f"Expected all elements of parameter_and_buffer_dicts to be dictionaries, "
                                 f"got {type(d).__name__}")
            dup = set(tensors) & set(d)
            if dup:
                raise ValueError(f"{sorted(dup)} appeared in multiple dictionaries; behavior of "
                                 f"functional call is ambiguous")
            tensors.update(d)
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
                         f"but got {type(parameter_and_buffer_dicts).__name__}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, tensors, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models):
    """(params, buffers): each a dict name -> the models' tensors stacked along a new dim 0.
    Stacked parameters are new leaves (requiring grad where the originals did)."""
    from ..ops import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    t0 = type(models[0])
    if not all(type(m) is t0 for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {}
    for name, p in models[0].named_parameters():
        s = stack([dict(m.named_parameters())[name].detach() for m in models])
        if p.requires_grad:
            s.requires_grad_()
        params[name] = s
    buffers = {}
    for name, b in models[0].named_buffers():
        buffers[name] = stack([dict(m.named_buffers())[name] for m in models])
    return params, buffers
