"""Data-parallel training on MPI: samples/s of an MLP train step on 1 and 2 ranks, and how much of
the gradient all-reduce DistributedDataParallel hides behind backward.

    python benchmarks/bench_distributed.py [--ranks 1 2] [--steps 30] [--lib ember torch] [--json out.json]

launches ``mpirun -n R`` of this file for each R (the worker mode below) and prints one row per
library and world size; PyTorch's DistributedDataParallel over gloo runs the same MLP step when
torch is installed. It is not part of ``benchmarks/run.py``'s side-by-side table (``WORKLOADS`` is empty):
a multi-process job cannot be timed as a step inside one process.

What is measured, per rank, after warm-up, each number the median over the steps:
- step: forward + backward (with DDP's bucketed all-reduce) + SGD update; samples/s is the global
  batch (ranks x per-rank batch) divided by the step time.
- exposed: how long the end of backward waited for the reductions, on the rank that got there
  last (the other ranks' extra wait is for that rank, not for the network). Backward with sync and
  backward under ``no_sync()`` (no communication) are shown too.
- comm: the same bucket all-reduces run back to back, blocking, with nothing to overlap.
- hidden share = 1 - exposed / comm (clamped to 0..1).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

WORKLOADS = []
HERE = os.path.dirname(os.path.abspath(__file__))


def _model_batch_sgd(lib, sizes, batch, rank):
    """The MLP (Linear/ReLU stack of ``sizes``), this rank's batch and a plain SGD step: the same for
    ember and PyTorch (``lib`` is either module)."""
    import numpy as np
    lib.manual_seed(0)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [lib.nn.Linear(a, b), lib.nn.ReLU()]
    model = lib.nn.Sequential(*layers[:-1])
    params = list(model.parameters())
    g = np.random.default_rng(rank)
    x = lib.tensor(g.standard_normal((batch, sizes[0])).astype(np.float32))
    y = lib.tensor(g.integers(0, sizes[-1], batch))

    def sgd():
        with lib.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=0.01)
                p.grad = None
    return model, x, y, sgd


def worker(steps, batch, sizes, bucket_cap_mb, threads):
    sys.path.insert(0, os.path.join(HERE, "..", "src"))
    import ember
    import ember.distributed as dist
    import ember.nn.functional as F
    from ember.nn.parallel import DistributedDataParallel as DDP
    from mpi4py import MPI

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.set_num_threads(threads)
    model, x, y, sgd = _model_batch_sgd(ember, sizes, batch, rank)
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)

    def timed(fn):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def step():
        F.cross_entropy(ddp(x), y).backward()
        sgd()

    waits = []

    def bw_sync():
        loss = F.cross_entropy(ddp(x), y)
        t = timed(loss.backward)
        waits.append(ddp.last_wait_s)
        sgd()
        return t

    def bw_local():
        with ddp.no_sync():
            loss = F.cross_entropy(ddp(x), y)
            t = timed(loss.backward)
        sgd()
        return t

    def comm():
        bufs = [b.buf for b in ddp._buckets]
        dist.barrier()
        t0 = time.perf_counter()
        for buf in bufs:
            ddp._world.comm.Allreduce(MPI.IN_PLACE, buf, MPI.SUM)
        return time.perf_counter() - t0

    for _ in range(3):
        step()
    t_step = statistics.median(timed(step) for _ in range(steps))
    t_sync = statistics.median(bw_sync() for _ in range(steps))
    t_local = statistics.median(bw_local() for _ in range(steps))
    t_comm = statistics.median(comm() for _ in range(steps)) if world > 1 else 0.0
    mine = [t_step, t_sync, t_local, t_comm, waits]
    allr = [None] * world
    dist.all_gather_object(allr, mine)
    if rank == 0:
        t_step, t_sync, t_local, t_comm = (max(r[i] for r in allr) for i in range(4))
        # the rank that reaches the end of backward last waits only for what is left of the
        # communication; the others also wait for it (load imbalance, not communication)
        exposed = statistics.median(min(r[4][k] for r in allr) for k in range(len(waits)))
        hidden = None if t_comm == 0 else max(0.0, min(1.0, 1 - exposed / t_comm))
        nparams = sum(p.numel() for p in model.parameters())
        print(json.dumps({"lib": "ember", "ranks": world, "batch_per_rank": batch, "params": nparams,
                          "grad_mb": nparams * 4 / 2 ** 20, "buckets": len(ddp._buckets),
                          "bucket_cap_mb": bucket_cap_mb, "blas_threads": threads,
                          "step_s": t_step, "samples_per_s": world * batch / t_step,
                          "backward_sync_s": t_sync, "backward_local_s": t_local, "comm_s": t_comm,
                          "exposed_comm_s": exposed if world > 1 else 0.0, "hidden_share": hidden}), flush=True)
    dist.destroy_process_group()


def worker_torch(steps, batch, sizes, bucket_cap_mb, threads, port):
    """The same measurement with PyTorch's DDP over gloo (rank and size from the MPI launcher)."""
    import torch
    import torch.distributed as tdist
    import torch.nn.functional as F

    rank, world = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.set_num_threads(threads)
    model, x, y, sgd = _model_batch_sgd(torch, sizes, batch, rank)
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)

    def timed(fn):
        tdist.barrier()
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def step():
        F.cross_entropy(ddp(x), y).backward()
        sgd()

    def bw(sync):
        ctx = ddp.no_sync() if not sync else _null()
        with ctx:
            loss = F.cross_entropy(ddp(x), y)
            t = timed(loss.backward)
        sgd()
        return t

    for _ in range(3):
        step()
    mine = [statistics.median(timed(step) for _ in range(steps)),
            statistics.median(bw(True) for _ in range(steps)),
            statistics.median(bw(False) for _ in range(steps))]
    allr = [None] * world
    tdist.all_gather_object(allr, mine)
    if rank == 0:
        t_step, t_sync, t_local = (max(r[i] for r in allr) for i in range(3))
        print(json.dumps({"lib": "torch", "ranks": world, "batch_per_rank": batch, "step_s": t_step,
                          "samples_per_s": world * batch / t_step, "backward_sync_s": t_sync,
                          "backward_local_s": t_local, "comm_s": None, "exposed_comm_s": None,
                          "hidden_share": None, "bucket_cap_mb": bucket_cap_mb, "blas_threads": threads}),
              flush=True)
    tdist.destroy_process_group()


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 1024, 1024, 10],
                    help="MLP layer widths")
    ap.add_argument("--bucket-cap-mb", type=float, default=4.0,
                    help="DDP bucket size (default 4: shared-memory MPI here slows down past ~6 MB messages)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads per rank (default 1)")
    ap.add_argument("--lib", nargs="+", choices=("ember", "torch"), default=None,
                    help="which libraries to time (default: ember, and PyTorch's DDP over gloo when installed)")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--worker", choices=("ember", "torch"), help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker == "ember":
        return worker(args.steps, args.batch, args.sizes, args.bucket_cap_mb, args.threads)
    if args.worker == "torch":
        return worker_torch(args.steps, args.batch, args.sizes, args.bucket_cap_mb, args.threads, args.port)
    libs = args.lib
    if libs is None:
        try:
            import torch  # noqa: F401
            libs = ["ember", "torch"]
        except ImportError:
            libs = ["ember"]
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        sys.exit("bench_distributed: mpirun not found (apt-get install openmpi-bin libopenmpi-dev; "
                 "pip install mpi4py)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    rows = []
    print(f"MLP {'-'.join(map(str, args.sizes))}, batch {args.batch} per rank, SGD step; "
          f"DDP buckets of {args.bucket_cap_mb:g} MB, {args.threads} BLAS thread(s) per rank")
    print(f"{'lib':>5} {'ranks':>5} {'samples/s':>10} {'step':>9} {'bw sync':>9} {'bw local':>9} {'comm':>9} "
          f"{'exposed':>9} {'hidden':>7}")
    ms = lambda t: "-" if t is None else f"{t * 1e3:.2f}ms"  # noqa: E731
    for lib in libs:
        for n in args.ranks:
            cmd = [mpirun, "-n", str(n), "--oversubscribe", sys.executable, os.path.abspath(__file__),
                   "--worker", lib, "--port", str(_free_port()), "--steps", str(args.steps), "--batch",
                   str(args.batch), "--sizes", *map(str, args.sizes), "--bucket-cap-mb", str(args.bucket_cap_mb),
                   "--threads", str(args.threads)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                sys.exit(f"bench_distributed: {lib} on mpirun -n {n} failed ({proc.returncode}):\n"
                         f"{proc.stdout}\n{proc.stderr}")
            r = json.loads(lines[-1])
            rows.append(r)
            hidden = "-" if r["hidden_share"] is None else f"{r['hidden_share'] * 100:.0f}%"
            print(f"{lib:>5} {n:>5} {r['samples_per_s']:>10.0f} {ms(r['step_s']):>9} {ms(r['backward_sync_s']):>9} "
                  f"{ms(r['backward_local_s']):>9} {ms(r['comm_s']):>9} {ms(r['exposed_comm_s']):>9} {hidden:>7}",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=2)
    return rows


def _free_port():
    import socket
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


if __name__ == "__main__":
    main()
