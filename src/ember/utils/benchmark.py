"""ember.utils.benchmark: ``Timer``, ``Measurement`` and ``Compare`` with PyTorch's interface.

``Timer(stmt, setup, globals=...)`` compiles the statement once (the standard library's
``timeit`` machinery: the loop runs in compiled code, not through a Python callback) and returns
``Measurement`` objects that keep the raw block times; ``Compare`` lays several out as a table.
"""
import math
import statistics
import timeit as _timeit
from collections import OrderedDict

__all__ = ["Timer", "Measurement", "Compare", "select_unit", "trim_sigfig"]

_UNITS = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))


def select_unit(t):
    """The unit to print a time ``t`` (seconds) in, and its scale."""
    if not t or not math.isfinite(t) or t <= 0:
        return "s", 1.0
    e = int(math.floor(math.log10(t) / 3))
    return {-3: _UNITS[0], -2: _UNITS[1], -1: _UNITS[2]}.get(e, _UNITS[3] if e >= 0 else _UNITS[0])


def trim_sigfig(x, n):
    """Round ``x`` to ``n`` significant figures."""
    if x == 0 or not math.isfinite(x):
        return x
    magnitude = int(math.floor(math.log10(abs(x))))
    return round(x, n - 1 - magnitude)


def _fmt(x, n=3):
    """A value with ``n`` significant figures and no more decimals than that needs."""
    if x == 0 or not math.isfinite(x):
        return f"{x}"
    magnitude = int(math.floor(math.log10(abs(x))))
    decimals = max(0, n - 1 - magnitude)
    return f"{trim_sigfig(x, n):.{decimals}f}"


class Measurement:
    """The timings of one statement: ``raw_times`` are seconds per block of ``number_per_run``
    runs; ``times`` are seconds per run."""

    def __init__(self, number_per_run, raw_times, task_spec=None, metadata=None):
        self.number_per_run = int(number_per_run)
        self.raw_times = list(raw_times)
        self.task_spec = task_spec or _TaskSpec("pass")
        self.metadata = metadata
        self.times = [t / self.number_per_run for t in self.raw_times]

    # task fields, as attributes of the measurement (as in PyTorch)
    def __getattr__(self, name):
        if name in ("stmt", "setup", "label", "sub_label", "description", "env", "num_threads"):
            return getattr(self.task_spec, name)
        raise AttributeError(name)

    @property
    def title(self):
        return self.task_spec.title

    @property
    def mean(self):
        return statistics.fmean(self.times)

    @property
    def median(self):
        return statistics.median(self.times)

    def _quantile(self, q):
        s = sorted(self.times)
        if len(s) == 1:
            return s[0]
        pos = q * (len(s) - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    @property
    def iqr(self):
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def significant_figures(self):
        """How many figures of the median the spread supports (1 to 4)."""
        n = len(self.times)
        if n < 2 or self.median == 0:
            return 4
        half_ci = 1.645 * statistics.stdev(self.times) / math.sqrt(n)
        rel = half_ci / self.median
        if rel <= 0:
            return 4
        return int(max(1, min(4, math.floor(-math.log10(rel)) + 1)))

    @property
    def has_warnings(self):
        return len(self.times) > 1 and self.median > 0 and self.iqr / self.median > 0.1

    def meets_confidence(self, threshold=0.1):
        return len(self.times) > 1 and self.median > 0 and self.iqr / self.median < threshold

    @staticmethod
    def merge(measurements):
        """Group measurements of the same task and pool their per-run times."""
        groups = OrderedDict()
        for m in measurements:
            groups.setdefault(m.task_spec, []).append(m)
        out = []
        for spec, ms in groups.items():
            times = [t for m in ms for t in m.times]
            out.append(Measurement(1, times, spec))
        return out

    def __repr__(self):
        unit, scale = select_unit(self.median)
        lines = [f"<ember.utils.benchmark.Measurement object at {hex(id(self))}>",
                 self.task_spec.summarize()]
        n = len(self.times)
        if n == 1:  # two decimals in the chosen unit, as PyTorch prints them
            lines.append(f"  {self.median / scale:.2f} {unit}")
        else:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._quantile(0.25) / scale:.2f} to {self._quantile(0.75) / scale:.2f})")
        threads = self.task_spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}")
        if self.has_warnings:
            lines.append(f"  WARNING: Interquartile range is {100 * self.iqr / self.median:.1f}% of the "
                         "median measurement.\n           This could indicate system fluctuation.")
        return "\n".join(lines)


class _TaskSpec:
    __slots__ = ("stmt", "setup", "label", "sub_label", "description", "env", "num_threads")

    def __init__(self, stmt, setup="pass", label=None, sub_label=None, description=None, env=None,
                 num_threads=1):
        self.stmt = stmt if isinstance(stmt, str) else getattr(stmt, "__name__", repr(stmt))
        self.setup = setup if isinstance(setup, str) else getattr(setup, "__name__", repr(setup))
        self.label = label
        self.sub_label = sub_label
        self.description = description
        self.env = env
        self.num_threads = num_threads

    def _key(self):
        return tuple(getattr(self, s) for s in self.__slots__)

    def __eq__(self, other):
        return isinstance(other, _TaskSpec) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    @property
    def title(self):
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" + \
            "\n".join("  " + ln for ln in self.stmt.splitlines())

    def summarize(self):
        """The title (label and sub_label, or the statement), then the description, as PyTorch
        prints them: a labelled task does not repeat its statement."""
        parts = [self.title]
        if self.description:
            parts.append(self.description)
        return "\n".join(p for p in parts if p)


class Timer:
    """Time a statement: ``Timer("f(x)", setup="...", globals={"f": f, "x": x})``.

    ``timeit(number)`` runs one block; ``repeat(repeat, number)`` several; ``blocked_autorange``
    picks a block size whose timer overhead is negligible and runs blocks for at least
    ``min_run_time`` seconds; ``adaptive_autorange`` keeps running until the interquartile range
    is below ``threshold`` of the median (or ``max_run_time`` passes)."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=_timeit.default_timer,
                 globals=None, label=None, sub_label=None, description=None, env=None,
                 num_threads=1, language="python"):
        if str(language).lower() not in ("python", "language.python"):
            raise ValueError(f"Timer: only Python statements are supported, got language={language!r}")
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"Timer: num_threads must be a positive integer, got {num_threads!r}")
        if isinstance(stmt, str) and not stmt.strip():
            stmt = "pass"
        self._timer_fn = timer
        self._globals = dict(globals) if globals is not None else {}
        if global_setup:
            exec(global_setup, self._globals)
        self._task_spec = _TaskSpec(stmt, setup, label, sub_label, description, env, num_threads)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)

    def _timeit(self, number):
        # number=0 times the empty loop: the timer's own overhead
        return self._timer.timeit(number=max(int(number), 0))

    def timeit(self, number=1000000):
        """One block of ``number`` runs (after one warm-up run of up to 100 iterations)."""
        self._timeit(number=max(int(number // 100), 2))
        return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat=5, number=1000000):
        """``repeat`` blocks of ``number`` runs each, as one Measurement."""
        if repeat < 1 or number < 1:
            raise ValueError(f"Timer.repeat: repeat and number must be positive, got {repeat}, {number}")
        return Measurement(number, [self._timeit(number) for _ in range(repeat)], self._task_spec)

    def _estimate_block_size(self, min_run_time):
        overhead = statistics.median(self._timeit(0) for _ in range(5))
        number = 1
        while True:
            t = self._timeit(number)
            if (t > 0 and overhead / t <= 1e-4 and t >= min_run_time / 1000) or t > min_run_time:
                return number
            if number * 10 > 2147483647:
                return number
            number *= 10

    def _blocks(self, number, stop, callback):
        times = []
        total = 0.0
        while True:
            t = self._timeit(number)
            total += t
            if callback is not None:
                callback(number, t)
            times.append(t)
            if stop(times, total):
                return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        number = self._estimate_block_size(min_run_time)
        times = self._blocks(number, lambda ts, total: total >= min_run_time, callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0,
                           callback=None):
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times, total):
            if total < min_run_time or len(times) < 4:
                return total > max_run_time
            m = Measurement(number, times, self._task_spec)
            return m.meets_confidence(threshold) or total > max_run_time
        times = self._blocks(number, stop, callback)
        return Measurement(number, times, self._task_spec)


class Compare:
    """A table of measurements: one block per label, rows by sub_label (or statement), columns
    by description, medians in one unit per block."""

    def __init__(self, results):
        self._results = list(results)
        self._trim = False
        self._colorize = False
        self._highlight = False

    def trim_significant_figures(self):
        self._trim = True

    def colorize(self, rowwise=False):
        self._colorize = True

    def highlight_warnings(self):
        self._highlight = True

    def extend_results(self, results):
        self._results.extend(results)

    def __str__(self):
        return "\n".join(self._render())

    def print(self):
        print(str(self))

    def _render(self):
        """PyTorch's layout: a block per label, columns by description, rows by sub_label (or
        statement) grouped under "N threads:" lines, values in one unit and with one number of
        decimals per block (two significant figures of its smallest value; with
        trim_significant_figures, each value rounded to the figures its spread supports)."""
        blocks = OrderedDict()
        for m in Measurement.merge(self._results):
            blocks.setdefault(m.task_spec.label, []).append(m)
        out = []
        for label, ms in blocks.items():
            cols = list(OrderedDict.fromkeys(m.task_spec.description or "" for m in ms))
            threads = sorted(OrderedDict.fromkeys(m.task_spec.num_threads for m in ms))
            rows = list(OrderedDict.fromkeys(m.task_spec.sub_label or m.task_spec.stmt for m in ms))
            unit, scale = select_unit(min(m.median for m in ms))
            figures = min(m.significant_figures for m in ms) if self._trim else 2
            smallest = min(m.median for m in ms) / scale
            decimals = max(0, figures - 1 - int(math.floor(math.log10(smallest)))) if smallest > 0 else 0
            cells = {}
            for m in ms:
                v = m.median / scale
                if self._trim:
                    v = trim_sigfig(v, m.significant_figures)
                s = f"{v:.{decimals}f}"
                if self._highlight and m.has_warnings:
                    s += f" (! {100 * m.iqr / m.median:.0f}%)"
                cells[(m.task_spec.num_threads, m.task_spec.sub_label or m.task_spec.stmt,
                       m.task_spec.description or "")] = s
            row_w = max([len(r) for r in rows] + [1]) + 8
            col_ws = [max([len(c)] + [len(v) for k, v in cells.items() if k[2] == c]) + 4 for c in cols]
            head = (" " * row_w + "|" + "|".join(f"{c:^{w}}" for c, w in zip(cols, col_ws))).rstrip()
            title = f" {label} " if label else " "
            out.append("[" + title.center(len(head) - 2, "-") + "]")
            out.append(head)
            for nt in threads:
                lead = f"{nt} threads: "
                out.append(lead + "-" * (len(head) - len(lead)))
                for r in rows:
                    if not any(k[0] == nt and k[1] == r for k in cells):
                        continue
                    out.append(f"      {r:<{row_w - 6}}" + "|" + "|".join(
                        f"{cells.get((nt, r, c), ''):>{w - 2}}  " for c, w in zip(cols, col_ws)))
            name = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds"}[unit]
            out.append("")
            out.append(f"Times are in {name} ({unit}).")
            out.append("")
        return out
