"""``ember trace-diff CONTROL TEST``: compare two trace folders from the command line.

Prints the ops and kernels whose counts or total time changed most, and optionally writes the
whole comparison as CSV and an interactive HTML report (counts and durations bar charts).
Also runnable as ``python -m ember.trace_analysis``.
"""
import argparse
import sys

from ._reader import TraceFormatError
from ._trace_diff import DeviceType, TraceDiff, LabeledTrace


def _parser(prog="ember trace-diff"):
    p = argparse.ArgumentParser(prog=prog, description="Compare the ops and kernels of two profiler "
                                "trace folders (ember or PyTorch/Kineto traces, one file per rank).")
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
    p.add_argument("--top", type=int, default=20, help="rows to print (default 20; 0: all changes)")
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
            v = r[c]
            cells.append(f"{int(v):+d}" if c.startswith("diff") and float(v).is_integer() else
                         f"{v:+.1f}" if c.startswith("diff") else
                         f"{int(v)}" if float(v).is_integer() else f"{v:.1f}")
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


def write_html_report(df, path, title="ember trace diff"):
    labels = [c[: -len("_total_duration")] for c in df.columns if c.endswith("_total_duration")][:2]
    top = top_changes(df, 40)
    if top.empty:
        top = df.head(40)
    f1 = TraceDiff.visualize_counts_diff(top, show_image=False)
    f2 = TraceDiff.visualize_duration_diff(top, show_image=False)
    import html
    body = (f"<h1>{html.escape(title)}</h1><p>{html.escape(labels[0])} vs {html.escape(labels[1])}: "
            f"{len(df)} names, {int((df['diff_counts'] != 0).sum())} with changed counts.</p>"
            + f1.to_html(full_html=False, include_plotlyjs=True)
            + f2.to_html(full_html=False, include_plotlyjs=False)
            + df.to_html())
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                f"</head><body>{body}</body></html>")


def main(argv=None, prog="ember trace-diff"):
    args = _parser(prog).parse_args(argv)
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
    n_changed = int(((df["diff_counts"] != 0) | (df["diff_duration"] != 0)).sum())
    print(f"{len(df)} ops/kernels compared; {n_changed} changed "
          f"({int((df['diff_counts'] > 0).sum())} more frequent, {int((df['diff_counts'] < 0).sum())} "
          f"less frequent in the test trace)")
    if len(top):
        print(f"top {len(top)} changes (counts, then total duration in us):")
        print(format_table(top, ["Control", "Test"]))
    if args.csv:
        df.to_csv(args.csv)
        print(f"wrote {args.csv}")
    if args.html:
        write_html_report(df, args.html)
        print(f"wrote {args.html}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
