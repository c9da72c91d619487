"""A background thread that drives non-blocking MPI operations forward.

MPI libraries move the data of a non-blocking collective (Iallreduce) only while some thread is
inside an MPI call; a process busy computing backward makes none, so the reduction would wait for
the final ``Wait``. This thread tests the requests it is given every ~100 us (mpi4py releases the
GIL inside MPI calls, and NumPy inside its kernels), so communication really runs while backward
computes. Needs MPI_THREAD_MULTIPLE; ``get()`` returns None where the library does not offer it.

Only this thread touches the requests handed to it; other threads wait on ``wait_all``.
"""
import atexit
import threading
import time

_engine = None
_lock = threading.Lock()


class _Progress:
    def __init__(self, MPI):
        self.MPI = MPI
        self.cond = threading.Condition()
        self.pending = []
        self.error = None
        self.stopping = False
        self.waiters = 0                # someone blocks in wait_all: poll without sleeping
        self.thread = threading.Thread(target=self._loop, name="ember-mpi-progress", daemon=True)
        self.thread.start()
        atexit.register(self.stop)      # runs before mpi4py's MPI_Finalize (registered earlier)

    def stop(self, timeout=5.0):
        """Let requests in flight finish, then end the thread (no MPI call after this)."""
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.thread.join(timeout)

    def watch(self, request):
        with self.cond:
            self.pending.append(request)
            self.cond.notify_all()

    def wait_all(self, poll=None):
        """Block until every watched request has completed; ``poll()``, when given, runs every few
        milliseconds meanwhile (it may raise: a timeout, a peer gone)."""
        with self.cond:
            self.waiters += 1
            try:
                while self.pending and self.error is None:
                    self.cond.wait(None if poll is None else 0.002)
                    if poll is not None and self.pending and self.error is None:
                        poll()
            finally:
                self.waiters -= 1
            if self.error is not None:
                err, self.error = self.error, None
                raise RuntimeError(f"MPI progress thread failed: {err}")

    def _loop(self):
        MPI = self.MPI
        while True:
            with self.cond:
                while not self.pending and not self.stopping:
                    self.cond.wait()
                if not self.pending:
                    return
                reqs = list(self.pending)
            try:
                done = MPI.Request.Testall(reqs)
            except Exception as e:  # noqa: BLE001  (reported to the waiting thread)
                with self.cond:
                    self.error = e
                    self.pending.clear()
                    self.cond.notify_all()
                continue
            if done:
                with self.cond:
                    del self.pending[:len(reqs)]
                    if not self.pending:
                        self.cond.notify_all()
            elif not self.waiters:
                time.sleep(0.0001)


def get():
    """The process's progress thread, started on first use; None without MPI_THREAD_MULTIPLE."""
    global _engine
    if _engine is None:
        with _lock:
            if _engine is None:
                from mpi4py import MPI
                _engine = _Progress(MPI) if MPI.Query_thread() >= MPI.THREAD_MULTIPLE else False
    return _engine or None
