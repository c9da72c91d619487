"""Run under mpirun -n 2 with one argument naming a case; each case used to hang forever and must
now end the job within the timeout, with a message naming the collective and the missing ranks.

    timeout   rank 1 is busy (sleeps) while rank 0 waits in all_reduce; timeout=2 s
    exit      rank 1 calls sys.exit(3) in the middle of DDP training
    uneven    rank 1 stops after 10 steps and waits in a barrier; rank 0 goes on training
    exitlate  rank 1 ends its script (no destroy_process_group) while rank 0 still calls barrier
"""
import datetime
import sys
import time

import numpy as np

import _common  # noqa: F401
import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP

case = sys.argv[1]
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=float(sys.argv[2]) if len(sys.argv) > 2 else 3))
rank = dist.get_rank()
print(f"START {rank}", flush=True)


def train(steps, ddp):
    for step in range(steps):
        g = np.random.default_rng(step)
        x = ember.tensor(g.standard_normal((4, 3)).astype(np.float32))
        F.mse_loss(ddp(x), ember.zeros(4, 2)).backward()


if case == "timeout":
    if rank == 1:
        time.sleep(30)
    dist.all_reduce(ember.ones(3))
elif case in ("exit", "uneven"):
    ember.manual_seed(0)
    ddp = DDP(nn.Linear(3, 2))
    if rank == 1:
        train(10, ddp)
        if case == "exit":
            sys.exit(3)
        dist.barrier()
    else:
        train(1000, ddp)
elif case == "exitlate":
    if rank == 0:
        time.sleep(1)
        dist.barrier()
print(f"FINISHED {rank}", flush=True)
