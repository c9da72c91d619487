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
                  "ember.func", "ember.autograd", "ember.optim", "ember.utils.data", "ember.distributions",
                  "ember.nn.init", "ember.nn.utils", "ember.nn.utils.rnn", "ember.nn.utils.parametrize",
                  "ember.optim.lr_scheduler", "ember.autograd.functional", "ember.autograd.forward_ad",
                  "ember.jit")


def _parse(text, merge=False):
    """``name: text`` lines (a line that starts with spaces continues the one before); a name given
    twice is an error, or with merge its texts are joined (several differences of one function)."""
    out = {}
    key = None
    for line in text.strip("\n").splitlines():
        if not line.strip():
            continue
        if line[:1] == " " and key is not None:
            out[key] += " " + line.strip()
            continue
        key, _, doc = line.partition(": ")
        key = key.strip()
        if key in out:
            if not merge:
                raise ValueError(f"ember._docs: {key!r} appears twice in the table")
            out[key] += " " + doc.strip()
        else:
            out[key] = doc.strip()
    return out


def _resolve(path):
    """'ember.x.y', 'Tensor.y' or 'ember.ops.module:name' -> the object (None when it is absent)."""
    import ember
    if ":" in path:  # a family module that ember's namespace does not expose (ops.pool3d, ...)
        mod, _, name = path.partition(":")
        return getattr(importlib.import_module(mod), name, None)
    if path.startswith("Tensor."):
        return inspect.getattr_static(ember.Tensor, path[7:], None)
    parts = path.split(".")
    obj = ember
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:  # a registry function that is no torch.* name (gelu, view, a batching rule)
            return getattr(ember.ops, parts[1], None) if len(parts) == 2 else None
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
    diffs = _parse(T.DIFFERENCES, merge=True)
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
    'Differences from PyTorch:' paragraph, each object once (its names joined), in walk order; a
    method that many classes inherit is named once, by the class that defines it."""
    groups = {}
    order = []
    fns = {}
    for q, obj, how in public_api():
        doc = inspect.getdoc(obj) if how == "method" else inspect.cleandoc(_own_doc(obj))
        if not doc or DIFF_HEADER not in doc:
            continue
        text = doc.split(DIFF_HEADER, 1)[1]
        text = " ".join(text.split("\n\n")[0].split())
        fn = getattr(obj, "__func__", obj)
        key = (id(fn), text)
        if key not in groups:
            groups[key] = []
            order.append(key)
            fns[key] = fn
        groups[key].append((q, how))
    out = []
    for k in order:
        names = [q for q, how in groups[k] if how == "own" or q.startswith("ember.Tensor.")]
        methods = [q for q, how in groups[k] if q not in names]
        if methods and not any(n.startswith("ember.Tensor.") for n in names):
            own = [n for n in methods if n.endswith("." + getattr(fns[k], "__qualname__", "?"))]
            names.append((own or methods)[0])
        out.append((names, k[1]))
    return out


def _rst_text(text):
    """Plain docstring text made safe as reST (no markup is meant in it)."""
    for c in ("\\", "*", "`", "|", "_ "):
        text = text.replace(c, "\\" + c)
    return text


_SECTIONS = (("ember.Tensor.", "ember.Tensor"), ("ember.nn.functional.", "ember.nn.functional"),
             ("ember.nn.", "ember.nn"), ("ember.linalg.", "ember.linalg"), ("ember.fft.", "ember.fft"),
             ("ember.special.", "ember.special"), ("ember.func.", "ember.func"),
             ("ember.autograd.", "ember.autograd"), ("ember.optim.", "ember.optim"),
             ("ember.utils.data.", "ember.utils.data"), ("ember.distributions.", "ember.distributions"),
             ("ember.jit.", "ember.jit"),
             ("ember.", "ember"))


def differences_rst():
    """The reST of the reference page "Differences from PyTorch": every docstring's paragraph,
    grouped by namespace (generated, never edited by hand)."""
    by_section = {title: [] for _, title in _SECTIONS}
    for names, text in differences():
        names = sorted(names, key=lambda n: (n.startswith("ember.Tensor."), n.count("."), n))
        first = names[0]
        title = next(t for prefix, t in _SECTIONS if first.startswith(prefix))
        by_section[title].append((names, text))
    lines = ["Differences from PyTorch", "========================", "",
             "Where ember's behaviour on the CPU differs from PyTorch's, the function's docstring says so in a",
             "paragraph that starts with *Differences from PyTorch*. This page collects those paragraphs (it is",
             "generated from the docstrings when the reference is built). Everything not listed here behaves",
             "as PyTorch's CPU build does, or is a gap that raises a clear error naming the op.", ""]
    for _, title in _SECTIONS:
        entries = by_section[title]
        if not entries:
            continue
        lines += [title, "-" * len(title), ""]
        for names, text in entries:
            refs = ", ".join(f":py:obj:`{n}`" for n in names)
            lines += [f"* {refs}: {_rst_text(text)}", ""]
    return "\n".join(lines) + "\n"
