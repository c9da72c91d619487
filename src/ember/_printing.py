"""PyTorch-style repr: tensor([2.7183], grad_fn=<ExpBackward0>)."""
import numpy as np

from . import _dtype as dt

_opts = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Set how tensors print (precision, threshold, edgeitems, linewidth, profile, sci_mode), as PyTorch's
    options."""
    if profile == "default":
        _opts.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    elif profile == "full":
        _opts.update(threshold=float("inf"))
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            _opts[k] = v
    _opts["sci_mode"] = sci_mode


def _float_formatter(a):
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return lambda x: _special(x) or repr(float(x))
    absf = np.abs(finite)
    p = _opts["precision"]
    ints = np.all(finite == np.round(finite))
    mx, mn = absf.max(), absf[absf > 0].min() if (absf > 0).any() else 0.0
    sci = _opts["sci_mode"]
    if sci is None:
        ratio = mx / mn if mn else 0.0
        sci = mx > 1e8 or ratio > 1e3 or (not ints and bool(mn) and mn < 1e-4)
    if ints and not sci:
        return lambda x: _special(x) or f"{x:.0f}."
    if sci:
        return lambda x: _special(x) or f"{x:.{p}e}"
    return lambda x: _special(x) or f"{x:.{p}f}"


def _special(x):
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return None


def format_array(a, indent):
    if a.dtype.kind == "V":  # bfloat16 prints as its float32 values
        a = a.astype(np.float32)
    if a.dtype.kind == "f":
        fmt = _float_formatter(a.astype(np.float64))
        # every element padded to the widest, as PyTorch prints
        sample = a.reshape(-1) if a.size <= 100000 else np.concatenate(
            [a.reshape(-1)[:1000], a.reshape(-1)[-1000:]])
        # the width comes from the nonzero finite values only (PyTorch's rule): nan, inf and 0 do not widen
        width = max((len(fmt(float(x))) for x in sample[np.isfinite(sample) & (sample != 0)]), default=1)
        formatter = {"float_kind": lambda x: fmt(float(x)).rjust(width)}
    elif a.dtype.kind == "c":
        # PyTorch's layout: the real parts padded to their widest, then the imaginary part signed
        parts = []
        for part in (a.real, a.imag):
            f = _float_formatter(part.astype(np.float64))
            sample = part.reshape(-1)
            sample = sample[np.isfinite(sample) & (sample != 0)]
            parts.append((f, max((len(f(float(x))) for x in sample[:100000]), default=1)))
        (fr, wr), (fi, wi) = parts

        def fmt_c(z):
            re = fr(float(z.real)).rjust(wr)
            im = (fi(float(z.imag)).rjust(wi) + "j").lstrip()
            return re + im if im[0] in "+-" else re + "+" + im
        formatter = {"complex_kind": fmt_c}
    elif a.dtype.kind == "b":
        w = 5 if not a.all() else 4
        formatter = {"bool": lambda x: ("True" if x else "False").rjust(w)}
    else:
        sample = a.reshape(-1) if a.size <= 100000 else np.concatenate(
            [a.reshape(-1)[:1000], a.reshape(-1)[-1000:]])
        width = max(len(str(int(x))) for x in sample)
        formatter = {"int": lambda x: str(int(x)).rjust(width)}
    summarize = a.size > _opts["threshold"]
    text = np.array2string(a, separator=", ", formatter=formatter, prefix=" " * indent,
                           threshold=0 if summarize else a.size + 1, edgeitems=_opts["edgeitems"],
                           max_line_width=_opts["linewidth"])
    # PyTorch pads the ellipsis inside a row like an element: "2,  ..., 1997"
    return text.replace(", ..., ", ",  ..., ") if summarize else text


def tensor_repr(t, prefix="tensor("):
    a = t._data
    extras = []
    if t._meta:
        body = "..."
        extras.append(f"size={tuple(a.shape)}")
        extras.append("device='meta'")
    elif a.size == 0 and a.ndim == 1:
        body = "[]"
    elif a.size == 0:
        body = "[]"
        extras.append(f"size={tuple(a.shape)}")
    else:
        body = format_array(a, len(prefix))
    d = t.dtype
    default_ok = d is dt.get_default_dtype() or d is dt.int64 or d is dt.bool_ or d is dt.default_complex()
    if not default_ok or (a.size == 0 and d is not dt.get_default_dtype()):
        extras.append(f"dtype={d!r}")
    fn = t._fn
    if fn is not None:
        extras.append(f"grad_fn=<{type(fn).__name__}>")
    elif t._rg:
        extras.append("requires_grad=True")
    fw = t._fw
    if fw:
        extras.append("tangent=" + repr(next(iter(fw.values()))))
    tail = "".join(", " + e for e in extras)
    name = prefix
    if getattr(type(t), "_repr_prefix", None):
        name = type(t)._repr_prefix
    return f"{name}{body}{tail})"
