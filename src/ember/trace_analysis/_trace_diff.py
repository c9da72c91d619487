"""TraceDiff: which ops and kernels a change added, removed, or made more or less frequent, with
the API and the results of Holistic Trace Analysis' ``TraceDiff``."""
import os
import warnings
from collections import OrderedDict
from enum import Enum

import numpy as np

from ._reader import TraceFormatError, read_trace_dir, trace_files


def _pd():
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is an optional extra
        raise ImportError("ember.trace_analysis needs pandas: pip install 'ember[trace]'") from None
    return pd


class DeviceType(Enum):
    CPU = 1
    GPU = 2
    ALL = 3


def shorten_name(name):
    """A long op/kernel name without return type, template arguments and parameter lists, by
    Holistic Trace Analysis' rule: ``void at::native::f<float, 4>(int)`` -> ``at::native::f``.

    Names without ``<`` or ``(`` (``aten::add``, ``## forward ##``,
    ``autograd::engine::evaluate_function: AddBackward0``) and GPU memory activities
    (``Memcpy ...``, ``Memset ...``) are kept whole. Otherwise ``->`` is dropped, each ``<...>``
    and ``(...)`` group is removed (an unmatched ``>`` or ``)`` drops everything before it) and
    the last space-separated word is kept."""
    if name.startswith(("Memcpy", "Memset")) or ("<" not in name and "(" not in name):
        return name
    out = []
    opened = {"<": [], "(": []}  # positions in ``out`` of the open ``<`` and ``(``
    for ch in name.replace("->", ""):
        if ch == ">" or ch == ")":
            stack = opened["<" if ch == ">" else "("]
            k = stack[-1] if stack else 0
            del out[k:]
            for st in opened.values():
                while st and st[-1] >= k:
                    st.pop()
        else:
            if ch in opened:
                opened[ch].append(len(out))
            out.append(ch)
    return "".join(out).split(" ")[-1]


_CACHE = OrderedDict()
_CACHE_SIZE = 4


def _load_dir(trace_dir):
    """``{rank: TraceData}``, re-read only when the folder's files change."""
    files = trace_files(trace_dir)
    key = (os.path.abspath(trace_dir),
           tuple((f, os.stat(f).st_mtime_ns, os.stat(f).st_size) for f in files))
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    traces = read_trace_dir(trace_dir)
    _CACHE[key] = traces
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return traces


def _as_list(v, what):
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return [int(v)]
    if isinstance(v, (list, tuple)) and all(isinstance(x, (int, np.integer)) for x in v):
        return [int(x) for x in v]
    raise ValueError(f"Invalid type for argument `{what}` {v!r}: expected an int or a list of ints")


class LabeledTrace:
    """The traces of one folder (one file per rank) with a label for the diff's columns."""

    def __init__(self, label=None, trace_dir=None, t=None):
        if t is not None:
            traces = t.traces if hasattr(t, "traces") else t
            self.trace_dir = getattr(t, "trace_dir", None)
        elif trace_dir is not None:
            self.trace_dir = os.fspath(trace_dir)
            traces = _load_dir(self.trace_dir)
        else:
            raise ValueError("LabeledTrace needs a trace folder (trace_dir=) or parsed traces (t=)")
        self.traces = traces
        self.label = label if label else os.path.basename(os.path.normpath(self.trace_dir or "trace"))

    def ranks(self):
        return sorted(self.traces)

    def iterations(self):
        its = set()
        for td in self.traces.values():
            its.update(td.steps)
        return sorted(its)

    def _where(self):
        files = ", ".join(td.path for td in self.traces.values())
        return f"trace {self.label!r} ({files})"

    def extract_ops(self, rank=None, iteration=None, device_type=DeviceType.ALL):
        """The events of the given ranks (default: the first) and iterations (default: the first)
        on the given device: a DataFrame with rank, index, cat, name, ts, dur, stream,
        correlation, iteration, pid, tid."""
        pd = _pd()
        all_ranks = self.ranks()
        ranks = _as_list(rank, "rank")
        if ranks is None:
            if not all_ranks:
                raise ValueError(f"{self._where()} doesn't have any rank.")
            ranks = all_ranks[:1]
        for r in ranks:
            if r not in self.traces:
                raise ValueError(f"Invalid argument rank={r}: {self._where()} has ranks {all_ranks}")
        all_its = self.iterations()
        its = _as_list(iteration, "iteration")
        if its is None:
            if not all_its:
                raise TraceFormatError(f"{self._where()} has no ProfilerStep#N annotations, so no "
                                       "iteration can be selected (profile with a schedule and "
                                       "call prof.step() each iteration)")
            its = all_its[:1]
        for i in its:
            if i not in all_its:
                raise ValueError(f"Invalid argument iteration={i}: {self._where()} has iterations "
                                 f"{all_its}")
        if not isinstance(device_type, DeviceType):
            raise ValueError(f"device_type must be a DeviceType, got {device_type!r}")
        frames = []
        for r in ranks:
            td = self.traces[r]
            m = np.isin(td.iteration, its)
            if device_type is DeviceType.CPU:
                m &= td.stream == -1
            elif device_type is DeviceType.GPU:
                m &= td.stream != -1
            rows = np.nonzero(m)[0]
            names = np.asarray(td.names, dtype=object)
            cats = np.asarray(td.cats, dtype=object)
            frames.append(pd.DataFrame({
                "rank": np.full(len(rows), r, dtype=np.int64), "index": td.index[rows],
                "cat": cats[td.cat[rows]] if len(rows) else np.array([], dtype=object),
                "name": names[td.name[rows]] if len(rows) else np.array([], dtype=object),
                "ts": td.ts[rows], "dur": td.dur[rows], "stream": td.stream[rows],
                "correlation": td.correlation[rows], "iteration": td.iteration[rows],
                "pid": [td.pid[i] for i in rows], "tid": [td.tid[i] for i in rows]}))
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

    def get_ops_summary(self, ops):
        """Counts and total duration of ``ops`` per (category, name)."""
        df = ops.groupby(["cat", "name"])["dur"].agg(["count", "sum"]).reset_index()
        df = df.rename(columns={"count": "counts", "sum": "total_duration"})
        df["short_name"] = df["name"].map(shorten_name)
        return df[["cat", "name", "short_name", "counts", "total_duration"]]


def _labeled(t, default_label):
    if isinstance(t, LabeledTrace):
        return t
    if isinstance(t, (str, os.PathLike)):
        return LabeledTrace(label=default_label, trace_dir=t)
    if hasattr(t, "traces"):
        return LabeledTrace(label=default_label, t=t)
    raise ValueError(f"Invalid argument type for ({t!r}): expected a trace folder or a LabeledTrace")


class TraceDiff:
    """Compare a control and a test trace folder, as Holistic Trace Analysis' TraceDiff."""

    @classmethod
    def compare_traces(cls, control, test, control_rank=None, test_rank=None,
                       control_iteration=None, test_iteration=None, device_type=DeviceType.ALL,
                       use_short_name=False):
        """A DataFrame indexed by op/kernel name with ``{label}_counts`` and
        ``{label}_total_duration`` (microseconds) for both traces, ``diff_counts`` and
        ``diff_duration`` (test minus control) and ``counts_change_categories`` ('+', '-', '=').
        Folders get the labels 'Control' and 'Test'; defaults: each trace's first rank and first
        iteration."""
        pd = _pd()
        c = _labeled(control, "Control")
        t = _labeled(test, "Test")
        if c.label == t.label:
            new = f"{t.label}_test"
            warnings.warn(f"The two traces have the same label {t.label!r}: the test trace is "
                          f"labelled {new!r}")
            t = LabeledTrace(label=new, t=t)
        col = "short_name" if use_short_name else "name"
        cs = c.get_ops_summary(c.extract_ops(control_rank, control_iteration, device_type))
        ts = t.get_ops_summary(t.extract_ops(test_rank, test_iteration, device_type))
        cs = cs.groupby(col)[["counts", "total_duration"]].sum()
        ts = ts.groupby(col)[["counts", "total_duration"]].sum()
        comp = pd.concat([cs, ts], axis=1, join="outer", keys=[c.label, t.label])
        comp = comp.fillna(0)
        comp.columns = ["_".join(k) for k in comp.columns]
        comp["diff_counts"] = comp[f"{t.label}_counts"] - comp[f"{c.label}_counts"]
        comp["diff_duration"] = comp[f"{t.label}_total_duration"] - comp[f"{c.label}_total_duration"]
        comp["counts_change_categories"] = np.where(
            comp["diff_counts"] > 0, "+", np.where(comp["diff_counts"] < 0, "-", "="))
        return comp

    @classmethod
    def ops_diff(cls, control, test, control_rank=None, test_rank=None, control_iteration=None,
                 test_iteration=None, device_type=DeviceType.ALL):
        """Names grouped as added, deleted, increased, decreased and unchanged (by counts).
        ``control`` may also be a DataFrame from ``compare_traces``."""
        pd = _pd()
        if isinstance(control, pd.DataFrame):
            df = control
        else:
            df = cls.compare_traces(control, test, control_rank, test_rank, control_iteration,
                                    test_iteration, device_type)
        cat = change_categories(df)
        return {c: df.index[cat == c].tolist() for c in CHANGE_CATEGORIES}

    @classmethod
    def visualize_counts_diff(cls, df, show_image=True, export_image_path=None):
        """Grouped bars of both traces' counts and their difference for the rows of ``df`` (a
        ``compare_traces`` DataFrame or a slice of it, as in the tutorial:
        ``df.sort_values(by="diff_counts", ascending=False).head(10)``). ``show_image`` shows the
        figure (in a notebook, or a browser) as Holistic Trace Analysis does; unlike HTA's, the
        plotly figure is also returned (and a notebook does not draw it twice).
        ``export_image_path`` ending in .html writes an interactive page; other suffixes write
        an image through kaleido."""
        return _bars(df, _series(df, "counts"),
                     dict(title_text="Ops Count Comparison", yaxis_title="Count"),
                     show_image, export_image_path)

    @classmethod
    def visualize_duration_diff(cls, df, show_image=True, export_image_path=None):
        """As ``visualize_counts_diff`` for the total durations (microseconds)."""
        return _bars(df, _series(df, "duration"),
                     dict(title_text="Ops Duration Comparison", yaxis_title="Total Duration (us)"),
                     show_image, export_image_path)


def _series(df, what):
    """(legend name, column) of the control, the test and the difference for counts/duration."""
    c, t = _labels(df)
    if what == "counts":
        return [(c, f"{c}_counts"), (t, f"{t}_counts"), ("Difference", "diff_counts")]
    return [(c, f"{c}_total_duration"), (t, f"{t}_total_duration"), ("Difference", "diff_duration")]


CHANGE_CATEGORIES = ("added", "deleted", "increased", "decreased", "unchanged")


def change_categories(df):
    """Each row's change in counts from the control to the test trace, one of
    ``CHANGE_CATEGORIES``: added (only in the test trace), deleted (only in the control trace),
    increased / decreased (in both, more / fewer calls), unchanged (in both, the same count).
    Every row of a ``compare_traces`` DataFrame is in exactly one category: the one definition
    ``ops_diff``, ``ember trace-diff``'s summary and its HTML report share."""
    labels = _labels(df)
    cc = df[f"{labels[0]}_counts"].to_numpy()
    tc = df[f"{labels[1]}_counts"].to_numpy()
    d = df["diff_counts"].to_numpy()
    return np.select([(cc == 0) & (tc > 0), (cc > 0) & (tc == 0), (cc > 0) & (tc > 0) & (d > 0),
                      (cc > 0) & (tc > 0) & (d < 0)], list(CHANGE_CATEGORIES[:4]),
                     default="unchanged").astype(object)


def summarize_changes(df):
    """The number of rows in each of ``CHANGE_CATEGORIES``, and ``total`` (their sum, the rows of
    ``df``), ``changed_counts`` (added + deleted + increased + decreased) and
    ``changed_duration_only`` (unchanged count, a different total duration)."""
    cat = change_categories(df)
    out = {c: int((cat == c).sum()) for c in CHANGE_CATEGORIES}
    out["total"] = len(df)
    out["changed_counts"] = len(df) - out["unchanged"]
    out["changed_duration_only"] = int(((cat == "unchanged") &
                                        (df["diff_duration"].to_numpy() != 0)).sum())
    return out


def _labels(df):
    labels = [c[: -len("_total_duration")] for c in df.columns if c.endswith("_total_duration")]
    if len(labels) < 2 or "diff_counts" not in df.columns:
        raise ValueError("expected a DataFrame from TraceDiff.compare_traces (columns {label}_counts, "
                         f"{{label}}_total_duration for two labels, diff_counts); got {list(df.columns)}")
    return labels[:2]


def _short_labels(names, width):
    """Names cut to ``width`` characters (``...`` at the end), kept distinct: two names that cut
    to the same text get `` [2]``, `` [3]``, ... (bars on a category axis with equal labels would
    be drawn as one)."""
    out, seen = [], {}
    for n in names:
        lab = n if len(n) <= width else n[: width - 3] + "..."
        k = seen.get(lab, 0) + 1
        seen[lab] = k
        out.append(lab if k == 1 else f"{lab} [{k}]")
    return out


def _plotly():
    try:
        import plotly.graph_objects as go
    except ImportError:  # pragma: no cover - plotly is an optional extra
        raise ImportError("TraceDiff's figures need plotly: pip install 'ember[trace]'") from None
    return go


def _bars(df, series, layout, show_image, export_image_path, horizontal=False, label_width=None):
    go = _plotly()
    names = [str(i) for i in df.index]
    labels = _short_labels(names, label_width) if label_width else names
    if horizontal:
        bars = [go.Bar(name=name, y=labels, x=df[col].tolist(), orientation="h", customdata=names,
                       hovertemplate="%{customdata}<br>" + name + ": %{x}<extra></extra>")
                for name, col in series]
    else:
        bars = [go.Bar(name=name, x=labels, y=df[col].tolist(), customdata=names,
                       hovertemplate="%{customdata}<br>" + name + ": %{y}<extra></extra>")
                for name, col in series]
    from ._figure import TraceDiffFigure
    fig = TraceDiffFigure(data=bars)
    fig.update_layout(barmode="group", **layout)
    if horizontal:
        fig.update_yaxes(autorange="reversed", automargin=True)  # the first row on top
    else:
        fig.update_xaxes(automargin=True)
    if show_image:
        fig.show()
        object.__setattr__(fig, "_ember_shown", True)
    if export_image_path:
        path = os.fspath(export_image_path)
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        if path.lower().endswith((".html", ".htm")):
            fig.write_html(path, include_plotlyjs=True)  # self-contained, opens offline
        else:
            try:
                import kaleido  # noqa: F401
            except ImportError:
                raise ImportError(f"export_image_path={path!r}: writing a static image needs kaleido "
                                  "(pip install kaleido); a path ending in .html writes an "
                                  "interactive page without it") from None
            fig.write_image(path)
    return fig
