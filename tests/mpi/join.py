"""Run under mpirun -n 2: uneven inputs with DistributedDataParallel.join() (rank 1 has 3 batches,
rank 0 has 7). Every rank must end the loop (no hang), the gradients of the iterations where rank 1
has joined are rank 0's alone divided by the world size (as PyTorch's default
divide_by_initial_world_size=True), and both ranks end with the same parameters.
Also Join with throw_on_early_termination=True raises on both ranks. Prints 'OK <rank>'."""
import numpy as np

import _common  # noqa: F401
import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.algorithms import Join
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
LR = 0.1


def make_model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def batch(r, step):
    g = np.random.default_rng(1000 * r + step)
    return ember.tensor(g.standard_normal((5, 4)).astype(np.float32)), ember.tensor(g.integers(0, 2, 5))


steps = {0: 7, 1: 3}
model = make_model()
ddp = DDP(model, bucket_cap_mb=0.0001)
ref = make_model()          # rank 0 replays what it should get: averaged over the ranks still in
with ddp.join():
    for step in range(steps[rank]):
        x, y = batch(rank, step)
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        with ember.no_grad():
            for p in model.parameters():
                p -= LR * p.grad
                p.grad = None
        if rank == 0:
            grads = []
            for r in range(world):
                if step < steps[r]:
                    ref.zero_grad()
                    xr, yr = batch(r, step)
                    ref.load_state_dict({k: v for k, v in model.state_dict().items() if "running" in k
                                         or "num_batches" in k}, strict=False)
                    F.cross_entropy(ref(xr), yr).backward()
                    grads.append([p.grad.numpy().copy() for p in ref.parameters()])
                else:
                    grads.append([np.zeros(p.shape, np.float32) for p in ref.parameters()])
            with ember.no_grad():
                for i, p in enumerate(ref.parameters()):
                    p -= LR * ember.tensor(sum(g[i] for g in grads) / world)
params = [p.detach().numpy().copy() for p in model.parameters()]
everyone = [None] * world
dist.all_gather_object(everyone, params)
for a, b in zip(everyone[0], everyone[1]):
    assert np.array_equal(a, b), "ranks differ after join"
if rank == 0:
    for p, q in zip(model.parameters(), ref.parameters()):
        err = np.abs(p.detach().numpy() - q.detach().numpy()).max()
        assert err < 1e-5, f"join: parameters differ from the reference by {err}"

# throw_on_early_termination: every rank raises once one has run out
raised = False
try:
    with Join([ddp], throw_on_early_termination=True):
        for step in range(steps[rank]):
            x, y = batch(rank, step)
            F.cross_entropy(ddp(x), y).backward()
except RuntimeError as e:
    raised = "exhausted inputs" in str(e)
assert raised, f"rank {rank}: throw_on_early_termination did not raise"
dist.barrier()
print(f"OK {rank}", flush=True)
dist.destroy_process_group()
