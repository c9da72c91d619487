"""Run under mpirun -n N: every collective against NumPy on the data of all ranks (regenerated from
each rank's seed), for every reduction op and several dtypes, sync and async; errors that must be
raised. Prints 'OK <rank>' at the end; any failure raises, and the excepthook aborts the job."""
import numpy as np

import _common  # noqa: F401
import ember
import ember.distributed as dist

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
R = dist.ReduceOp
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.float16, np.bool_]


def data(r, dtype, shape=(3, 5)):
    g = np.random.default_rng(1000 + r)
    if dtype == np.bool_:
        return g.random(shape) < 0.5
    if np.dtype(dtype).kind == "f":
        return (g.standard_normal(shape) + 0.5).astype(dtype)
    return g.integers(-4, 5, shape).astype(dtype)


def expect(op, arrs):
    a = np.stack(arrs)
    if a.dtype == np.bool_:
        return a.any(0) if op in (R.SUM, R.MAX) else a.all(0)
    acc = a.astype(np.float64) if a.dtype == np.float16 else a
    out = {"SUM": acc.sum(0), "AVG": acc.sum(0) / world, "PRODUCT": acc.prod(0), "MIN": acc.min(0),
           "MAX": acc.max(0)}[op.name]
    return out.astype(a.dtype)


def close(got, want, what):
    if got.dtype.kind == "f":
        tol = 1e-2 if got.dtype == np.float16 else 1e-5
        ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    else:
        ok = np.array_equal(got, want)
    if not ok or got.dtype != want.dtype:
        raise AssertionError(f"rank {rank}: {what}: got {got} ({got.dtype}), want {want} ({want.dtype})")


everyone = lambda dt, shape=(3, 5): [data(r, dt, shape) for r in range(world)]  # noqa: E731

# all_reduce: every op, every dtype, sync and async, contiguous and strided (a transposed view)
for dt in DTYPES:
    for op in (R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX):
        if op is R.AVG and np.dtype(dt).kind not in "f":
            t = ember.tensor(data(rank, dt))
            try:
                dist.all_reduce(t, op)
            except RuntimeError as e:
                assert "AVG" in str(e), e
            else:
                raise AssertionError(f"all_reduce AVG on {dt} should raise")
            continue
        want = expect(op, everyone(dt))
        t = ember.tensor(data(rank, dt))
        v0 = t._version
        assert dist.all_reduce(t, op) is None
        close(t.numpy(), want, f"all_reduce {op} {np.dtype(dt)}")
        assert t._version > v0
        t = ember.tensor(data(rank, dt))
        work = dist.all_reduce(t, op=op, async_op=True)
        work.wait()
        assert work.is_completed()
        close(t.numpy(), want, f"async all_reduce {op} {np.dtype(dt)}")
        base = ember.tensor(np.ascontiguousarray(data(rank, dt).T))
        view = base.t()                     # non-contiguous: reduced through a copy, written back
        dist.all_reduce(view, op)
        close(base.numpy().T, want, f"all_reduce on a strided view {op} {np.dtype(dt)}")

# broadcast from every source
for dt in DTYPES:
    for src in range(world):
        t = ember.tensor(data(rank, dt))
        dist.broadcast(t, src)
        close(t.numpy(), data(src, dt), f"broadcast src={src} {np.dtype(dt)}")
        t = ember.tensor(data(rank, dt))
        dist.broadcast(t, src=src, async_op=True).wait()
        close(t.numpy(), data(src, dt), f"async broadcast src={src} {np.dtype(dt)}")

# all_gather / all_gather_into_tensor
for dt in DTYPES:
    outs = [ember.tensor(np.zeros((3, 5), dt)) for _ in range(world)]
    dist.all_gather(outs, ember.tensor(data(rank, dt)))
    for r in range(world):
        close(outs[r].numpy(), data(r, dt), f"all_gather part {r} {np.dtype(dt)}")
    outs = [ember.tensor(np.zeros((3, 5), dt)) for _ in range(world)]
    dist.all_gather(outs, ember.tensor(data(rank, dt)), async_op=True).wait()
    for r in range(world):
        close(outs[r].numpy(), data(r, dt), f"async all_gather part {r} {np.dtype(dt)}")
    out = ember.tensor(np.zeros((3 * world, 5), dt))
    dist.all_gather_into_tensor(out, ember.tensor(data(rank, dt)))
    close(out.numpy(), np.concatenate(everyone(dt)), f"all_gather_into_tensor {np.dtype(dt)}")

# reduce_scatter / reduce_scatter_tensor
for dt in DTYPES:
    for op in (R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX):
        if op is R.AVG and np.dtype(dt).kind != "f":
            continue
        ins = everyone(dt, (world, 4))       # rank r's input list is its rows
        want = expect(op, ins)[rank]
        out = ember.tensor(np.zeros(4, dt))
        dist.reduce_scatter(out, [ember.tensor(row) for row in data(rank, dt, (world, 4))], op)
        close(out.numpy(), want, f"reduce_scatter {op} {np.dtype(dt)}")
        out = ember.tensor(np.zeros(4, dt))
        dist.reduce_scatter_tensor(out, ember.tensor(data(rank, dt, (world, 4))), op, async_op=True).wait()
        close(out.numpy(), want, f"async reduce_scatter_tensor {op} {np.dtype(dt)}")

# barrier, objects
dist.barrier()
dist.barrier(async_op=True).wait()
objs = [None] * world
dist.all_gather_object(objs, {"rank": rank})
assert objs == [{"rank": r} for r in range(world)], objs
lst = [rank, "x"]
dist.broadcast_object_list(lst, src=world - 1)
assert lst == [world - 1, "x"], lst

# mismatched shapes across ranks: a clear error on every rank, not a hang
if world > 1:
    t = ember.zeros(3 + rank)
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        assert "do not match" in str(e) and "rank 0" in str(e), e
    else:
        raise AssertionError("all_reduce with mismatched shapes should raise")
# local mistakes
for bad, kind in ((lambda: dist.all_gather([ember.zeros(3)] * (world + 1), ember.zeros(3)), ValueError),
                  (lambda: dist.all_gather([ember.zeros(2)] * world, ember.zeros(3)), RuntimeError),
                  (lambda: dist.broadcast(ember.zeros(3), src=world), ValueError),
                  (lambda: dist.all_reduce(ember.zeros(3), op="sum"), TypeError),
                  (lambda: dist.reduce_scatter_tensor(ember.zeros(3), ember.zeros(3 * world + 1)), RuntimeError)):
    try:
        bad()
    except kind:
        pass
    else:
        raise AssertionError(f"expected {kind.__name__}")
dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"OK {rank}", flush=True)
