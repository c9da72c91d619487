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
"""
import os
import sys

import numpy as np

__all__ = ["ReduceOp", "Work", "is_available", "is_mpi_available", "init_process_group", "is_initialized",
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


class _World:
    """The default process group: COMM_WORLD duplicated so ember's traffic never mixes with the user's."""

    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()


class group:  # noqa: N801  (torch.distributed.group.WORLD)
    WORLD = None


GroupMember = group

_world = None
_MPI = None
_prev_excepthook = None
_CHECKS = os.environ.get("EMBER_DISTRIBUTED_CHECKS", "1") != "0"


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
    MPI = _import_mpi()
    comm = MPI.COMM_WORLD.Dup()
    w = _World(comm)
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
class Work:
    """A handle on a collective that may still be running; ``wait()`` completes it."""

    def __init__(self, requests=(), finish=None):
        self._reqs = list(requests)
        self._finish = finish
        self._done = False

    def wait(self, timeout=None):
        if not self._done:
            if self._reqs:
                _MPI.Request.Waitall(self._reqs)
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


def _check_same(w, what, *meta):
    """Every rank must pass the same shapes and dtypes: compare them with one small exchange."""
    if not _CHECKS or w.size == 1:
        return
    everyone = w.comm.allgather(meta)
    if any(m != everyone[0] for m in everyone):
        desc = "; ".join(f"rank {r}: {m}" for r, m in enumerate(everyone))
        raise RuntimeError(f"{what}: the ranks passed tensors that do not match ({desc})")


def _meta(t):
    return (tuple(t._data.shape), str(t._data.dtype))


def _run(async_op, requests, finish):
    work = Work(requests, finish)
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
    if not async_op:
        _check_same(w, "all_reduce", _meta(tensor))
    b = _Buf(tensor)

    def finish():
        b.done(w.size if op is ReduceOp.AVG else None)

    if w.size == 1:
        return _run(async_op, (), finish)
    if async_op:
        return _run(True, [w.comm.Iallreduce(_MPI.IN_PLACE, b.arr, mop)], finish)
    w.comm.Allreduce(_MPI.IN_PLACE, b.arr, mop)
    return _run(False, (), finish)


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    w = _get("broadcast")
    _np_of(tensor, "broadcast")
    if not 0 <= src < w.size:
        raise ValueError(f"broadcast: src={src} is not a rank of a world of size {w.size}")
    if not async_op:
        _check_same(w, "broadcast", _meta(tensor))
    b = _Buf(tensor)
    if b.writeback and w.rank == src:
        b.writeback = False
    if w.size == 1:
        return _run(async_op, (), b.done)
    if async_op:
        return _run(True, [w.comm.Ibcast(b.arr, root=src)], b.done)
    w.comm.Bcast(b.arr, root=src)
    return _run(False, (), b.done)


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
    if not async_op:
        _check_same(w, "all_gather_into_tensor", _meta(input_tensor))
    send = np.ascontiguousarray(inp.astype(np.float32) if inp.dtype == _FLOAT16 else inp)
    if send.dtype == np.bool_:
        send = send.view(np.uint8)
    b = _Buf(output_tensor)
    if w.size == 1:
        np.copyto(b.arr, send.reshape(b.arr.shape))
        return _run(async_op, (), b.done)
    if async_op:
        return _run(True, [w.comm.Iallgather(send, b.arr)], b.done)
    w.comm.Allgather(send, b.arr)
    return _run(False, (), b.done)


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
    if not async_op:
        _check_same(w, "all_gather", _meta(tensor))
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
    if async_op:
        return _run(True, [w.comm.Iallgather(send, gathered)], finish)
    w.comm.Allgather(send, gathered)
    return _run(False, (), finish)


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
    if not async_op:
        _check_same(w, "reduce_scatter_tensor", _meta(input), _meta(output))
    send = np.ascontiguousarray(inp.astype(np.float32) if inp.dtype == _FLOAT16 else inp)
    if send.dtype == np.bool_:
        send = send.view(np.uint8)
    b = _Buf(output)

    def finish():
        b.done(w.size if op is ReduceOp.AVG else None)

    if w.size == 1:
        np.copyto(b.arr, send.reshape(b.arr.shape))
        return _run(async_op, (), finish)
    if async_op:
        return _run(True, [w.comm.Ireduce_scatter_block(send, b.arr, mop)], finish)
    w.comm.Reduce_scatter_block(send, b.arr, mop)
    return _run(False, (), finish)


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
    if async_op:
        return Work([w.comm.Ibarrier()])
    w.comm.Barrier()
    return None


def all_gather_object(object_list, obj, group=None):
    """``object_list[r]`` = rank r's picklable ``obj``."""
    w = _get("all_gather_object")
    if len(object_list) != w.size:
        raise ValueError(f"all_gather_object: object_list must have {w.size} entries (the world size)")
    object_list[:] = w.comm.allgather(obj)


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Replace ``object_list``'s entries with rank ``src``'s (picklable objects)."""
    w = _get("broadcast_object_list")
    object_list[:] = w.comm.bcast(list(object_list), root=src)
