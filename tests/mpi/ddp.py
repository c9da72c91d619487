"""Run under mpirun -n 2: DistributedDataParallel against single-process training.

Every rank also trains a reference copy of the model on the concatenation of all ranks' batches
(the same data, regenerated from a seed); after each step DDP's parameters must equal the
reference's to 1e-6. Also: rank 0's parameters and buffers win at construction, no_sync()
accumulation, find_unused_parameters, and the error for an unfinished reduction.
Prints 'OK <rank>' at the end."""
import copy

import numpy as np

import _common  # noqa: F401
import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
B, LR = 4, 0.1


def make_model(seed):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 3))


def batch(step):
    g = np.random.default_rng(100 + step)
    x = g.standard_normal((world * B, 6)).astype(np.float32)
    y = g.integers(0, 3, world * B)
    return ember.tensor(x), ember.tensor(y)


def sgd(params):
    with ember.no_grad():
        for p in params:
            p -= LR * p.grad
            p.grad = None


def assert_params_equal(a, b, what, tol=1e-6):
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        err = np.abs(p.detach().numpy() - q.detach().numpy()).max()
        if not err <= tol:
            raise AssertionError(f"rank {rank}: {what}: parameter {name} differs by {err}")


# 1. construction broadcasts rank 0's parameters; several buckets (tiny cap) so they overlap backward
local = make_model(seed=rank)                 # each rank starts different
ref = make_model(seed=0)                      # what rank 0 starts with
ddp = DDP(local, bucket_cap_mb=0.002)
assert len(ddp._buckets) >= 3, len(ddp._buckets)
assert_params_equal(local, ref, "after construction", tol=0)

# 2. several steps: DDP on rank slices == one process on the concatenated batch
for step in range(5):
    x, y = batch(step)
    mine = slice(rank * B, (rank + 1) * B)
    F.cross_entropy(ddp(x[mine]), y[mine]).backward()
    sgd(local.parameters())
    F.cross_entropy(ref(x), y).backward()
    sgd(ref.parameters())
    assert_params_equal(local, ref, f"step {step}")

# 2b. an optimizer that zeroes gradients in place (the averaged grads are views of DDP's buckets)
opt_l = ember.optim.SGD(local.parameters(), lr=LR, momentum=0.9)
opt_r = ember.optim.SGD(ref.parameters(), lr=LR, momentum=0.9)
for step in range(5, 8):
    x, y = batch(step)
    mine = slice(rank * B, (rank + 1) * B)
    for model, opt, xs, ys in ((ddp, opt_l, x[mine], y[mine]), (ref, opt_r, x, y)):
        opt.zero_grad(set_to_none=False)
        F.cross_entropy(model(xs), ys).backward()
        opt.step()
    assert_params_equal(local, ref, f"SGD momentum step {step}")
local.zero_grad(set_to_none=True)
ref.zero_grad(set_to_none=True)

# 3. no_sync: two local micro-batches accumulate, the third backward reduces everything
x, y = batch(10)
micro = [slice(k * world * 2 + rank * 2, k * world * 2 + rank * 2 + 2) for k in range(2)]  # 2 samples each
with ddp.no_sync():
    F.cross_entropy(ddp(x[micro[0]]), y[micro[0]], reduction="sum").backward()
g_local = [p.grad.numpy().copy() for p in local.parameters()]
F.cross_entropy(ddp(x[micro[1]]), y[micro[1]], reduction="sum").backward()
F.cross_entropy(ref(x[:world * 4]), y[:world * 4], reduction="sum").backward()
for p, q, g0 in zip(local.parameters(), ref.parameters(), g_local):
    # averaged over ranks: the reference's full sum divided by the world size
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy() / world, rtol=1e-5, atol=1e-6)
    assert not np.allclose(g0, p.grad.numpy())
sgd(local.parameters())
ref.zero_grad(set_to_none=True)

# 4. buffers: rank 0's running statistics are broadcast at construction and at each training forward
bn = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5))
bn[1].running_mean.fill_(float(rank + 1))
dbn = DDP(bn)
assert np.allclose(bn[1].running_mean.numpy(), 1.0), bn[1].running_mean
seen = []
bn[1].register_forward_pre_hook(lambda mod, args: seen.append(mod.running_mean.numpy().copy()))
dbn(ember.randn(3 + rank, 4) * (rank + 1)).sum().backward()   # each rank's statistics drift apart ...
dbn(ember.randn(3, 4)).sum().backward()                      # ... and the next forward starts from rank 0's
everyone = [None] * world
dist.all_gather_object(everyone, seen[1])
assert all(np.array_equal(everyone[0], e) for e in everyone), everyone
assert not np.allclose(bn[1].running_mean.numpy(), 1.0)


# 5. find_unused_parameters: a branch only rank 0 uses, and one no rank uses
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)      # used by rank 0 only
        self.never = nn.Linear(3, 3)  # used by nobody

    def forward(self, x, use_b):
        h = self.a(x)
        return self.b(h) if use_b else h


ember.manual_seed(0)
m = Branchy()
dm = DDP(m, find_unused_parameters=True, bucket_cap_mb=0.0001)
xs = ember.ones(2, 3) * (rank + 1)
dm(xs, use_b=(rank == 0)).sum().backward()
assert m.never.weight.grad is None and m.never.bias.grad is None
# b's gradient: rank 0's own, averaged with rank 1's zero
ref_b = copy.deepcopy(m)
ref_b.zero_grad(set_to_none=True)
ref_b(ember.ones(2, 3), True).sum().backward()
np.testing.assert_allclose(m.b.weight.grad.numpy(), ref_b.b.weight.grad.numpy() / world, rtol=1e-5, atol=1e-6)
# a's gradient: the average of both ranks' gradients
ga = []
for r in range(world):
    c = copy.deepcopy(m)
    c.zero_grad(set_to_none=True)
    c(ember.ones(2, 3) * (r + 1), r == 0).sum().backward()
    ga.append(c.a.weight.grad.numpy())
np.testing.assert_allclose(m.a.weight.grad.numpy(), np.mean(ga, 0), rtol=1e-5, atol=1e-5)

# a parameter used in one iteration and unused in the next keeps the gradient it had
gb = m.b.weight.grad.numpy().copy()
dm(xs, use_b=False).sum().backward()
np.testing.assert_array_equal(m.b.weight.grad.numpy(), gb)

# 6. without find_unused_parameters an unused parameter leaves the reduction unfinished: the next
# forward says so (every rank takes the same path, so the collectives still pair up)
ember.manual_seed(0)
m2 = Branchy()
d2 = DDP(m2)
d2(xs, use_b=False).sum().backward()
try:
    d2(xs, use_b=False)
except RuntimeError as e:
    assert "find_unused_parameters=True" in str(e), e
else:
    raise AssertionError("an unfinished reduction should be reported")

dist.barrier()
dist.destroy_process_group()
print(f"OK {rank}", flush=True)
