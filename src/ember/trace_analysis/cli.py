"""``ember trace-diff CONTROL TEST``: compare two trace folders from the command line.

Prints the ops and kernels whose counts or total time changed most, and optionally writes the
whole comparison as CSV and an interactive HTML report (counts and durations bar charts).
Also runnable as ``python -m ember.trace_analysis``.
"""
import argparse
import os
import sys

from ._reader import TraceFormatError
from ._trace_diff import DeviceType, LabeledTrace, TraceDiff, _labels, change_categories, summarize_changes


def _parser(prog="ember trace-diff"):
    p = argparse.ArgumentParser(prog=prog, description="Compare the ops and kernels of two profiler "
                                "trace folders (ember or PyTorch/Kineto traces, one file per rank, "
                                "with ProfilerStep#N annotations). Needs pandas and, for --html, "
                                "plotly: pip install 'ember[trace]'.")
    p.add_argument("control", help="the control trace folder")
    p.add_argument("test", help="the test trace folder")
    p.add_argument("--control-rank", type=int, nargs="+", help="rank(s) of the control trace "
                   "(default: its first rank)")
    p.add_argument("--test-rank", type=int, nargs="+", help="rank(s) of the test trace")
    p.add_argument("--control-iteration", type=int, nargs="+", help="iteration(s) (ProfilerStep#N) "
                   "of the control trace (default: its first)")
    p.add_argument("--test-iteration", type=int, nargs="+", help="iteration(s) of the test trace")
    p.add_argument("--device", choices=("all", "cpu", "gpu"), default="all",
                   help="compare CPU ops, GPU kernels or both (default: all)")
    p.add_argument("--short-names", action="store_true", help="drop template and argument lists "
                   "from names")
    p.add_argument("--top", type=int, default=20, help="rows to print and, in the --html report, "
                   "to chart (default 20; 0: all changes, up to 50 in the charts)")
    p.add_argument("--html", metavar="REPORT.html", help="write an interactive HTML report")
    p.add_argument("--csv", metavar="DIFF.csv", help="write the whole comparison as CSV")
    return p


def _one(v):
    return None if v is None else (v[0] if len(v) == 1 else list(v))


def top_changes(df, n=20):
    """The rows that changed, by |diff_counts| then |diff_duration|, largest first."""
    changed = df[(df["diff_counts"] != 0) | (df["diff_duration"] != 0)]
    order = changed.assign(_c=changed["diff_counts"].abs(), _d=changed["diff_duration"].abs()) \
        .sort_values(["_c", "_d"], ascending=False, kind="stable")
    order = order.drop(columns=["_c", "_d"])
    return order if not n else order.head(n)


def summary_line(df):
    """One sentence of counts that add up, from ``change_categories`` (the definition ``ops_diff``
    uses): total = changed counts + same count; changed counts = added + deleted + more + less."""
    s = summarize_changes(df)
    return (f"{s['total']} ops/kernels compared: {s['changed_counts']} with changed counts "
            f"({s['added']} added, {s['deleted']} deleted, {s['increased']} more frequent, "
            f"{s['decreased']} less frequent in the test trace), {s['unchanged']} with the same count "
            f"({s['changed_duration_only']} of them with a changed total duration)")


def _num(v, signed=False):
    """Integers as integers (counts, whole microseconds), other numbers with one decimal."""
    v = float(v)
    if v.is_integer():
        return f"{int(v):+d}" if signed else f"{int(v)}"
    return f"{v:+.1f}" if signed else f"{v:.1f}"


_WORDS = {"added": "added", "deleted": "deleted", "increased": "more frequent",
          "decreased": "less frequent", "unchanged": "same count"}


def format_table(df, labels, name_width=60):
    cols = [("Name", None), (f"{labels[0]} #", f"{labels[0]}_counts"), (f"{labels[1]} #", f"{labels[1]}_counts"),
            ("diff #", "diff_counts"), (f"{labels[0]} us", f"{labels[0]}_total_duration"),
            (f"{labels[1]} us", f"{labels[1]}_total_duration"), ("diff us", "diff_duration"), ("", None)]
    rows = []
    for name, r in df.iterrows():
        name = str(name)
        if len(name) > name_width:
            name = name[: name_width - 3] + "..."
        cells = [name]
        for _, c in cols[1:-1]:
            cells.append(_num(r[c], signed=c.startswith("diff")))
        cells.append(r["counts_change_categories"])
        rows.append(cells)
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, (h, _) in enumerate(cols)]
    line = "  ".join("-" * w for w in widths)
    out = [line, "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, ((h, _), w) in
                           enumerate(zip(cols, widths))), line]
    for row in rows:
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    out.append(line)
    return "\n".join(out)


_CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 24px auto;
       max-width: 1400px; padding: 0 24px; color: #222; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 17px; margin: 28px 0 6px; }
p { margin: 4px 0; line-height: 1.45; } .note { color: #666; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; width: 100%; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e4e4e4; }
th { background: #f4f4f4; position: sticky; top: 0; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
td { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { font-family: ui-monospace, Menlo, Consolas, monospace; white-space: normal;
          word-break: break-all; max-width: 640px; }
td.cat { text-align: left; } .pos { color: #b03a2e; } .neg { color: #1e7b34; }
"""


def _chart(df, what, n, axis_title):
    """Horizontal grouped bars of the ``n`` rows with the largest change in ``what``, the
    largest on top, labels cut to a readable width (full names on hover)."""
    from ._trace_diff import _bars, _series
    col = "diff_counts" if what == "counts" else "diff_duration"
    rows = df[df[col] != 0]
    rows = rows.assign(_k=rows[col].abs()).sort_values("_k", ascending=False, kind="stable") \
        .drop(columns="_k").head(n)
    if rows.empty:
        return None, 0
    layout = dict(height=150 + 30 * len(rows), bargap=0.25, font=dict(size=12),
                  legend=dict(orientation="h", yref="container", y=1.0, yanchor="top", x=0.0,
                              xanchor="left"),
                  margin=dict(l=10, r=30, t=100, b=20))
    fig = _bars(rows, _series(rows, what), layout, False, None, horizontal=True, label_width=60)
    # the value axis on top, where the reader starts, and again at the bottom of a tall chart
    fig.update_xaxes(title_text=axis_title, side="top", showline=True, zeroline=True,
                     zerolinecolor="#888", mirror="allticks", ticks="outside")
    return fig, len(rows)


def write_html_report(df, path, title="ember trace diff", top=25, sources=None):
    """A self-contained page: the summary line, the ``top`` largest count and duration changes as
    horizontal bars, and a table of every name, sorted by the size of its change. ``sources``:
    what the two labels stand for (the trace folders and selections), shown under the title."""
    import html
    labels = _labels(df)
    cat = change_categories(df)
    parts = [f"<h1>{html.escape(title)}</h1>"]
    for label, src in zip(labels, sources or ()):
        parts.append(f"<p class='note'><b>{html.escape(label)}</b>: {html.escape(str(src))}</p>")
    parts.append(f"<p>{html.escape(summary_line(df))}.</p>")
    plotly_js = True
    fig, k = _chart(df, "counts", top, "calls (Difference: test minus control)")
    parts.append(f"<h2>The {k} largest changes in counts</h2>")
    if fig is None:
        parts.append("<p>No name changed its count.</p>")
    else:
        parts.append(fig.to_html(full_html=False, include_plotlyjs=plotly_js))
        plotly_js = False
    steps = df.index.astype(str).str.startswith("ProfilerStep#")
    fig, k = _chart(df[~steps], "duration", top,
                    "total duration, us (Difference: test minus control)")
    parts.append(f"<h2>The {k} largest changes in total duration</h2><p class='note'>ProfilerStep "
                 "ranges (whole iterations) left out</p>")
    if fig is None:
        parts.append("<p>No op or kernel changed its total duration.</p>")
    else:
        parts.append(fig.to_html(full_html=False, include_plotlyjs=plotly_js))
    order = df.assign(_c=df["diff_counts"].abs(), _d=df["diff_duration"].abs(), _cat=cat) \
        .sort_values(["_c", "_d"], ascending=False, kind="stable")
    head = ["Name", f"{labels[0]} #", f"{labels[1]} #", "diff #", f"{labels[0]} us",
            f"{labels[1]} us", "diff us", "change"]
    cols = [f"{labels[0]}_counts", f"{labels[1]}_counts", "diff_counts",
            f"{labels[0]}_total_duration", f"{labels[1]}_total_duration", "diff_duration"]
    rows = []
    for name, r in order.iterrows():
        cells = [f"<td class='name'>{html.escape(str(name))}</td>"]
        for c in cols:
            signed = c.startswith("diff")
            cls = (" class='pos'" if r[c] > 0 else " class='neg'" if r[c] < 0 else "") if signed else ""
            cells.append(f"<td{cls}>{_num(r[c], signed)}</td>")
        cells.append(f"<td class='cat'>{_WORDS[r['_cat']]}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    parts.append(f"<h2>All {len(df)} names, by the size of the change (counts, then duration)</h2>")
    parts.append("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head)
                 + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>")


def _describe(args, which):
    rank, it = getattr(args, f"{which}_rank"), getattr(args, f"{which}_iteration")
    return (f"{getattr(args, which)} ({'the first rank' if rank is None else 'rank ' + ', '.join(map(str, rank))}"
            f", {'the first iteration' if it is None else 'iteration ' + ', '.join(map(str, it))}, "
            f"{ {'all': 'CPU ops and GPU kernels', 'cpu': 'CPU ops', 'gpu': 'GPU kernels'}[args.device]}"
            f"{', short names' if args.short_names else ''})")


def _integers(df):
    """The comparison with whole-number columns as integers (for CSV: ``2``, not ``2.0``)."""
    out = df.copy()
    for c in out.columns:
        v = out[c]
        if v.dtype.kind == "f" and v.notna().all() and (v == v.round()).all():
            out[c] = v.astype("int64")
    return out


def _missing_extra(prog, html):
    """One line naming the ``ember[trace]`` extra when pandas (or, for --html, plotly) is absent."""
    need = ["pandas"] + (["plotly"] if html else [])
    missing = []
    for mod in need:
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if not missing:
        return None
    return (f"{prog}: error: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not "
            f"installed; trace-diff needs the 'trace' extra: pip install 'ember[trace]' "
            "(pandas, plotly)")


def main(argv=None, prog="ember trace-diff"):
    try:
        return _main(argv, prog)
    except BrokenPipeError:  # `ember trace-diff A B | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv, prog):
    args = _parser(prog).parse_args(argv)
    missing = _missing_extra(prog, bool(args.html))
    if missing:
        print(missing, file=sys.stderr)
        return 1
    if args.top < 0:
        print(f"{prog}: error: --top must be 0 (all changes) or positive, got {args.top}",
              file=sys.stderr)
        return 2
    try:
        control = LabeledTrace("Control", args.control)
        test = LabeledTrace("Test", args.test)
        df = TraceDiff.compare_traces(
            control, test, _one(args.control_rank), _one(args.test_rank),
            _one(args.control_iteration), _one(args.test_iteration),
            {"all": DeviceType.ALL, "cpu": DeviceType.CPU, "gpu": DeviceType.GPU}[args.device],
            use_short_name=args.short_names)
    except (TraceFormatError, ValueError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1  # a data error (usage errors exit with 2 through argparse)
    top = top_changes(df, args.top)
    print(summary_line(df))
    if len(top):
        print(f"top {len(top)} changes (counts, then total duration in us):")
        print(format_table(top, ["Control", "Test"]))
    for path, write in ((args.csv, lambda p: _integers(df).to_csv(p)),
                        (args.html, lambda p: write_html_report(
                            df, p, top=args.top or 50,
                            sources=[_describe(args, "control"), _describe(args, "test")]))):
        if not path:
            continue
        try:
            write(path)
        except OSError as e:
            print(f"{prog}: error: cannot write {path}: {e.strerror or e}", file=sys.stderr)
            return 1
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
