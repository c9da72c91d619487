"""ember.utils.benchmark: Timer's figures agree with plain perf_counter loops; Measurement's
statistics and text; Compare's table. Tolerances are generous: timing is never a strict assert."""
import time

import pytest

from ember.utils import benchmark
from ember.utils.benchmark import Compare, Measurement, Timer


def _work(n=2000):
    s = 0
    for i in range(n):
        s += i * i
    return s


def _perf_counter_per_call(fn, number, repeats=7):
    """The best of several perf_counter loops (the minimum resists interference from other
    processes on a shared machine)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


class _VirtualClock:
    """A clock that only moves when the timed statement says so: Timer's arithmetic (loops, blocks,
    per-call division) is then checked exactly, whatever the load on the machine."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def work(self, cost=1.5e-3):
        self.now += cost


def test_timer_agrees_with_perf_counter_style_loops_on_a_virtual_clock():
    clock = _VirtualClock()
    t0 = clock()
    for _ in range(50):
        clock.work()
    ref = (clock() - t0) / 50  # the plain loop's figure, on the same clock
    t = Timer("clock.work()", globals={"clock": clock}, timer=clock)
    r = t.repeat(repeat=7, number=50)
    assert len(r.times) == 7 and r.number_per_run == 50
    assert r.times == pytest.approx([ref] * 7, rel=1e-9)
    m = t.timeit(50)
    assert m.number_per_run == 50 and m.median == pytest.approx(ref, rel=1e-9)
    b = t.blocked_autorange(min_run_time=0.1)
    assert sum(b.raw_times) >= 0.1
    assert b.median == pytest.approx(ref, rel=1e-9) and b.mean == pytest.approx(ref, rel=1e-9)


def test_timer_on_the_real_clock_never_under_reports():
    """A statement that takes at least 2 ms by construction: Timer may see more under load,
    never less (no ratio of two noisy timings is asserted)."""
    t = Timer("time.sleep(0.002)", globals={"time": time})
    r = t.repeat(repeat=3, number=5)
    assert 0.002 * 0.99 <= min(r.times) < 1.0
    b = t.blocked_autorange(min_run_time=0.05)
    assert 0.002 * 0.99 <= min(b.times) < 1.0
    assert _perf_counter_per_call(lambda: time.sleep(0.002), 5, repeats=3) >= 0.002 * 0.99


def test_callable_statement_setup_and_globals():
    calls = []
    m = Timer(lambda: calls.append(1)).timeit(10)
    assert len(calls) >= 10 and m.number_per_run == 10
    m = Timer("y = x * 2", setup="x = 21", num_threads=2).timeit(5)
    assert m.num_threads == 2 and m.median >= 0


def test_adaptive_autorange_stops():
    m = Timer("_work(200)", globals={"_work": _work}).adaptive_autorange(threshold=0.5, max_run_time=1.0)
    assert len(m.times) >= 1 and m.median > 0
    assert sum(m.raw_times) < 3.0


def test_measurement_statistics_and_repr():
    m = Measurement(10, [0.010, 0.020, 0.030, 0.040], benchmark._TaskSpec("f(x)", label="lbl"))
    assert m.times == pytest.approx([0.001, 0.002, 0.003, 0.004])
    assert m.mean == pytest.approx(0.0025) and m.median == pytest.approx(0.0025)
    assert m.iqr == pytest.approx(0.0015)  # linear-interpolated quartiles 0.00175 .. 0.00325
    text = repr(m)
    assert "Median: 2.50 ms" in text and "4 measurements, 10 runs per measurement, 1 thread" in text
    single = Measurement(500, [0.715], benchmark._TaskSpec("f(x)"))
    text = repr(single)
    assert text.splitlines()[-2:] == ["  1.43 ms", "  1 measurement, 500 runs , 1 thread"]


def test_compare_table():
    spec = benchmark._TaskSpec
    ms = [Measurement(1, [1e-3, 1e-3], spec("a", label="ops", sub_label="small", description="loop")),
          Measurement(1, [2e-4, 2e-4], spec("b", label="ops", sub_label="small", description="vmap")),
          Measurement(1, [5e-3, 5e-3], spec("a", label="ops", sub_label="big", description="loop"))]
    text = str(Compare(ms))
    lines = text.splitlines()
    assert lines[0].startswith("[") and " ops " in lines[0]
    assert "loop" in lines[1] and "vmap" in lines[1]
    assert lines[2].startswith("1 threads: ---")
    assert lines[3].split() == ["small", "|", "1000", "|", "200"]
    assert lines[4].split() == ["big", "|", "5000", "|"]
    assert "Times are in microseconds (us)." in text


def test_compare_layout_matches_pytorch(torch):
    """The same measurements printed by ember's and PyTorch's Compare give the same table."""
    import torch.utils.benchmark as tb
    rows = [("add", "[10]", 1, [4.71e-6, 4.7e-6]), ("mul", "[10]", 1, [6.3e-6, 6.31e-6]),
            ("add", "[1000]", 1, [10.7e-6, 10.71e-6]), ("mul", "[1000]", 2, [7.7e-6, 7.69e-6])]

    def measurements(mod, spec_cls):
        return [mod.Measurement(1, t, spec_cls("x + 1", "pass", label="ops", sub_label=s, description=d, num_threads=n))
                for d, s, n, t in rows]
    ours = str(Compare(measurements(benchmark, benchmark._TaskSpec)))
    theirs = str(tb.Compare(measurements(tb, tb.utils.common.TaskSpec)))
    assert [ln.rstrip() for ln in ours.splitlines()] == [ln.rstrip() for ln in theirs.splitlines()]


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_threads"):
        Timer("pass", num_threads=0)
    with pytest.raises(ValueError, match="repeat"):
        Timer("pass").repeat(0, 10)
