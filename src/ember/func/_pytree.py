"""Minimal pytrees for ember.func: tuples, lists, dicts (and namedtuples) of leaves."""


class Spec:
    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind, meta=None, children=()):
        self.kind, self.meta, self.children = kind, meta, children

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)


LEAF = Spec("leaf")


def tree_flatten(x):
    leaves = []
    spec = _flatten(x, leaves)
    return leaves, spec


def _flatten(x, leaves):
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return Spec("namedtuple", type(x), tuple(_flatten(v, leaves) for v in x))
    if isinstance(x, (tuple, list)):
        return Spec(type(x), None, tuple(_flatten(v, leaves) for v in x))
    if isinstance(x, dict):
        keys = list(x.keys())
        return Spec(dict, (type(x), keys), tuple(_flatten(x[k], leaves) for k in keys))
    leaves.append(x)
    return LEAF


def tree_unflatten(leaves, spec):
    it = iter(leaves)
    return _build(spec, it)


def _build(spec, it):
    k = spec.kind
    if k == "leaf":
        return next(it)
    kids = [_build(c, it) for c in spec.children]
    if k == "namedtuple":
        return spec.meta(*kids)
    if k is dict:
        cls, keys = spec.meta
        d = cls() if cls is not dict else {}
        for key, v in zip(keys, kids):
            d[key] = v
        return d
    return k(kids)


def tree_map(fn, x):
    leaves, spec = tree_flatten(x)
    return tree_unflatten([fn(v) for v in leaves], spec)


def broadcast_prefix(prefix, tree, what="in_dims"):
    """Expand ``prefix`` (a leaf or a structure matching the top of ``tree``) to one entry per leaf
    of ``tree``."""
    out = []
    _bp(prefix, tree, out, what)
    return out


def _bp(prefix, tree, out, what):
    if not isinstance(prefix, (tuple, list, dict)):
        n = len(tree_flatten(tree)[0])
        out.extend([prefix] * n)
        return
    if isinstance(prefix, dict):
        if not isinstance(tree, dict) or set(prefix) != set(tree):
            raise ValueError(f"vmap: {what} {prefix!r} does not match the structure of the inputs: "
                             f"expected a dict with keys {sorted(tree) if isinstance(tree, dict) else None}")
        for k in tree:
            _bp(prefix[k], tree[k], out, what)
        return
    if not isinstance(tree, (tuple, list)) or len(tree) != len(prefix):
        raise ValueError(f"vmap: {what} is not compatible with the structure of the inputs: {what} has "
                         f"{len(prefix)} entries, the input has "
                         f"{len(tree) if isinstance(tree, (tuple, list)) else type(tree).__name__}")
    for p, t in zip(prefix, tree):
        _bp(p, t, out, what)
