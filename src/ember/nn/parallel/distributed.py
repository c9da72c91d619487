"""DistributedDataParallel: data-parallel training over ember.distributed (MPI).

Every rank holds a full replica of the module and runs forward and backward on its own slice of the
batch. Gradients are averaged across ranks during backward: parameters are grouped into buckets
(about ``bucket_cap_mb`` each, in the reverse order of ``module.parameters()``, which is roughly
the order backward produces their gradients; the first bucket holds at most 1 MiB so the first
reduction starts early); a hook on each parameter's gradient accumulation
copies the gradient into its bucket, and the moment a bucket is complete a non-blocking MPI
all-reduce starts on it, while backward goes on computing the earlier layers' gradients. Buckets
start in the same order on every rank (MPI requires it). A background thread keeps the
reductions moving while backward computes (MPI progresses only inside MPI calls; see
``ember.distributed._progress``; ``EMBER_DDP_PROGRESS_THREAD=0`` turns it off). When the last
bucket has started, the reduction is waited for and the averaged gradients are written to
``param.grad``.
"""
import contextlib
import os
import time

import numpy as np

from .. import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024
_MAX_MESSAGE_BYTES = 4 * 1024 * 1024


class _Bucket:
    __slots__ = ("index", "params", "offsets", "buf", "pending", "requests", "dtype")

    def __init__(self, index, params, dtype):
        self.index = index
        self.params = params
        self.dtype = dtype
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.buf = np.zeros(n, dtype)
        self.pending = len(params)
        self.requests = []


def _tensors_in(obj, out):
    from ..._tensor import Tensor
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


class DistributedDataParallel(Module):
    """Wrap ``module`` for data-parallel training; see the module docstring for how it works.

    - At construction rank 0's parameters and buffers are broadcast to every rank (after checking
      that all ranks hold the same parameter shapes).
    - ``broadcast_buffers=True`` re-broadcasts rank 0's buffers (e.g. BatchNorm running stats) at
      each forward in training mode.
    - ``no_sync()`` is a context manager under which backward accumulates local gradients without
      communicating; the first backward after it reduces the accumulated gradients.
    - ``find_unused_parameters=True`` walks the autograd graph of each forward's outputs to find the
      parameters that will get no gradient, and counts them ready at once (their contribution is
      zero; a parameter unused on every rank keeps its ``grad`` as it was). Without it, a parameter
      that gets no gradient leaves the reduction unfinished, which the next forward reports.

    ``device_ids``, ``output_device``, ``dim``, ``check_reduction`` and ``static_graph`` are
    accepted for PyTorch programs and change nothing (CPU only, one graph walk per forward at
    most); the averaged gradients are always views of the buckets, as with PyTorch's
    ``gradient_as_bucket_view=True``. ``process_group`` can only be the default group.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        from ... import distributed as dist
        if not dist.is_initialized():
            raise RuntimeError("DistributedDataParallel: the default process group has not been initialized; "
                               "call ember.distributed.init_process_group('mpi') first (under mpirun)")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, got {type(module).__name__}")
        if process_group is not None and process_group is not dist.group.WORLD:
            raise ValueError("DistributedDataParallel: ember has only the default process group "
                             "(process_group=None)")
        if bucket_cap_mb is None or bucket_cap_mb <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_cap_mb = bucket_cap_mb
        self.require_backward_grad_sync = True
        w = dist._get("DistributedDataParallel")
        object.__setattr__(self, "_world", w)
        seen, params = set(), []
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        object.__setattr__(self, "_params", params)
        self._verify_same_params(w)
        self._sync_from_rank0(params + self._buffers_list())
        self._build_buckets(int(bucket_cap_mb * 1024 * 1024))
        engine = None
        if w.size > 1 and os.environ.get("EMBER_DDP_PROGRESS_THREAD", "1") != "0":
            from ...distributed import _progress
            engine = _progress.get()
        object.__setattr__(self, "_engine", engine)
        object.__setattr__(self, "_views", [None] * len(params))   # per parameter: its grad in its bucket
        object.__setattr__(self, "_grad_hooks", [p.register_post_accumulate_grad_hook(self._make_hook(i))
                                                 for i, p in enumerate(params)])
        self._reset()

    # ---------------------------------------------------------------------------- construction
    def _buffers_list(self):
        return [b for b in self.module.buffers()]

    def _verify_same_params(self, w):
        import pickle
        from ... import distributed as dist
        mine = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        if w.size > 1:
            where = dist._begin(w, "DistributedDataParallel construction (comparing the models)")
            everyone = [pickle.loads(b) for b in dist._gather_bytes(w, where, pickle.dumps(mine))]
            for r, theirs in enumerate(everyone):
                if theirs != mine:
                    if len(theirs) != len(mine):
                        what = f"{len(mine)} parameters here (rank {w.rank}), {len(theirs)} on rank {r}"
                    else:
                        i = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b)
                        what = f"parameter {i} is {mine[i]} here (rank {w.rank}) but {theirs[i]} on rank {r}"
                    raise RuntimeError(f"DistributedDataParallel: the ranks hold different models: {what}")

    def _sync_from_rank0(self, tensors, root=0, what="broadcast of rank 0's parameters and buffers"):
        """Broadcast rank ``root``'s values of ``tensors``, coalesced into one buffer per dtype."""
        from ... import distributed as dist
        w = self._world
        if w.size == 1 or not tensors:
            return
        where = dist._begin(w, f"DistributedDataParallel {what}")
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(t._data.dtype, []).append(t)
        for dtype, ts in by_dtype.items():
            flat = np.concatenate([t._data.reshape(-1) for t in ts]).astype(dtype, copy=False)
            send = flat.view(np.uint8) if dtype == np.bool_ else flat
            if dtype == np.float16:
                send = send.view(np.uint16)
            dist._wait([w.comm.Ibcast(send, root=root)], where)
            off = 0
            for t in ts:
                n = t._data.size
                if w.rank != root:
                    t._data[...] = flat[off:off + n].reshape(t._data.shape)
                    t._bump()
                off += n

    def _build_buckets(self, cap_bytes):
        # the first bucket (the last layers, whose gradients come first) is small so that
        # communication starts early in backward, as PyTorch does
        first_cap = min(cap_bytes, _FIRST_BUCKET_BYTES)
        buckets, cur, cur_bytes, cur_dtype = [], [], 0, None
        index_of = {}
        for p in reversed(self._params):
            dtype = p._data.dtype
            cap = first_cap if not buckets else cap_bytes
            if cur and (cur_bytes + p._data.nbytes > cap or dtype != cur_dtype):
                buckets.append(_Bucket(len(buckets), cur, cur_dtype))
                cur, cur_bytes = [], 0
            cur.append(p)
            cur_bytes += p._data.nbytes
            cur_dtype = dtype
        if cur:
            buckets.append(_Bucket(len(buckets), cur, cur_dtype))
        for b in buckets:
            for j, p in enumerate(b.params):
                index_of[id(p)] = (b, j)
        object.__setattr__(self, "_buckets", buckets)
        object.__setattr__(self, "_slot", [index_of[id(p)] for p in self._params])

    # ------------------------------------------------------------------------------- iteration
    def _reset(self):
        object.__setattr__(self, "_ready", [False] * len(self._params))
        object.__setattr__(self, "_started", False)      # some hook fired this iteration
        object.__setattr__(self, "_next_launch", 0)
        object.__setattr__(self, "_used", None)
        for b in self._buckets:
            b.pending = len(b.params)
            b.requests = []

    def _make_hook(self, i):
        def hook(param):
            if self.require_backward_grad_sync and self._expecting:
                self._mark_ready(i, param)
        return hook

    _expecting = False

    def _mark_ready(self, i, param):
        if self._ready[i]:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {i} {tuple(param.shape)} got a gradient twice in one "
                "iteration (a second backward through the same forward, or a parameter shared outside "
                "the module); run one backward per forward, or use no_sync() for the extra ones")
        self._ready[i] = True
        object.__setattr__(self, "_started", True)
        b, j = self._slot[i]
        g = param.grad
        n = param.numel()
        dst = b.buf[b.offsets[j]:b.offsets[j] + n]
        if g is None:
            dst[...] = 0
        else:
            np.copyto(dst.reshape(g._data.shape), g._data, casting="unsafe")
        b.pending -= 1
        if b.pending == 0:
            self._launch_ready()
        elif self._next_launch < len(self._buckets):
            self._progress()

    def _progress(self):
        """Let MPI move the data of the reductions in flight (its progress runs inside MPI calls);
        with the progress thread this is its job."""
        if self._engine is not None:
            return
        reqs = [r for b in self._buckets[:self._next_launch] for r in b.requests]
        if reqs:
            from mpi4py import MPI
            MPI.Request.Testall(reqs)

    def _launch_ready(self):
        from mpi4py import MPI
        w = self._world
        buckets = self._buckets
        while self._next_launch < len(buckets) and buckets[self._next_launch].pending == 0:
            b = buckets[self._next_launch]
            if w.size > 1:
                # in pieces of at most 4 MiB: larger single messages are much slower through
                # OpenMPI's shared-memory path (measured here: 8 MiB took 15x the time of 4 MiB)
                step = max(1, _MAX_MESSAGE_BYTES // b.buf.itemsize)
                for lo in range(0, b.buf.size, step):
                    r = w.comm.Iallreduce(MPI.IN_PLACE, b.buf[lo:lo + step], MPI.SUM)
                    b.requests.append(r)
                    if self._engine is not None:
                        self._engine.watch(r)
            self._next_launch += 1
        if self._next_launch == len(buckets):
            self._finalize()
        else:
            self._progress()

    def _wait_reductions(self, where):
        """Wait for the buckets' reductions within the process group's timeout."""
        from ... import distributed as dist
        reqs = [r for b in self._buckets for r in b.requests]
        if not reqs:
            return
        if self._engine is not None:
            engine = self._engine
            poll = dist._poller(self._world, where, None, lambda: not engine.pending)
            try:
                engine.wait_all(poll)
            finally:
                self._world.last, self._world.waiting = where, None
        else:
            dist._wait(reqs, where)

    def _finalize(self):
        from mpi4py import MPI
        from ... import distributed as dist
        w = self._world
        where = dist._begin(w, "DistributedDataParallel gradient all_reduce")
        t0 = time.perf_counter()
        self._wait_reductions(where)
        # how long backward's end waited for the reductions (benchmarks read it)
        object.__setattr__(self, "last_wait_s", time.perf_counter() - t0)
        used = self._used
        if used is not None and w.size > 1:
            dist._wait([w.comm.Iallreduce(MPI.IN_PLACE, used, MPI.MAX)], where)
        from ..._tensor import new_tensor
        size = self._divisor
        views = self._views
        for b in self._buckets:
            if size > 1:
                np.divide(b.buf, size, out=b.buf)
            for j, p in enumerate(b.params):
                i = self._param_index[id(p)]
                if used is not None and not used[i]:
                    continue          # unused on every rank: grad stays as it was
                # as in PyTorch, the averaged gradient lands in a tensor this wrapper reuses every
                # iteration (here a view of the bucket): no new memory per step
                v = views[i]
                if v is None:
                    v = views[i] = new_tensor(b.buf[b.offsets[j]:b.offsets[j] + p.numel()].reshape(p._data.shape))
                else:
                    v._bump()
                if p._grad is not v:
                    p.grad = v
        object.__setattr__(self, "_expecting", False)
        self._reset()

    @property
    def _param_index(self):
        idx = self.__dict__.get("_pidx")
        if idx is None:
            idx = {id(p): i for i, p in enumerate(self._params)}
            object.__setattr__(self, "_pidx", idx)
        return idx

    # --------------------------------------------------------------------------------- forward
    def forward(self, *inputs, **kwargs):
        import ember
        if self._started:
            missing = [i for i, r in enumerate(self._ready) if not r]
            self._reset()
            object.__setattr__(self, "_expecting", False)
            raise RuntimeError(
                "DistributedDataParallel: expected to have finished reduction in the prior iteration before "
                "starting a new one: parameters " + ", ".join(map(str, missing[:10])) +
                (" ..." if len(missing) > 10 else "") + " received no gradient. Pass "
                "find_unused_parameters=True to DistributedDataParallel if the module has parameters that "
                "do not take part in computing the loss, and make sure every output takes part in it")
        root = 0
        if self._join_config is not None and self._join_config.enable:
            root = self._join_notify()    # the other side: a joined rank's _JoinHook.main_hook
        if self.training and self.broadcast_buffers and self._world.size > 1:
            bufs = self._buffers_list()
            if bufs:
                self._sync_from_rank0(bufs, root, "broadcast of the buffers")
        self._reset()                     # a forward whose backward never came leaves nothing behind
        object.__setattr__(self, "_expecting", False)
        out = self.module(*inputs, **kwargs)
        if ember.is_grad_enabled() and self.require_backward_grad_sync and self._params:
            object.__setattr__(self, "_expecting", True)
            if self.find_unused_parameters:
                self._mark_unused(out)
        return out

    def _mark_unused(self, out):
        """Find the parameters the outputs' graph does not reach; they count as ready right away."""
        reached = set()
        stack = [t.grad_fn for t in _tensors_in(out, []) if t.grad_fn is not None]
        direct = {id(t) for t in _tensors_in(out, []) if t.grad_fn is None and t.requires_grad}
        seen, alive = set(), []      # keep visited nodes alive: leaf nodes may be made on demand, and a
        while stack:                 # freed node's id could be reused by the next one
            fn = stack.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            alive.append(fn)
            var = getattr(fn, "variable", None)
            if var is not None:
                reached.add(id(var))
            for nxt, _ in fn.next_functions:
                if nxt is not None:
                    stack.append(nxt)
        reached |= direct
        used = np.array([id(p) in reached for p in self._params], np.uint8)
        object.__setattr__(self, "_used", used)
        for i, p in enumerate(self._params):
            if not used[i]:
                if p._grad is not None and p._grad is self._views[i]:
                    p.grad = p._grad.clone()         # its slot is about to be zeroed
                self._ready[i] = True
                b, j = self._slot[i]
                b.buf[b.offsets[j]:b.offsets[j] + p.numel()] = 0
                b.pending -= 1
        if not used.any():               # no hook will fire: reduce (zeros) now, as the other ranks expect
            object.__setattr__(self, "_started", True)
            self._launch_ready()

    # ------------------------------------------------------------------------ uneven inputs (Join)
    _join_config = None
    _divisor_override = None

    @property
    def _divisor(self):
        return self._divisor_override or self._world.size

    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        """Context manager for training with uneven inputs: a rank whose data runs out shadows the
        collectives of the ranks still training (zero gradients) until all have finished, as
        PyTorch's ``DistributedDataParallel.join``. See ``ember.distributed.algorithms.Join``."""
        from ...distributed.algorithms import Join
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        import ember
        return ember.device("cpu")

    @property
    def join_process_group(self):
        from ... import distributed as dist
        return dist.group.WORLD

    def _join_notify(self):
        """One all-reduce per iteration with the ranks that have joined: who is still training.
        Returns the rank whose buffers are authoritative (the highest still training)."""
        from ...distributed.algorithms import Join
        active = Join.notify_join_context(self)
        cfg = self._join_config
        n = int(active.sum())
        if not cfg.divide_by_initial_world_size:
            object.__setattr__(self, "_divisor_override", n)
        return int(np.nonzero(active)[0].max())

    def _shadow_iteration(self, active):
        """A joined rank's part of one iteration of the others: the buffers' broadcast and the
        gradient reduction, with zero gradients."""
        from mpi4py import MPI
        from ... import distributed as dist
        w = self._world
        root = int(np.nonzero(active)[0].max())
        if self.training and self.broadcast_buffers and w.size > 1:
            bufs = self._buffers_list()
            if bufs:
                self._sync_from_rank0(bufs, root, "broadcast of the buffers")
        self._reset()
        for b in self._buckets:
            b.buf[...] = 0
            b.pending = 0
        object.__setattr__(self, "_expecting", False)
        self._launch_ready_no_finalize()
        where = dist._begin(w, "DistributedDataParallel gradient all_reduce")
        self._wait_reductions(where)
        if self.find_unused_parameters and w.size > 1:
            used = np.zeros(len(self._params), np.uint8)
            dist._wait([w.comm.Iallreduce(MPI.IN_PLACE, used, MPI.MAX)], where)
        self._reset()

    def _launch_ready_no_finalize(self):
        from mpi4py import MPI
        w = self._world
        for b in self._buckets:
            step = max(1, _MAX_MESSAGE_BYTES // b.buf.itemsize)
            for lo in range(0, b.buf.size, step):
                r = w.comm.Iallreduce(MPI.IN_PLACE, b.buf[lo:lo + step], MPI.SUM)
                b.requests.append(r)
                if self._engine is not None:
                    self._engine.watch(r)
        object.__setattr__(self, "_next_launch", len(self._buckets))

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate local gradients without any communication."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


class _DDPJoinHook:
    """What a rank that has run out of inputs does for DDP while the others train (see Join)."""

    def __init__(self, ddp, divide_by_initial_world_size):
        self.ddp = ddp
        self.divide = divide_by_initial_world_size

    def main_hook(self):
        self.ddp._shadow_iteration(self.ddp._join_config.context.last_active)

    def post_hook(self, is_last_joiner):
        """Every rank ends with the model of the last rank to join (the one that trained longest)."""
        ddp = self.ddp
        last = ddp._join_config.context.last_active
        root = int(np.nonzero(last)[0].max()) if last is not None else 0
        ddp._sync_from_rank0(ddp._params + ddp._buffers_list(), root, "final model sync after join")
        object.__setattr__(ddp, "_divisor_override", None)
