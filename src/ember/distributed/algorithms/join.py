"""Join: training with uneven inputs across ranks, as ``torch.distributed.algorithms.join``.

Each iteration, every rank still training all-reduces a one-hot vector of itself
(``Join.notify_join_context``, called by the joinable, e.g. ``DistributedDataParallel.forward``);
a rank whose inputs have run out leaves its loop and, in ``Join.__exit__``, all-reduces zeros in
its place: while the sum says some ranks still train, it runs each joinable's ``main_hook``
(for DDP: the same buffer broadcast and gradient all-reduce as a training iteration, with zero
gradients), so that every collective finds every rank. When no rank trains any more, each
joinable's ``post_hook`` runs (DDP: every rank takes the model of the last rank to join).
"""
import numpy as np

__all__ = ["Join", "Joinable", "JoinHook"]


class JoinHook:
    """What a joined rank runs for a joinable: ``main_hook`` once per iteration of the others,
    ``post_hook(is_last_joiner)`` when all have joined."""

    def main_hook(self):
        pass

    def post_hook(self, is_last_joiner):
        pass


class Joinable:
    """A class whose collectives a joined rank must shadow: provides ``join_hook(**kwargs)``,
    ``join_device`` and ``join_process_group``, and calls ``Join.notify_join_context(self)`` once
    per iteration before its collectives."""

    def join_hook(self, **kwargs):
        raise NotImplementedError

    @property
    def join_device(self):
        raise NotImplementedError

    @property
    def join_process_group(self):
        raise NotImplementedError


class _JoinConfig:
    __slots__ = ("enable", "throw_on_early_termination", "is_first_joinable", "divide_by_initial_world_size",
                 "context")

    def __init__(self, enable, throw, first, divide, context):
        self.enable = enable
        self.throw_on_early_termination = throw
        self.is_first_joinable = first
        self.divide_by_initial_world_size = divide
        self.context = context


class Join:
    """``with Join([ddp_model, ...]):`` around a training loop whose number of iterations differs
    between ranks. ``throw_on_early_termination=True`` raises on every rank as soon as one rank has
    run out of inputs, instead of shadowing."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("Join: the joinables to join must be a non-empty list")
        self._joinables = list(joinables)
        self._hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw = throw_on_early_termination
        self._divide = kwargs.get("divide_by_initial_world_size", True)
        self._last_active = None
        for i, j in enumerate(self._joinables):
            object.__setattr__(j, "_join_config",
                               _JoinConfig(enable, throw_on_early_termination, i == 0, self._divide, self))

    def __enter__(self):
        return self

    def _exchange(self, active):
        from ... import distributed as dist
        w = dist._get("Join")
        v = np.zeros(w.size, np.int64)
        v[w.rank] = 1 if active else 0
        if w.size > 1:
            from mpi4py import MPI
            where = dist._begin(w, "Join all_reduce (which ranks still have inputs)")
            dist._wait([w.comm.Iallreduce(MPI.IN_PLACE, v, MPI.SUM)], where)
        if v.any():
            self._last_active = v     # the last iteration's set: the same collective on every rank
        return v

    @property
    def last_active(self):
        """Per rank, 1 if it still trained in the latest iteration (None before any)."""
        return self._last_active

    @staticmethod
    def notify_join_context(joinable):
        """Called by a joinable once per iteration before its collectives: which ranks still train
        (a vector of 0/1 per rank). Only the first joinable of a Join communicates."""
        cfg = getattr(joinable, "_join_config", None)
        if cfg is None or not cfg.enable:
            return None
        ctx = cfg.context
        if not cfg.is_first_joinable:
            return ctx._last_active
        v = ctx._exchange(True)
        if cfg.throw_on_early_termination and not v.all():
            raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return v

    def __exit__(self, exc_type, exc, tb):
        try:
            if not self._enable or exc_type is not None:
                return False
            if self._throw:
                # tell the ranks still training (their notify raises), then raise here as well
                self._exchange(False)
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
            shadowed = False
            while True:
                v = self._exchange(False)
                if not v.any():
                    break
                shadowed = True
                for h in self._hooks:
                    h.main_hook()
            for h in self._hooks:
                h.post_hook(not shadowed)
            return False
        finally:
            for j in self._joinables:
                object.__setattr__(j, "_join_config", None)
