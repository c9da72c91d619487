"""The recording side of the profiler: a dispatch listener that timestamps every op, every
backward node the engine runs, every ``record_function`` range and every nn.Module call.

A raw record is a small list ``[name, cat, tid, start_ns, end_ns, shapes, mem, stack]``
appended in open order; nesting and self time are computed afterwards from the intervals
(``_events.build_events``), so recording stays a few attribute reads and two clock reads.
When no profiler is active nothing here runs: dispatch stays on its fast path.
"""
import os
import sys
import threading
import time

from .. import _dispatch as D

_perf_ns = time.perf_counter_ns
_get_tid = threading.get_native_id

# indices into a raw record
NAME, CAT, TID, T0, T1, SHAPES, MEM, STACK = range(8)

_active = []  # collectors currently recording (record_function and module hooks talk to these)

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _shape_of(a):
    if isinstance(a, D.Tensor):
        return list(a.shape)
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], D.Tensor):
        return [list(t.shape) if isinstance(t, D.Tensor) else [] for t in a]
    return []


def _user_stack(limit=8):
    """``file(line): function`` entries for the Python frames outside ember, innermost first."""
    out = []
    f = sys._getframe(2)
    while f is not None and len(out) < limit:
        fn = f.f_code.co_filename
        if not fn.startswith(_EMBER_DIR):
            out.append(f"{fn}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out



# registry ops whose PyTorch (ATen) name differs; every other op has PyTorch's name already
_ATEN_NAMES = {"max_dim": "max", "min_dim": "min", "squeeze_dim": "squeeze", "squeeze_dims": "squeeze",
               "clamp_tensor": "clamp", "fill": "fill_", "fill_tensor": "fill_", "copy": "copy_",
               "cross_entropy": "cross_entropy_loss", "upsample_nearest": "upsample_nearest2d",
               "conv2d_backward_input": "convolution_backward", "conv2d_backward_weight": "convolution_backward",
               "batch_norm_backward": "native_batch_norm_backward",
               "layer_norm_backward": "native_layer_norm_backward",
               "group_norm_backward": "native_group_norm_backward"}


class EventName(str):
    """An op event's name as PyTorch's profiler gives it (``aten::mul``), carrying ember's own op
    name (``.ember``), which the chrome trace keeps in the event's args."""
    __slots__ = ("ember",)


def op_event_name(op):
    name = EventName("aten::" + _ATEN_NAMES.get(op.name, op.name))
    name.ember = op.name
    return name

class _TLS(threading.local):
    def __init__(self):
        self.stack = []
        self.tid = _get_tid()


class Collector:
    """One recording session: a dispatch listener (``on_op``/``on_node``) plus the entry points
    used by ``record_function`` and the nn.Module hook."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False,
                 with_modules=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.records = []
        self.module_records = []   # [module, tid, start_ns, end_ns, enclosing module's record]
        self._tls = _TLS()
        self._mstack = _TLS()
        self._names = {}
        self._started_tracemalloc = False
        self.start_ns = None
        self.start_unix_ns = None
        self.end_ns = None
        self.active = False
        self._append = self.records.append
        self._closer = self._close_plain
        if profile_memory or with_stack or record_shapes:
            self.on_op = self._on_op_full
            self._closer = self._close

    # ------------------------------------------------------------------ lifecycle
    def start(self):
        if self.active:
            return
        if self.profile_memory:
            import tracemalloc
            if not tracemalloc.is_tracing():
                tracemalloc.start()
                self._started_tracemalloc = True
        self.start_unix_ns = time.time_ns()
        self.start_ns = _perf_ns()
        self.active = True
        _active.append(self)
        D.add_listener(self)
        self._hook_modules()

    def stop(self):
        if not self.active:
            return
        self.end_ns = _perf_ns()
        self.active = False
        D.remove_listener(self)
        _active.remove(self)
        self._unhook_modules()
        if self._started_tracemalloc:
            import tracemalloc
            tracemalloc.stop()
            self._started_tracemalloc = False
        # ranges still open (stop inside a record_function) end now
        for r in self.records:
            if r[T1] is None:
                r[T1] = self.end_ns

    # ------------------------------------------------------------------ recording
    def on_op(self, op, args, params):
        """The common case (no shapes, memory or stacks): a record and two clock reads."""
        name = self._names.get(op)
        if name is None:
            name = self._names[op] = op_event_name(op)
        tls = self._tls
        rec = [name, "cpu_op", tls.tid, 0, None, None, None, None]
        self._append(rec)
        tls.stack.append(rec)
        rec[3] = _perf_ns()
        return self._closer

    def _close_plain(self):
        t1 = _perf_ns()
        stack = self._tls.stack
        if stack:  # (empty: closed by another thread or after stop())
            rec = stack.pop()
            if rec[4] is None:
                rec[4] = t1

    def _on_op_full(self, op, args, params):
        name = self._names.get(op)
        if name is None:
            name = self._names[op] = op_event_name(op)
        shapes = [_shape_of(a) for a in args] if self.record_shapes else None
        return self._open(name, "cpu_op", shapes)

    def _open(self, name, cat, shapes=None):
        tls = self._tls
        rec = [name, cat, tls.tid, 0, None, shapes, None, None]
        if self.profile_memory:
            import tracemalloc
            rec[MEM] = tracemalloc.get_traced_memory()[0]
        if self.with_stack:
            rec[STACK] = _user_stack()
        self._append(rec)
        tls.stack.append(rec)
        rec[T0] = _perf_ns()
        return self._closer

    def _close(self):
        t1 = _perf_ns()
        stack = self._tls.stack
        if not stack:  # closed by another thread or after stop(): nothing to do
            return
        rec = stack.pop()
        if rec[T1] is None:
            rec[T1] = t1
        if self.profile_memory:
            import tracemalloc
            rec[MEM] = tracemalloc.get_traced_memory()[0] - rec[MEM]

    def on_node(self, node):
        # a leaf tensor stands for its AccumulateGrad node (the engine accumulates leaves directly)
        name = "torch::autograd::AccumulateGrad" if isinstance(node, D.Tensor) else node.name()
        return self._open(name, "cpu_op")

    def push_range(self, name, cat="user_annotation"):
        """Open a user range; the returned closer ends this very range even when ranges are not
        closed in the reverse order of opening (e.g. ``prof.step()`` inside a record_function)."""
        tls = self._tls
        rec = [name, cat, tls.tid, 0, None, None, None, None]
        self._append(rec)
        tls.stack.append(rec)
        rec[T0] = _perf_ns()

        def close():
            t1 = _perf_ns()
            stack = tls.stack
            for k in range(len(stack) - 1, -1, -1):
                if stack[k] is rec:
                    del stack[k]
                    break
            if rec[T1] is None:
                rec[T1] = t1
        return close

    # nn.Module calls, through nn's global forward (pre-)hooks while this collector records
    def _module_pre(self, module, args):
        st = self._mstack.stack
        rec = [module, self._mstack.tid, 0, None, st[-1] if st else None]
        st.append(rec)
        self.module_records.append(rec)
        rec[2] = _perf_ns()

    def _module_post(self, module, args, output):
        t1 = _perf_ns()
        st = self._mstack.stack
        for k in range(len(st) - 1, -1, -1):
            if st[k][0] is module:
                st[k][3] = t1
                del st[k:]  # records above it belong to forwards that raised
                break       # (not found: the call began before the profiler started)

    def _hook_modules(self):
        mod = sys.modules.get("ember.nn.modules.module")
        if mod is None:
            try:
                from ..nn.modules import module as mod
            except ImportError:  # pragma: no cover - a build without nn
                return
        self._module_handles = (mod.register_module_forward_pre_hook(self._module_pre),
                                mod.register_module_forward_hook(self._module_post))

    def _unhook_modules(self):
        for h in getattr(self, "_module_handles", ()):
            h.remove()
        self._module_handles = ()
