"""Node-by-node profiling of a traced module: where does the time of a forward go?"""
import time

from ..interpreter import Interpreter


class ProfilingInterpreter(Interpreter):
    """Runs a GraphModule timing every node. ``run`` as often as you like, then
    ``summary()`` gives rows (op, node name, target, mean seconds, % of the mean total) sorted by
    time, and ``summary_table()`` / ``print_summary()`` the same as text."""

    def __init__(self, module, garbage_collect_values=True):
        from .._symbolic_trace import symbolic_trace
        from ..graph_module import GraphModule
        if not isinstance(module, GraphModule):
            module = symbolic_trace(module)
        super().__init__(module, garbage_collect_values)
        self.total_runtime_sec = []
        self.runtimes_sec = {}

    def run(self, *args, **kwargs):
        t0 = time.perf_counter()
        out = super().run(*args, **kwargs)
        self.total_runtime_sec.append(time.perf_counter() - t0)
        return out

    def run_node(self, n):
        t0 = time.perf_counter()
        out = super().run_node(n)
        self.runtimes_sec.setdefault(n, []).append(time.perf_counter() - t0)
        return out

    def summary(self):
        if not self.total_runtime_sec:
            raise RuntimeError("ProfilingInterpreter.summary(): run the interpreter at least once first")
        mean_total = sum(self.total_runtime_sec) / len(self.total_runtime_sec)
        rows = []
        for node, times in self.runtimes_sec.items():
            mean = sum(times) / len(times)
            target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__",
                                                                               str(node.target))
            rows.append((node.op, node.name, target, mean, 100.0 * mean / mean_total))
        rows.sort(key=lambda r: r[3], reverse=True)
        return rows

    def summary_table(self, top=None):
        rows = self.summary()
        if top is not None:
            rows = rows[:top]
        mean_total = sum(self.total_runtime_sec) / len(self.total_runtime_sec)
        head = ("Op type", "Node", "Target", "Mean time (ms)", "% of total")
        body = [(r[0], r[1], str(r[2]), f"{r[3] * 1e3:.3f}", f"{r[4]:.2f}") for r in rows]
        w = [max(len(x[i]) for x in body + [head]) for i in range(5)]
        line = "  ".join("-" * x for x in w)
        fmt = lambda r: "  ".join(c.ljust(w[i]) if i < 3 else c.rjust(w[i]) for i, c in enumerate(r))  # noqa: E731
        out = [fmt(head), line] + [fmt(r) for r in body] + [line,
               f"Total: {mean_total * 1e3:.3f} ms per run over {len(self.total_runtime_sec)} run(s)"]
        return "\n".join(out)

    def print_summary(self, top=None):
        print(self.summary_table(top))


def profile_nodes(module, *args, runs=3, top=None):
    """Trace ``module``, run it ``runs`` times node by node and print the per-node time table."""
    p = ProfilingInterpreter(module)
    for _ in range(runs):
        p.run(*args)
    p.print_summary(top)
    return p
