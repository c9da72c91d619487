"""Run under mpirun -n 2: rank 1 raises while rank 0 waits in a barrier. The excepthook that
init_process_group installs must abort the whole job (non-zero exit) instead of leaving rank 0 hung."""
import _common  # noqa: F401
import ember.distributed as dist

dist.init_process_group("mpi")
if dist.get_rank() == 1:
    raise ValueError("rank 1 fails on purpose")
dist.barrier()
print("rank 0 passed the barrier: the failure did not abort the job", flush=True)
