"""Docstrings of the registry ops' public functions, kept in one table and applied at import.

The public functions over the registry (``ember.add``, ``ember.linalg``'s wrappers aside) live in
the family files under ``ops/``, where several people change the code at once; their
docstrings live here instead, one line per function, and :func:`apply` binds them when ember is
imported (the function and the Tensor method are the same object, so both get the text). The
Tensor methods defined in ``_tensor.py`` and ``_tensor_methods.py`` and the functions of
``ember/__init__.py`` get theirs from this table too (shared files kept small); every other
public callable carries its docstring in its own code.

A docstring says in one line what the function computes; where ember's behaviour on the CPU
differs from PyTorch's it adds a paragraph that starts with ``Differences from PyTorch:``.
:func:`differences` collects those paragraphs for the reference page of that name, and
:func:`public_api` is the walk over the public API that ``tests/test_docstrings.py`` checks.
"""
import importlib
import inspect

DIFF_HEADER = "Differences from PyTorch:"

# the public namespaces whose callables must carry a docstring (tests/test_docstrings.py)
PUBLIC_MODULES = ("ember", "ember.nn", "ember.nn.functional", "ember.linalg", "ember.fft", "ember.special",
                  "ember.func", "ember.autograd", "ember.optim", "ember.utils.data", "ember.distributions")


def _parse(text):
    """``name: text`` lines (a line that starts with spaces continues the one before)."""
    out = {}
    key = None
    for line in text.strip("\n").splitlines():
        if not line.strip():
            continue
        if line[:1] == " " and key is not None:
            out[key] += " " + line.strip()
            continue
        key, _, doc = line.partition(": ")
        out[key.strip()] = doc.strip()
    return out


def _resolve(path):
    """'ember.x.y' or 'Tensor.y' -> the object (None when it is absent)."""
    import ember
    if path.startswith("Tensor."):
        return inspect.getattr_static(ember.Tensor, path[7:], None)
    parts = path.split(".")
    obj = ember
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def _set_doc(obj, doc):
    target = obj.fget if isinstance(obj, property) else obj
    target = getattr(target, "__func__", target)  # staticmethod / classmethod
    try:
        target.__doc__ = doc
    except (AttributeError, TypeError):
        return False
    return True


def _compose(summary, diff):
    return summary if not diff else f"{summary}\n\n{DIFF_HEADER} {diff}"


def apply():
    """Bind the table's docstrings (called once, at the end of ember's import)."""
    from . import _docs_table as T
    docs = _parse(T.SUMMARIES)
    diffs = _parse(T.DIFFERENCES)
    for key in diffs:
        if key not in docs:
            raise RuntimeError(f"ember._docs: a difference for {key!r}, which has no summary line")
    for key, summary in docs.items():
        path = key if key.startswith("Tensor.") else "ember." + key
        obj = _resolve(path)
        if obj is None:
            continue
        _set_doc(obj, _compose(summary, diffs.get(key)))
    _inplace_methods()


def _inplace_methods():
    """Tensor.x_ without a docstring of its own: the in-place form of Tensor.x."""
    import ember
    T = ember.Tensor
    for name in dir(T):
        if not name.endswith("_") or name.startswith("_"):
            continue
        m = inspect.getattr_static(T, name, None)
        if not callable(m) or (getattr(m, "__doc__", None) or "").strip():
            continue
        base = inspect.getattr_static(T, name[:-1], None)
        if base is None or not callable(base):
            continue
        first = (inspect.getdoc(base) or "").split("\n\n")[0].strip()
        doc = f"In-place form of :meth:`Tensor.{name[:-1]}`: writes the result into this tensor."
        if first:
            doc += f" ({first})"
        _set_doc(m, doc)


# ----------------------------------------------------------------------------- the walk


def _own_doc(obj):
    if inspect.isclass(obj):
        return (obj.__dict__.get("__doc__") or "").strip()
    return (getattr(obj, "__doc__", None) or "").strip() if not isinstance(obj, property) else \
        (obj.__doc__ or "").strip()


def _names(mod):
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    return names


def _is_ember(obj):
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "ember"


def public_api():
    """Every public callable as (qualified name, object, how its docstring is found): 'own' for
    module-level functions and classes (their own docstring), 'method' for a class's methods
    (inspect.getdoc: an override without text inherits its base method's)."""
    seen = set()
    out = []
    for mname in PUBLIC_MODULES:
        mod = importlib.import_module(mname)
        for name in _names(mod):
            if name.startswith("_"):
                continue
            obj = getattr(mod, name, None)
            if obj is None or inspect.ismodule(obj) or not callable(obj):
                continue
            q = f"{mname}.{name}"
            out.append((q, obj, "own"))
            if inspect.isclass(obj) and _is_ember(obj) and id(obj) not in seen:
                seen.add(id(obj))
                for k in dir(obj):
                    if k.startswith("_"):
                        continue
                    static = inspect.getattr_static(obj, k, None)
                    if isinstance(static, property) or inspect.isclass(static):
                        continue
                    f = getattr(obj, k, None)
                    if f is None or not callable(f) or inspect.isclass(f):
                        continue
                    out.append((f"{q}.{k}", f, "method"))
    return out


def has_doc(obj, how):
    if how == "method":
        return bool((inspect.getdoc(obj) or "").strip())
    return bool(_own_doc(obj))


def undocumented():
    """The qualified names of public callables without a docstring."""
    return [q for q, obj, how in public_api() if not has_doc(obj, how)]


def differences():
    """(qualified names, paragraph) for every public callable whose docstring has a
    'Differences from PyTorch:' paragraph, each object once (its names joined), in walk order."""
    groups = {}
    order = []
    for q, obj, how in public_api():
        doc = inspect.getdoc(obj) if how == "method" else inspect.cleandoc(_own_doc(obj))
        if not doc or DIFF_HEADER not in doc:
            continue
        text = doc.split(DIFF_HEADER, 1)[1]
        text = " ".join(text.split("\n\n")[0].split())
        key = (id(getattr(obj, "__func__", obj)), text)
        if key not in groups:
            groups[key] = []
            order.append(key)
        elif how == "method" and not q.startswith("ember.Tensor."):
            continue  # (a base class's method: named once, by the first class that has it)
        groups[key].append(q)
    return [(groups[k], k[1]) for k in order]
