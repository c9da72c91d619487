"""Collective communication across processes on MPI, in the shape of ``torch.distributed``.

The world comes from the MPI launcher (``mpirun -n N python train.py``): ``init_process_group("mpi")``
joins it, after which every rank runs the same collectives in the same order. Tensors are reduced
in place, as in PyTorch. mpi4py over an MPI library (Debian: ``apt-get install openmpi-bin
libopenmpi-dev``; then ``pip install ember[mpi]``) is imported only here, and only when used.

Each collective takes ``async_op=True`` to return a :class:`Work` whose ``wait()`` completes it
(non-blocking MPI underneath, so computation can run while the data moves).

Blocking collectives first check, with one small exchange, that every rank passes the same shape
and dtype, and raise a ``RuntimeError`` naming the ranks' shapes when they differ: a mismatch
otherwise deadlocks or corrupts memory in MPI. Set ``EMBER_DISTRIBUTED_CHECKS=0`` to skip the check.

No collective waits forever: each one waits at most the ``timeout=`` given to
``init_process_group`` (a ``datetime.timedelta`` or seconds; 30 minutes by default, as PyTorch's
CPU backend), then asks the other ranks where they are and raises ``DistBackendError`` naming the
collective and the ranks that did not arrive (uncaught, it aborts the whole job). A rank whose
interpreter exits while the group is live (``sys.exit``, the end of the script) tells the others,
and a rank waiting for it raises at once (after a short grace period) instead of at the timeout.
"""
import atexit
import os
import sys
import time

import numpy as np

__all__ = ["ReduceOp", "Work", "DistError", "DistBackendError", "is_available", "is_mpi_available", "init_process_group", "is_initialized",
           "destroy_process_group", "get_rank", "get_world_size", "get_backend", "all_reduce", "broadcast",
           "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "barrier",
           "all_gather_object", "broadcast_object_list", "group", "GroupMember"]


class ReduceOp:
    """Reduction operations for ``all_reduce`` and ``reduce_scatter``."""

    class _Op:
        __slots__ = ("name",)

        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return f"<ReduceOp.{self.name}>"

    SUM = _Op("SUM")
    AVG = _Op("AVG")
    PRODUCT = _Op("PRODUCT")
    MIN = _Op("MIN")
    MAX = _Op("MAX")


class DistError(RuntimeError):
    """A failure of a distributed operation (as ``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """A collective that could not complete: a timeout, a rank that exited (as PyTorch's)."""


class _World:
    """The default process group: COMM_WORLD duplicated so ember's traffic never mixes with the user's;
    ``check``, a second duplicate, carries the exchanges that compare what the ranks pass (apart from
    the data, so that ranks in different collectives never match each other's data messages);
    ``ctl``, a third, the where-are-you queries and exit notices."""

    def __init__(self, comm, check, ctl, timeout):
        self.comm = comm
        self.check = check
        self.ctl = ctl
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.seq = 0              # collectives this rank has started
        self.waiting = None       # (seq, what) while this rank waits in a collective
        self.last = None          # the last collective it waited in
        self.exited = {}          # rank -> time its exit notice arrived


class group:  # noqa: N801  (torch.distributed.group.WORLD)
    WORLD = None


GroupMember = group

_world = None
_MPI = None
_prev_excepthook = None
_CHECKS = os.environ.get("EMBER_DISTRIBUTED_CHECKS", "1") != "0"
_DEFAULT_TIMEOUT = 1800.0          # seconds: PyTorch's default for its CPU backend
_TAG_QUERY, _TAG_REPLY, _TAG_EXIT = 101, 102, 103
_EXIT_GRACE = 3.0                  # seconds a collective still waits after a peer's exit notice
_SPIN = 0.02                       # seconds of busy polling (as MPI's own blocking waits) before sleeping


def _import_mpi():
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise RuntimeError(
                "ember.distributed needs mpi4py over an MPI library: on Debian/Ubuntu "
                "`apt-get install -y openmpi-bin libopenmpi-dev` then `pip install ember[mpi]` "
                f"(import failed: {e})") from None
        _MPI = MPI
    return _MPI


def is_available():
    return True


def is_mpi_available():
    try:
        _import_mpi()
    except RuntimeError:
        return False
    return True


def _abort_excepthook(exc_type, exc, tb):
    """An uncaught exception on one rank aborts the whole job, so the other ranks do not hang."""
    try:
        (_prev_excepthook or sys.__excepthook__)(exc_type, exc, tb)
        sys.stderr.flush()
    finally:
        if _world is not None and _MPI is not None and not issubclass(exc_type, (SystemExit,)):
            _MPI.COMM_WORLD.Abort(1)


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the world the MPI launcher started. ``world_size``/``rank``, when given, must match it."""
    global _world, _prev_excepthook
    if backend is None:
        backend = "mpi"
    if str(backend).lower() != "mpi":
        raise ValueError(f"init_process_group: ember supports the 'mpi' backend only, got {backend!r} "
                         "(launch with mpirun -n N)")
    if _world is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    seconds = _timeout_seconds(timeout)
    MPI = _import_mpi()
    comm = MPI.COMM_WORLD.Dup()
    w = _World(comm, MPI.COMM_WORLD.Dup(), MPI.COMM_WORLD.Dup(), seconds)
    if world_size not in (-1, None) and world_size != w.size:
        raise ValueError(f"init_process_group: world_size={world_size} but the MPI launcher started "
                         f"{w.size} process(es)")
    if rank not in (-1, None) and rank != w.rank:
        raise ValueError(f"init_process_group: rank={rank} but MPI says this process is rank {w.rank}")
    _world = w
    group.WORLD = w
    if sys.excepthook is not _abort_excepthook:
        _prev_excepthook = sys.excepthook
        sys.excepthook = _abort_excepthook
    atexit.register(_notify_exit)  # after mpi4py's import: runs before its MPI_Finalize


def _timeout_seconds(timeout):
    if timeout is None:
        return _DEFAULT_TIMEOUT
    seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"init_process_group: timeout must be a positive datetime.timedelta (or seconds), "
                         f"got {timeout!r}")
    return float(seconds)


def is_initialized():
    return _world is not None


def destroy_process_group(group=None):
    global _world
    if _world is None:
        return
    w, _world = _world, None
    globals()["group"].WORLD = None
    try:
        w.comm.Free()
        w.check.Free()
        w.ctl.Free()
    except Exception:  # noqa: BLE001  (MPI already finalized at interpreter exit)
        pass
    if sys.excepthook is _abort_excepthook:
        sys.excepthook = _prev_excepthook or sys.__excepthook__


def _get(what):
    if _world is None:
        raise RuntimeError(f"{what}: the default process group has not been initialized, please make sure to "
                           "call init_process_group (under mpirun) first")
    return _world


def get_rank(group=None):
    return _get("get_rank").rank


def get_world_size(group=None):
    return _get("get_world_size").size


def get_backend(group=None):
    _get("get_backend")
    return "mpi"


# ---------------------------------------------------------------------------------------- helpers
# ------------------------------------------------------------------------ waiting, with a timeout
def _begin(w, what):
    """Number the collective this rank starts (ranks running the same program agree on numbers)."""
    w.seq += 1
    return (w.seq, what)


def _wait(reqs, where, timeout=None, test=None):
    """Complete the MPI requests ``reqs`` (or until ``test()`` is true), within the group's timeout.

    Polls like MPI's own blocking waits (which spin), then sleeps between polls; meanwhile answers
    the other ranks' where-are-you queries and notices their exit. On timeout, or when a rank it
    waits for has exited, raises ``DistBackendError`` naming the collective and the missing ranks."""
    MPI = _MPI
    test = test or (lambda: MPI.Request.Testall(reqs))
    if test():
        return
    w = _world
    if w is None:
        MPI.Request.Waitall(reqs)
        return
    poll = _poller(w, where, timeout, test)
    try:
        n = 0
        while not test():
            n += 1
            if poll.spinning():
                if n & 63:
                    continue
            else:
                time.sleep(0.0005)
            poll()
    finally:
        w.last, w.waiting = where, None


class _poller:  # noqa: N801
    """Called now and then while ``where`` waits: serves queries, raises on timeout or a peer's exit."""

    def __init__(self, w, where, timeout, test):
        self.w, self.where, self.test = w, where, test
        self.limit = w.timeout if timeout is None else _timeout_seconds(timeout)
        self.start = time.monotonic()
        w.waiting = where

    def spinning(self):
        return time.monotonic() - self.start < _SPIN

    def __call__(self):
        w, now = self.w, time.monotonic()
        _serve(w)
        if w.exited and min(w.exited.values()) + min(_EXIT_GRACE, self.limit / 3) < now and not self.test():
            _fail_exited(w, self.where)
        if now - self.start > self.limit:
            _fail_timeout(w, self.where, self.limit)


def _serve(w, replies=None):
    """Answer queries, note exit notices (and collect replies, while this rank asks)."""
    MPI = _MPI
    st = MPI.Status()
    while w.ctl.iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st):
        src, tag = st.Get_source(), st.Get_tag()
        msg = w.ctl.recv(source=src, tag=tag)
        if tag == _TAG_QUERY:
            w.ctl.send(("waiting", w.waiting) if w.waiting else ("running", w.last), dest=src, tag=_TAG_REPLY)
        elif tag == _TAG_EXIT:
            w.exited.setdefault(src, time.monotonic())
        elif tag == _TAG_REPLY and replies is not None:
            replies[src] = msg


def _describe(where):
    return f"{where[1]} (collective #{where[0]} of this process)"


def _fail_exited(w, where):
    gone = sorted(w.exited)
    raise DistBackendError(
        f"{where[1]}: rank(s) {', '.join(map(str, gone))} exited (the interpreter shut down while the "
        f"process group was live) while rank {w.rank} waited for them in {_describe(where)}; "
        f"the collective cannot complete")


def _fail_timeout(w, where, limit):
    """Ask every other rank where it is (a short while), then raise naming who did not arrive."""
    others = [r for r in range(w.size) if r != w.rank]
    replies = {}
    try:
        for r in others:
            w.ctl.send(where, dest=r, tag=_TAG_QUERY)
        end = time.monotonic() + min(2.0, max(0.5, limit / 4))
        while len(replies) < len(others) and time.monotonic() < end:
            _serve(w, replies)
            time.sleep(0.001)
    except Exception:  # noqa: BLE001  (a peer gone for good: report what is known)
        pass
    arrived, notes = [], []
    for r in others:
        state = replies.get(r)
        if state is not None and state[0] == "waiting" and state[1] == where:
            arrived.append(r)
        elif r in w.exited:
            notes.append(f"rank {r} exited")
        elif state is None:
            notes.append(f"rank {r} did not answer (busy outside any collective, stuck or dead)")
        elif state[0] == "waiting":
            notes.append(f"rank {r} waits in {state[1][1]} (its collective #{state[1][0]})")
        else:
            last = f"{state[1][1]} (its collective #{state[1][0]})" if state[1] else "none yet"
            notes.append(f"rank {r} is running outside any collective (its last: {last})")
    missing = [r for r in others if r not in arrived]
    raise DistBackendError(
        f"{where[1]}: timed out after {limit:g} s (the timeout= of init_process_group) on rank {w.rank} in "
        f"{_describe(where)}: rank(s) {', '.join(map(str, missing))} did not arrive ({'; '.join(notes)})"
        + (f"; rank(s) {', '.join(map(str, arrived))} did" if arrived else ""))


def _notify_exit():
    """At interpreter exit with the group still live: tell the other ranks, so that one waiting for
    this rank in a collective fails at once instead of at its timeout."""
    w = _world
    if w is None or w.size == 1 or _MPI is None:
        return
    try:
        if _MPI.Is_finalized():
            return
        reqs = [w.ctl.isend(None, dest=r, tag=_TAG_EXIT) for r in range(w.size) if r != w.rank]
        end = time.monotonic() + 0.5
        while not _MPI.Request.Testall(reqs) and time.monotonic() < end:
            time.sleep(0.001)
    except Exception:  # noqa: BLE001  (best effort at exit)
        pass


class Work:
    """A handle on a collective that may still be running; ``wait()`` completes it."""

    def __init__(self, requests=(), finish=None, where=None):
        self._reqs = list(requests)
        self._finish = finish
        self._done = False
        self._where = where

    def wait(self, timeout=None):
        if not self._done:
            if self._reqs:
                _wait(self._reqs, self._where or (0, "a collective (async_op=True)"), timeout)
            self._done = True
            if self._finish is not None:
                self._finish()
                self._finish = None
        return True

    def is_completed(self):
        if not self._done and (not self._reqs or _MPI.Request.Testall(self._reqs)):
            self._reqs = []
            self.wait()
        return self._done

    def is_success(self):
        return self.is_completed()


def _np_of(t, what, name="tensor"):
    from .._tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {name} must be a Tensor, got {type(t).__name__}")
    return t._data


_FLOAT16 = np.dtype(np.float16)


class _Buf:
    """A contiguous buffer MPI can send and receive for tensor ``t``; ``done()`` writes results back."""
    __slots__ = ("t", "arr", "work", "writeback")

    def __init__(self, t, write=True):
        a = t._data
        self.t = t
        self.writeback = False
        if a.dtype == _FLOAT16:          # MPI has no half type: reduce in float32
            self.arr = a.astype(np.float32)
            self.writeback = write
        elif a.dtype == np.bool_:        # reduce booleans as bytes (SUM/MAX: or, MIN/PRODUCT: and)
            if a.flags.c_contiguous and a.flags.writeable:
                self.arr = a.view(np.uint8)
            else:
                self.arr = a.astype(np.uint8)
                self.writeback = write
        elif a.flags.c_contiguous and a.flags.writeable:
            self.arr = a
        else:
            self.arr = np.ascontiguousarray(a)
            self.writeback = write

    def done(self, divide_by=None):
        """Write the result back; ``divide_by``: the world size, for ReduceOp.AVG."""
        if divide_by is not None:
            np.divide(self.arr, divide_by, out=self.arr)
        if self.writeback:
            np.copyto(self.t._data, self.arr.reshape(self.t._data.shape), casting="unsafe")
        self.t._bump()


def _mpi_op(op, dtype, what):
    MPI = _MPI
    if not isinstance(op, ReduceOp._Op):
        raise TypeError(f"{what}: op must be a ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got {op!r}")
    if op is ReduceOp.AVG:
        if dtype.kind not in "fc":
            raise RuntimeError(f"{what}: ReduceOp.AVG needs a floating-point tensor, got {dtype}")
        return MPI.SUM
    if dtype == np.bool_:
        return MPI.MAX if op in (ReduceOp.SUM, ReduceOp.MAX) else MPI.MIN
    return {"SUM": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX}[op.name]


_RECORD = 256


def _record(where, meta):
    """What this rank passes to a collective, as a fixed-size record every rank can compare."""
    text = repr((where[1], meta)).encode("utf-8", "replace")
    if len(text) > _RECORD:
        import hashlib
        text = repr((where[1], "sha1:" + hashlib.sha1(text).hexdigest())).encode()
    out = np.zeros(_RECORD, np.uint8)
    out[:len(text)] = np.frombuffer(text, np.uint8)
    return out


def _check_same(w, where, *meta):
    """Every rank must be in the same collective with the same shapes and dtypes: compare them
    with one small exchange (which is also a barrier)."""
    if w.size == 1:
        return
    mine = _record(where, meta)
    everyone = np.empty((w.size, _RECORD), np.uint8)
    _wait([w.check.Iallgather(mine, everyone)], where)
    if not (everyone == mine).all():
        desc = "; ".join(f"rank {r}: {bytes(everyone[r]).rstrip(bytes(1)).decode('utf-8', 'replace')}"
                         for r in range(w.size))
        raise RuntimeError(f"{where[1]}: the ranks passed tensors that do not match, or are in different "
                           f"collectives ({desc})")


def _meta(t):
    return (tuple(t._data.shape), str(t._data.dtype))


def _rendezvous(async_op):
    """A blocking collective whose ranks have all been seen arriving (the shape check exchanged
    records within the timeout) moves its data with MPI's blocking call: its algorithms are faster
    than the non-blocking ones (an all-reduce of 4 MB: half the time here)."""
    return not async_op and _CHECKS


def _run(async_op, requests, finish, where=None):
    work = Work(requests, finish, where)
    if async_op:
        return work
    work.wait()
    return None


# ------------------------------------------------------------------------------------ collectives
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across all ranks in place: every rank ends with the result."""
    w = _get("all_reduce")
    _np_of(tensor, "all_reduce")
    mop = _mpi_op(op, tensor._data.dtype, "all_reduce")
    where = _begin(w, "all_reduce")
    if not async_op and _CHECKS:
        _check_same(w, where, _meta(tensor))
    b = _Buf(tensor)

    def finish():
        b.done(w.size if op is ReduceOp.AVG else None)

    if w.size == 1:
        return _run(async_op, (), finish)
    if _rendezvous(async_op):  # every rank is here (checked within the timeout): MPI's fast blocking call
        w.comm.Allreduce(_MPI.IN_PLACE, b.arr, mop)
        return _run(False, (), finish)
    return _run(async_op, [w.comm.Iallreduce(_MPI.IN_PLACE, b.arr, mop)], finish, where)


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    w = _get("broadcast")
    _np_of(tensor, "broadcast")
    if not 0 <= src < w.size:
        raise ValueError(f"broadcast: src={src} is not a rank of a world of size {w.size}")
    where = _begin(w, "broadcast")
    if not async_op and _CHECKS:
        _check_same(w, where, _meta(tensor), src)
    b = _Buf(tensor)
    if b.writeback and w.rank == src:
        b.writeback = False
    if w.size == 1:
        return _run(async_op, (), b.done)
    if _rendezvous(async_op):
        w.comm.Bcast(b.arr, root=src)
        return _run(False, (), b.done)
    return _run(async_op, [w.comm.Ibcast(b.arr, root=src)], b.done, where)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenate every rank's ``input_tensor`` along dim 0 into ``output_tensor`` (or stack, when
    ``output_tensor`` has one more dimension of size world_size)."""
    w = _get("all_gather_into_tensor")
    inp = _np_of(input_tensor, "all_gather_into_tensor", "input_tensor")
    out = _np_of(output_tensor, "all_gather_into_tensor", "output_tensor")
    if out.dtype != inp.dtype:
        raise TypeError(f"all_gather_into_tensor: output dtype {out.dtype} != input dtype {inp.dtype}")
    if out.size != inp.size * w.size:
        raise RuntimeError(f"all_gather_into_tensor: output has {out.size} elements but {w.size} ranks x "
                           f"input {tuple(inp.shape)} need {inp.size * w.size}")
    where = _begin(w, "all_gather_into_tensor")
    if not async_op and _CHECKS:
        _check_same(w, where, _meta(input_tensor))
    send = np.ascontiguousarray(inp.astype(np.float32) if inp.dtype == _FLOAT16 else inp)
    if send.dtype == np.bool_:
        send = send.view(np.uint8)
    b = _Buf(output_tensor)
    if w.size == 1:
        np.copyto(b.arr, send.reshape(b.arr.shape))
        return _run(async_op, (), b.done)
    if _rendezvous(async_op):
        w.comm.Allgather(send, b.arr)
        return _run(False, (), b.done)
    return _run(async_op, [w.comm.Iallgather(send, b.arr)], b.done, where)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list[r]`` with rank ``r``'s ``tensor`` on every rank."""
    w = _get("all_gather")
    inp = _np_of(tensor, "all_gather")
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != w.size:
        raise ValueError(f"all_gather: tensor_list must be a list of {w.size} tensors (the world size), got "
                         f"{len(tensor_list) if isinstance(tensor_list, (list, tuple)) else type(tensor_list).__name__}")
    for i, t in enumerate(tensor_list):
        a = _np_of(t, "all_gather", f"tensor_list[{i}]")
        if a.shape != inp.shape or a.dtype != inp.dtype:
            raise RuntimeError(f"all_gather: tensor_list[{i}] is {tuple(a.shape)} {a.dtype} but the input "
                               f"tensor is {tuple(inp.shape)} {inp.dtype}")
    where = _begin(w, "all_gather")
    if not async_op and _CHECKS:
        _check_same(w, where, _meta(tensor))
    send = np.ascontiguousarray(inp)
    wide = send.dtype == _FLOAT16
    if wide:
        send = send.astype(np.float32)
    elif send.dtype == np.bool_:
        send = send.view(np.uint8)
    gathered = np.empty((w.size,) + send.shape, send.dtype)

    def finish():
        for t, part in zip(tensor_list, gathered):
            np.copyto(t._data, part.view(np.bool_) if inp.dtype == np.bool_ else part, casting="unsafe")
            t._bump()

    if w.size == 1:
        gathered[0] = send
        return _run(async_op, (), finish)
    if _rendezvous(async_op):
        w.comm.Allgather(send, gathered)
        return _run(False, (), finish)
    return _run(async_op, [w.comm.Iallgather(send, gathered)], finish, where)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (world_size x output's elements, split along dim 0) across ranks; rank r gets part r."""
    w = _get("reduce_scatter_tensor")
    out = _np_of(output, "reduce_scatter_tensor", "output")
    inp = _np_of(input, "reduce_scatter_tensor", "input")
    if out.dtype != inp.dtype:
        raise TypeError(f"reduce_scatter_tensor: output dtype {out.dtype} != input dtype {inp.dtype}")
    if inp.size != out.size * w.size:
        raise RuntimeError(f"reduce_scatter_tensor: input has {inp.size} elements but {w.size} ranks x output "
                           f"{tuple(out.shape)} need {out.size * w.size}")
    mop = _mpi_op(op, out.dtype, "reduce_scatter_tensor")
    where = _begin(w, "reduce_scatter_tensor")
    if not async_op and _CHECKS:
        _check_same(w, where, _meta(input), _meta(output))
    send = np.ascontiguousarray(inp.astype(np.float32) if inp.dtype == _FLOAT16 else inp)
    if send.dtype == np.bool_:
        send = send.view(np.uint8)
    b = _Buf(output)

    def finish():
        b.done(w.size if op is ReduceOp.AVG else None)

    if w.size == 1:
        np.copyto(b.arr, send.reshape(b.arr.shape))
        return _run(async_op, (), finish)
    if _rendezvous(async_op):
        w.comm.Reduce_scatter_block(send, b.arr, mop)
        return _run(False, (), finish)
    return _run(async_op, [w.comm.Ireduce_scatter_block(send, b.arr, mop)], finish, where)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list[r]`` across ranks into ``output`` on rank ``r``."""
    w = _get("reduce_scatter")
    out = _np_of(output, "reduce_scatter", "output")
    if not isinstance(input_list, (list, tuple)) or len(input_list) != w.size:
        raise ValueError(f"reduce_scatter: input_list must be a list of {w.size} tensors (the world size)")
    for i, t in enumerate(input_list):
        a = _np_of(t, "reduce_scatter", f"input_list[{i}]")
        if a.shape != out.shape or a.dtype != out.dtype:
            raise RuntimeError(f"reduce_scatter: input_list[{i}] is {tuple(a.shape)} {a.dtype} but output is "
                               f"{tuple(out.shape)} {out.dtype}")
    from .._tensor import new_tensor
    stacked = new_tensor(np.stack([t._data for t in input_list]))
    return reduce_scatter_tensor(output, stacked, op, async_op=async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank has reached this point."""
    w = _get("barrier")
    if w.size == 1:
        return _run(async_op, (), None)
    where = _begin(w, "barrier")
    if async_op or not _CHECKS:
        return _run(async_op, [w.comm.Ibarrier()], None, where)
    _check_same(w, where)         # the exchange is a barrier, and says who is elsewhere
    return None


def _gather_bytes(w, where, data):
    """Every rank's ``data`` (bytes), within the timeout."""
    sizes = np.empty(w.size, np.int64)
    _wait([w.comm.Iallgather(np.array([len(data)], np.int64), sizes)], where)
    out = np.empty(int(sizes.sum()), np.uint8)
    _wait([w.comm.Iallgatherv(np.frombuffer(data, np.uint8), (out, sizes))], where)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    return [out[offs[r]:offs[r + 1]].tobytes() for r in range(w.size)]


def all_gather_object(object_list, obj, group=None):
    """``object_list[r]`` = rank r's picklable ``obj``."""
    import pickle
    w = _get("all_gather_object")
    if len(object_list) != w.size:
        raise ValueError(f"all_gather_object: object_list must have {w.size} entries (the world size)")
    where = _begin(w, "all_gather_object")
    if w.size == 1:
        object_list[:] = [obj]
        return
    object_list[:] = [pickle.loads(b) for b in _gather_bytes(w, where, pickle.dumps(obj))]


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Replace ``object_list``'s entries with rank ``src``'s (picklable objects)."""
    import pickle
    w = _get("broadcast_object_list")
    if not 0 <= src < w.size:
        raise ValueError(f"broadcast_object_list: src={src} is not a rank of a world of size {w.size}")
    where = _begin(w, "broadcast_object_list")
    if w.size == 1:
        return
    data = pickle.dumps(list(object_list)) if w.rank == src else b""
    n = np.array([len(data)], np.int64)
    _wait([w.comm.Ibcast(n, root=src)], where)
    buf = np.frombuffer(data, np.uint8).copy() if w.rank == src else np.empty(int(n[0]), np.uint8)
    _wait([w.comm.Ibcast(buf, root=src)], where)
    object_list[:] = pickle.loads(buf.tobytes())
