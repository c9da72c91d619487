"""ember's intra-op thread pool: large kernels split over every core, as PyTorch's are.

NumPy runs each elementwise, reduction and copy kernel on one core (only its BLAS uses more); the
GIL is released inside those kernels, so a kernel cut into independent pieces runs on several
Python threads at once. ``parallel_for(n, fn)`` cuts ``range(n)`` into one contiguous chunk per
thread and runs ``fn(lo, hi)`` on each, the caller's thread taking the first; the helpers below
cut arrays along one axis (the outermost one long enough) into views and run a ufunc or a copy on
each piece. Cutting never changes a value: elementwise work is the same per element wherever it
runs, and reductions are cut only across independent output rows, never inside one sum, so every
result is bit for bit the one-thread result.

The pool has ``get_num_threads() - 1`` workers, started on first use. Its size follows
``ember.set_num_threads`` (which keeps NumPy's and SciPy's OpenBLAS at the same count, as before)
and starts from ``OMP_NUM_THREADS`` when that is a positive integer (else the BLAS's count, which
follows the CPU count), as PyTorch's intra-op pool does. Work under ``GRAIN`` elements per thread
runs on the caller alone: waking a thread and handing the GIL back and forth cost tens of
microseconds, more than a small kernel (PyTorch's grain is 32768 elements for its ~1 us thread
wake-ups; ember's is far larger for Python's).
Nested calls (from a worker, or while another thread uses the pool) run serially."""
import contextlib
import os
import threading
import time
from queue import SimpleQueue

# Elements of work per thread below which a kernel stays on the calling thread. What a split costs is
# the hand-overs: waking the worker, and the GIL passed back and forth at every NumPy call the two
# threads make (each pass of the GIL to a thread asleep on it is a futex wake-up). On the 2-core
# AMD EPYC VM these measure 20-90 us a round trip, and splitting each kernel of real steps both ways
# in one process (float32, two threads against one) gave: a copy of 295K elements 0.41x, of 1.2M
# 0.97-1.2x; a multiply of 524K 0.63x, of 1.2M 0.83x; batch norm's statistics and backward (a dozen
# calls a piece) on 524K 0.28-0.31x; SGD's update on 295K / 1.2M / 2.4M 0.62x / 0.89x / 1.11x;
# GELU (20 calls a piece) on 262K / 1M / 4M 0.8x / 1.0x / 1.46x. So a kernel splits from 2M
# elements of work (max pooling on 737K outputs, 1.4x, was the one kernel found to gain below).
GRAIN = 1 << 20
MIN_SIZE = 2 * GRAIN  # the one size check hot paths make before asking for threads

_threads = [None]
_NCPU = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
try:
    _HZ = float(os.sysconf("SC_CLK_TCK"))
except (AttributeError, ValueError, OSError):
    _HZ = 100.0
_pool = [None]
_lock = threading.Lock()


def _env_threads():
    v = os.environ.get("OMP_NUM_THREADS", "").strip()
    try:
        n = int(v)
    except ValueError:
        return None
    return n if n > 0 else None


def get_num_threads():
    n = _threads[0]
    if n is None:
        n = _env_threads()
        if n is None:
            from . import _blas
            n = max(1, _blas.get_num_threads())
        _threads[0] = n
    return n


def set_num_threads(n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n!r}")
    from . import _blas
    _blas.set_num_threads(n)
    with _lock:
        _threads[0] = n
        _blas_base[0] = n
        pool = _pool[0]
        if pool is not None and pool.size != n - 1:
            _pool[0] = None
            pool.close()


class _Job:
    """One parallel_for: chunks claimed from a shared counter by whoever is free (the caller
    first), so a worker the OS has not scheduled yet (a busy machine) delays nothing: the caller
    takes its chunks, and waits only for a chunk a worker has started."""
    __slots__ = ("fn", "spans", "next", "left", "lock", "finished", "error")

    def __init__(self, fn, spans):
        self.fn, self.spans = fn, spans
        self.next = iter(range(len(spans))).__next__  # (claiming is atomic under the GIL)
        self.left = len(spans)
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.error = None

    def work(self):
        spans, fn, claim = self.spans, self.fn, self.next
        while True:
            try:
                i = claim()
            except StopIteration:
                return
            try:
                fn(*spans[i])
            except BaseException as e:  # handed to the caller, raised there
                if self.error is None:
                    self.error = e
            with self.lock:
                self.left -= 1
                if not self.left:
                    self.finished.set()


class _Pool:
    def __init__(self, size):
        self.size = size
        self.queues = []
        for _ in range(size):
            q = SimpleQueue()
            threading.Thread(target=self._work, args=(q,), name="ember-intraop", daemon=True).start()
            self.queues.append(q)

    @staticmethod
    def _work(q):
        while True:
            job = q.get()
            if job is None:
                return
            job.work()

    def close(self):
        for q in self.queues:
            q.put(None)


def _reset_after_fork():  # a forked child (DataLoader workers) has no pool threads
    global _lock
    _lock = threading.Lock()
    _pool[0] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def chunks(n, parts):
    """[(lo, hi), ...]: range(n) in ``parts`` contiguous pieces of near-equal length."""
    q, r = divmod(n, parts)
    out, lo = [], 0
    for i in range(parts):
        hi = lo + q + (i < r)
        out.append((lo, hi))
        lo = hi
    return out


# Dynamic adjustment (OpenMP's OMP_DYNAMIC, on by default here; OMP_DYNAMIC=false turns it off):
# a worker is used only while another core is idle. On a machine whose cores other programs keep
# busy, a worker the OS preempts mid-chunk makes the caller wait a whole time slice (milliseconds)
# for work it would have finished itself; measured on two shared cores, that made the split
# kernels of a ResNet-18 step 1.4-1.5x slower than one thread. The idle cores are read from
# /proc/stat at most every 0.2 s: the CPU time of all processes less this one's, per second.
_DYNAMIC = os.environ.get("OMP_DYNAMIC", "true").strip().lower() not in ("false", "0", "no", "off")
_idle = {"t": None, "busy": 0.0, "own": 0.0, "free": 0.0}


def _free_cores():
    st = _idle
    now = time.monotonic()
    t = st["t"]
    if t is not None and now - t < 0.2:
        return st["free"]
    try:
        with open("/proc/stat", "rb") as fh:
            f = fh.readline().split()
        busy = (sum(int(x) for x in f[1:]) - int(f[4]) - int(f[5])) / _HZ
    except (OSError, ValueError, IndexError):
        st["t"], st["free"] = now, float(_NCPU)  # (no /proc: a fixed pool, as PyTorch's)
        return st["free"]
    tm = os.times()
    own = tm.user + tm.system
    if t is not None:
        others = max(0.0, (busy - st["busy"]) - (own - st["own"])) / (now - t)
        st["free"] = _NCPU - others
    else:
        st["free"] = float(_NCPU)  # (first call: no interval yet)
    st["t"], st["busy"], st["own"] = now, busy, own
    return st["free"]


def _claim_pool(nt, n, w, grain):
    """The pool (with _lock held: release it when done) when a job of n pieces and w elements of
    work is worth threads now; else None, and the job runs on the calling thread."""
    if nt < 2 or w < 2 * grain or n < 2 or (_DYNAMIC and _free_cores() < 1.5) \
            or not _lock.acquire(blocking=False):
        return None
    try:
        pool = _pool[0]
        if pool is None or pool.size != nt - 1:
            if pool is not None:
                pool.close()
            pool = _pool[0] = _Pool(nt - 1)
        return pool
    except BaseException:
        _lock.release()
        raise


def parallel_for(n, fn, work=None, grain=None):
    """fn(lo, hi) over range(n), in chunks of about ``grain`` elements of work (``work``: elements
    of the whole job, default n) shared by the calling thread and the pool's workers. Chunks must
    not overlap in what they write. An exception from any chunk is raised here."""
    nt = get_num_threads()
    w = n if work is None else work
    grain = GRAIN if grain is None else grain
    pool = _claim_pool(nt, n, w, grain)
    if pool is None:
        fn(0, n)
        return
    try:
        parts = min(n, w // grain, 8 * nt)
        job = _Job(fn, chunks(n, parts))
        for q in pool.queues[:parts - 1]:
            q.put(job)
        job.work()
        if job.left:
            job.finished.wait()
        if job.error is not None:
            raise job.error
    finally:
        _lock.release()


class _Pipe:
    """One pipeline: a span may be consumed, by whoever is free, once the producer has made it."""
    __slots__ = ("consume", "spans", "n", "ready", "next", "left", "cond", "error")

    def __init__(self, consume, spans):
        self.consume, self.spans, self.n = consume, spans, len(spans)
        self.ready = self.next = 0  # spans produced; spans claimed
        self.left = self.n          # spans not yet consumed (or never to be produced)
        self.cond = threading.Condition()
        self.error = None

    def work(self):
        cond = self.cond
        while True:
            with cond:
                while self.next == self.ready < self.n:
                    cond.wait()
                if self.next == self.ready:  # all claimed, and nothing more will come
                    return
                i = self.next
                self.next += 1
            try:
                self.consume(*self.spans[i])
            except BaseException as e:  # handed to the caller, raised there
                if self.error is None:
                    self.error = e
            with cond:
                self.left -= 1
                if not self.left:
                    cond.notify_all()

    def made(self, i):
        with self.cond:
            self.ready = i + 1
            self.cond.notify()

    def stop(self):  # the producer failed: nothing more will come
        with self.cond:
            self.left -= self.n - self.ready
            self.n = self.ready
            self.cond.notify_all()


def pipeline(n, produce, consume, work=None, grain=None, piece=None):
    """produce(lo, hi) over range(n) in contiguous spans, in order, on the calling thread; and
    consume(lo, hi) of each span once it is produced, on the pool's workers while the caller
    produces and on every thread after. For a sequential source (a random stream) feeding
    independent work: making the items overlaps using them. Spans are at most ``piece`` long (when
    given), and cut as parallel_for's chunks are when threads are used; consume must depend on its
    own span only and write apart from the others, so the results are the same on any number of
    threads. Without threads (one thread, little work, a busy machine): each span produced, then
    consumed, in turn. An exception from either is raised here, after every started consume has
    returned."""
    nt = get_num_threads()
    w = n if work is None else work
    grain = GRAIN if grain is None else grain
    pool = _claim_pool(nt, n, w, grain)
    parts = 1 if pool is None else min(n, w // grain, 8 * nt)
    if piece:
        parts = max(parts, -(-n // piece))
    spans = chunks(n, parts)
    if pool is None:
        for span in spans:
            produce(*span)
            consume(*span)
        return
    try:
        pipe = _Pipe(consume, spans)
        for q in pool.queues[:min(nt, parts) - 1]:
            q.put(pipe)
        failed = None
        try:
            for i, span in enumerate(spans):
                produce(*span)
                pipe.made(i)
        except BaseException as e:
            failed = e
            pipe.stop()
        pipe.work()
        with pipe.cond:
            while pipe.left:
                pipe.cond.wait()
        if failed is not None:
            raise failed
        if pipe.error is not None:
            raise pipe.error
    finally:
        _lock.release()


# Many small GEMMs (a stack of them: one per image of a blocked convolution, per Winograd tile
# position, per group) run one per thread on the pool, each on one OpenBLAS thread (split_gemms):
# a multi-threaded OpenBLAS call synchronises its threads every call, which made such stacks slower
# on two threads than on one even on idle cores (32 GEMMs of 64x288x624: 11 ms on one thread,
# 15-24 ms on two), and on a machine whose other core is busy the second thread is scheduled a time
# slice late on every call (0.8-1.1 s measured). OpenBLAS's result for a GEMM depends on how many
# threads it cuts it for, so the GEMMs of a stack always run on one OpenBLAS thread, on the pool or
# not: a stack's result is bit for bit the same on any number of threads and under any load.
# Single large GEMMs keep the BLAS's own threads (its count is set_num_threads's, never the load's,
# so a result does not depend on what else the machine runs).
_blas_base = [None]  # OpenBLAS's count outside split_gemms: set_num_threads's (None: OpenBLAS's own)
# Multiply-adds per thread below which a GEMM stack stays on the calling thread. Split both ways in
# one process in real steps (two threads against one, on the 2-core EPYC VM): stacks of 6.7M /
# 10.6M multiply-adds 0.67-0.87x / 0.72x, 18.9M 0.92-1.07x, 43M 1.12x, 77M-430M 1.3-1.56x.
GEMM_GRAIN = 1 << 23


@contextlib.contextmanager
def one_blas_thread():
    """OpenBLAS on one thread inside (a stack of small GEMMs: see above); its count set back after."""
    from . import _blas
    get_num_threads()  # (the pool's count, when it follows OpenBLAS's, is read before that changes)
    if _blas_base[0] is None:
        _blas_base[0] = max(1, _blas.get_num_threads())
    if _blas_base[0] == 1:
        yield
        return
    _blas.set_gemm_threads(1)
    try:
        yield
    finally:
        _blas.set_gemm_threads(_blas_base[0])


def split_gemms(n, fn, work, grain=None):
    """fn(lo, hi) over range(n), where each index runs its own GEMMs (``work``: multiply-adds of the
    whole job), with OpenBLAS on one thread: cut over the pool's threads when there is work for
    more than one. Only the thread that called split_gemms may call it (it sets OpenBLAS's count)."""
    grain = GEMM_GRAIN if grain is None else grain
    with one_blas_thread():
        if get_num_threads() < 2 or n < 2 or work < 2 * grain:
            fn(0, n)
        else:
            parallel_for(n, fn, work=work, grain=grain)


def matmul(a, b, out=None):
    """NumPy's matmul of two stacks of matrices (same leading dims, ndim 3), split over the stack by
    split_gemms: bit for bit NumPy's result."""
    if type(a) is not _ndarray or type(b) is not _ndarray:  # another array module's: its own matmul
        return a @ b if out is None else _copy_ret(out, a @ b)
    if out is None:
        out = _np.empty(a.shape[:-1] + b.shape[-1:], _np.result_type(a, b))
    n = a.shape[0]
    if a.ndim != 3 or b.ndim != 3 or b.shape[0] != n:
        _np.matmul(a, b, out=out)
        return out

    def run(lo, hi):
        _np.matmul(a[lo:hi], b[lo:hi], out=out[lo:hi])
    split_gemms(n, run, a.size * b.shape[-1])
    return out


def _copy_ret(out, r):
    out[...] = r
    return out


def _split_axis(shape, size):
    """The axis to cut a ``shape`` job of ``size`` elements along, or None when one thread should
    do it: the outermost axis long enough for a chunk per thread and more (a late worker's share
    goes to whoever is free), else the outermost one with two entries."""
    nt = get_num_threads()
    if nt < 2 or size < MIN_SIZE:
        return None
    for want in (2 * nt, 2):
        for ax, s in enumerate(shape):
            if s >= want:
                return ax
    return None


def _piece(x, ax, nd, lo, hi):
    """x's part for output rows lo:hi along axis ax of an nd-dim output (broadcasting as NumPy)."""
    if type(x) is not _ndarray:
        return x
    a = ax - (nd - x.ndim)
    if a < 0 or x.shape[a] == 1:
        return x
    return x[(slice(None),) * a + (slice(lo, hi),)]


def copyto(dst, src):
    """NumPy's copyto(dst, src) (same-kind casting, src broadcast), on every thread when big."""
    if type(dst) is not _ndarray or dst.size < MIN_SIZE:
        _copy(dst, src)
        return
    ax = _split_axis(dst.shape, dst.size)
    if ax is None or (type(src) is _ndarray and _np.may_share_memory(dst, src)):
        _copy(dst, src)
        return
    nd = dst.ndim

    def run(lo, hi):
        _np.copyto(dst[(slice(None),) * ax + (slice(lo, hi),)], _piece(src, ax, nd, lo, hi))
    parallel_for(dst.shape[ax], run, work=dst.size)


def _copy(dst, src):
    if type(dst) is _ndarray:
        _np.copyto(dst, src)
    else:  # another array module's array (CuPy): its own copy
        dst[...] = src


def _out_like(args, uf, shape):
    """An output array for uf(*args) with NumPy's dtype and layout, or None when the layout is not
    one this module reproduces (then the caller runs NumPy's own call)."""
    if uf.nout != 1:
        return None
    try:
        dt = uf.resolve_dtypes(tuple(x.dtype if type(x) is _ndarray else type(x) for x in args) +
                               (None,) * uf.nout)[-1]
    except Exception:
        return None
    full = [x for x in args if type(x) is _ndarray and x.shape == shape]
    if not full:  # all broadcast (an outer product): C order when every input is in C order
        return _np.empty(shape, dt) if all(_ordered(x, shape, range(len(shape))) for x in args) else None
    first = full[0]
    if not all(x.strides == first.strides or (x.flags.c_contiguous and first.flags.c_contiguous)
               for x in full[1:]):
        return None
    # NumPy lays the result out in the inputs' common axis order: first's, when the broadcast
    # inputs follow it too
    order = sorted((a for a in range(len(shape)) if shape[a] > 1), key=lambda a: -first.strides[a])
    if not all(_ordered(x, shape, order) for x in args):
        return None
    return _np.empty_like(first, dtype=dt)


def _ordered(x, shape, order):
    """True when x (an array, or a number) broadcast to shape has decreasing positive strides along
    the axes in ``order`` that it really spans (longer than 1 in both)."""
    if type(x) is not _ndarray:
        return True
    k = len(shape) - x.ndim
    st = [x.strides[a - k] for a in order if a >= k and shape[a] > 1 and x.shape[a - k] > 1]
    return all(s > 0 for s in st) and all(a > b for a, b in zip(st, st[1:]))


def ufunc(uf, *args, out=None, **kw):
    """uf(*args[, out=out]) for elementwise ufuncs, cut over the threads when the output is big.
    Bit for bit NumPy's result (same dtype, values and memory layout)."""
    if type(uf) is not _np.ufunc:
        return uf(*args, **kw) if out is None else uf(*args, out=out, **kw)
    shape = out.shape if out is not None else _np.broadcast_shapes(
        *(x.shape for x in args if type(x) is _ndarray))
    size = 1
    for s in shape:
        size *= s
    ax = _split_axis(shape, size)
    if ax is None:
        return uf(*args, **kw) if out is None else uf(*args, out=out, **kw)
    if out is None:
        o = _out_like(args, uf, shape)
        if o is None:
            return uf(*args, **kw)
    else:
        o = out
        for x in args:  # an input overlapping the output other than exactly (x += y) is NumPy's
            if type(x) is _ndarray and not (x.shape == o.shape and x.strides == o.strides and
                                            x.__array_interface__["data"][0] == o.__array_interface__["data"][0]) \
                    and _np.may_share_memory(x, o):  # to buffer: one call
                return uf(*args, out=out, **kw)
    nd = len(shape)
    err = _np.geterr()  # (the floating-point error state is per thread: the caller's holds)

    def run(lo, hi):
        with _np.errstate(**err):
            uf(*(_piece(x, ax, nd, lo, hi) for x in args), out=_piece(o, ax, nd, lo, hi), **kw)
    parallel_for(shape[ax], run, work=size)
    return o


import numpy as _np  # noqa: E402  (after the pool: the module's docstring and API read first)

_ndarray = _np.ndarray
_SELECT_INT = {1: _np.int8, 2: _np.int16, 4: _np.int32, 8: _np.int64}
SELECT_MIN = 8192  # elements from which where's bit masks beat NumPy's branches (measured: 4096)


def where(cond, a, b):
    """NumPy's where(cond, a, b) for a boolean array cond (a and b arrays or numbers), bit for bit,
    without NumPy's branch per element: on a mixed mask that branch mispredicts (about 4 ns an
    element, ten ufunc passes' worth), so the values' bits are chosen by masks instead,
    b ^ ((a ^ b) & -cond), one pass when a or b is a zero (relu's backward), each pass cut over the
    threads when big. Small ones, complex values (no integer of their width) and other array
    modules' arrays take NumPy's where."""
    if type(cond) is not _ndarray or cond.size < SELECT_MIN or cond.dtype != _np.bool_:
        return _np.where(cond, a, b)

    def empty(x):
        return x[(slice(0, 0),) * x.ndim] if type(x) is _ndarray and x.ndim else x
    dt = _np.where(False, empty(a), empty(b)).dtype
    it = _SELECT_INT.get(dt.itemsize)
    if it is None or dt.kind not in "biufV":
        return _np.where(cond, a, b)
    ai, bi = (_np.asarray(x, dt).view(it) for x in (a, b))
    c = cond.view(_np.int8)
    if bi.ndim == 0 and bi == 0:
        r = ufunc(_np.bitwise_and, ai, ufunc(_np.negative, c))
    elif ai.ndim == 0 and ai == 0:
        r = ufunc(_np.bitwise_and, bi, ufunc(_np.subtract, c, _np.int8(1)))
    else:
        m = ufunc(_np.negative, c)
        r = ufunc(_np.bitwise_xor, ai, bi)
        if r.shape == _np.broadcast_shapes(r.shape, m.shape):
            ufunc(_np.bitwise_and, r, m, out=r)
        else:
            r = ufunc(_np.bitwise_and, r, m)
        ufunc(_np.bitwise_xor, r, bi, out=r)
    return r.view(dt)


def apply(fn, arrays, *args):
    """fn(*arrays, *args) where fn is elementwise in ``arrays`` (same-shape arrays, any strides,
    written through ``out=``/in place; None and numbers pass through whole): on pieces of every
    array along one axis, one piece per chunk, when they are big. The optimizers' fused updates."""
    first = arrays[0]
    ax = _split_axis(first.shape, first.size) if first.size >= MIN_SIZE else None
    if ax is None:
        fn(*arrays, *args)
        return
    shape = first.shape
    err = _np.geterr()
    lead = (slice(None),) * ax

    def run(lo, hi):
        sl = lead + (slice(lo, hi),)
        with _np.errstate(**err):
            fn(*(x[sl] if type(x) is _ndarray and x.shape == shape else x for x in arrays), *args)
    parallel_for(shape[ax], run, work=first.size)
