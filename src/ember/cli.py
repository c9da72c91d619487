"""The ember command.

    ember train       train a small model on the bundled digits (or MNIST from a folder)
    ember bench       run the benchmark suite side by side with PyTorch (benchmarks/run.py)
    ember trace-diff  compare two profiler traces (ember.trace_analysis)

'ember <command> --help' lists each command's options. Bad input ends with a one-line error and
exit status 2 (usage) or 1 (data, checkpoint), never a traceback; EMBER_DEBUG=1 shows it.
"""
import argparse
import os
import sys
import time

MODELS = ("mlp", "cnn", "resnet18")
DATASETS = ("digits", "mnist")


class CLIError(Exception):
    """A problem with the user's input: reported as one line, exit status ``code``."""

    def __init__(self, msg, code=1):
        super().__init__(msg)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise CLIError(f"{self.prog}: error: {message} (see {self.prog} --help)", 2)


# ----------------------------------------------------------------------------------------- train
def _train_parser(sub):
    p = sub.add_parser("train", help="train a model on the bundled digits or on MNIST",
                       description="Train a small model on the bundled UCI digits (default) or on MNIST IDX "
                                   "files from --data-dir; prints loss and test accuracy per epoch and "
                                   "saves a checkpoint after each epoch.")
    p.add_argument("--model", choices=MODELS, default="cnn",
                   help="SimpleMLP, SimpleCNN or resnet18 (with a 3x3 stem, no max-pool, for images under "
                        "32 pixels) (default: cnn)")
    p.add_argument("--dataset", choices=DATASETS, default="digits", help="dataset (default: digits, bundled)")
    p.add_argument("--data-dir", help="folder with the MNIST IDX files (for --dataset mnist)")
    p.add_argument("--epochs", type=int, default=20,
                   help="total number of epochs; the learning rate follows a cosine over them (default: 20)")
    p.add_argument("--batch-size", type=int, default=32, help="batch size per process (default: 32)")
    p.add_argument("--lr", type=float, default=None,
                   help="learning rate of Adam (default: 3e-3 for mlp/cnn, 1e-3 for resnet18)")
    p.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same run")
    p.add_argument("--channels-last", action="store_true", help="run the model in channels_last memory format")
    p.add_argument("--checkpoint", default=None,
                   help="checkpoint file written after each epoch (default: checkpoints/<dataset>-<model>.ckpt)")
    p.add_argument("--resume", nargs="?", const=True, default=None, metavar="PATH",
                   help="continue from a checkpoint (PATH, or the --checkpoint file) up to --epochs")
    p.add_argument("--profile", metavar="DIR",
                   help="profile the first epoch, each training step marked ProfilerStep#N as PyTorch's "
                        "profiler.step() marks it: write DIR/trace.json (chrome trace; `ember trace-diff "
                        "DIR1 DIR2` compares two) and print the op table")
    p.add_argument("--distributed", action="store_true",
                   help="data-parallel training across the processes of `mpirun -n N ember train ...`")
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS threads (default: 1 for mlp/cnn, whose small matrices run fastest on one "
                        "thread; the BLAS default for resnet18)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--limit", type=int, default=None, help=argparse.SUPPRESS)  # tests: use N training samples
    p.add_argument("--stop-after", type=int, default=None, help=argparse.SUPPRESS)  # tests: an interrupted run
    p.set_defaults(run=train)
    return p


def _load_data(args):
    """(train images, train labels, test images, test labels) as tensors."""
    if args.dataset == "digits":
        from ember.datasets import digits
        tr, te = digits(train=True), digits(train=False)
        return tr.tensors[0], tr.tensors[1], te.tensors[0], te.tensors[1]
    if not os.path.isdir(args.data_dir):
        raise CLIError(f"--data-dir {args.data_dir}: no such folder")
    from ember.datasets import MNIST
    try:
        tr, te = MNIST(args.data_dir, train=True), MNIST(args.data_dir, train=False)
    except (OSError, RuntimeError, ValueError) as e:
        raise CLIError(f"cannot load MNIST from {args.data_dir}: {e}") from None
    xtr, ytr = tr.tensors()
    xte, yte = te.tensors()
    return xtr, ytr, xte, yte


def _build_model(name, in_channels, size, num_classes):
    from ember import models, nn
    if name == "mlp":
        return models.SimpleMLP(in_features=in_channels * size * size, num_classes=num_classes)
    if name == "cnn":
        return models.SimpleCNN(num_classes=num_classes, in_channels=in_channels, image_size=size)
    model = models.resnet18(num_classes=num_classes)
    if size < 32:            # small images (as for CIFAR): a 3x3 stem without downsampling
        model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = nn.Identity()
    elif in_channels != 3:   # grey images: a first convolution that takes one channel
        model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return model


def _default_lr(model):
    return 1e-3 if model == "resnet18" else 3e-3


def _load_checkpoint(path):
    import ember
    if not os.path.isfile(path):
        raise CLIError(f"--resume: checkpoint {path} does not exist")
    try:
        ck = ember.load(path)
    except Exception as e:  # noqa: BLE001  (any failure to unpickle means a corrupt file)
        raise CLIError(f"--resume: cannot read checkpoint {path}: {type(e).__name__}: {e}".splitlines()[0]) \
            from None
    keys = ("model", "optimizer", "scheduler", "epoch", "config")
    if not isinstance(ck, dict) or not set(keys) <= set(ck):
        missing = [k for k in keys if k not in ck] if isinstance(ck, dict) else list(keys)
        raise CLIError(f"--resume: {path} is not an `ember train` checkpoint (missing {', '.join(missing)})")
    for key in ("model", "optimizer", "scheduler", "config"):
        if not isinstance(ck[key], dict):
            raise CLIError(f"--resume: {path}: field '{key}' is {type(ck[key]).__name__}, expected a dict")
    epoch = ck["epoch"]
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise CLIError(f"--resume: {path}: field 'epoch' is {epoch!r:.40}, expected a non-negative integer")
    state = ck.get("rng_state")
    if state is not None and not (isinstance(state, ember.Tensor) and state.dtype == ember.uint8
                                  and state.dim() == 1):
        what = (f"a {state.dtype} tensor of shape {tuple(state.shape)}" if isinstance(state, ember.Tensor)
                else type(state).__name__)
        raise CLIError(f"--resume: {path}: field 'rng_state' is {what}, expected a 1-D uint8 tensor "
                       f"(ember.get_rng_state())")
    return ck


def _check_numbers(args):
    """Numeric options: finite, in range; a one-line error (status 2) otherwise."""
    import math
    for name in ("epochs", "batch_size", "threads", "limit", "stop_after"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise CLIError(f"--{name.replace('_', '-')} must be positive, got {v}", 2)
    if args.lr is not None and not (math.isfinite(args.lr) and args.lr > 0):
        raise CLIError(f"--lr must be a positive finite number, got {args.lr}", 2)
    if not 0 <= args.seed < 2 ** 63:
        raise CLIError(f"--seed must be in [0, 2**63), got {args.seed}", 2)
    if args.epochs > 1_000_000 or args.batch_size > 1 << 31 or (args.threads or 0) > 4096:
        raise CLIError(f"--epochs {args.epochs} / --batch-size {args.batch_size} / --threads {args.threads}: "
                       f"out of range (at most 1000000 / 2**31 / 4096)", 2)


def _check_writable(path):
    """The checkpoint's folder (or the nearest one that exists, the rest being created at save time)
    must be a folder this process can write: found out before training, not after an epoch."""
    import tempfile
    if os.path.isdir(path):
        raise CLIError(f"--checkpoint {path} is a folder, expected a file path", 2)
    d = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(d):
        d = os.path.dirname(d)
    if not os.path.isdir(d):
        raise CLIError(f"--checkpoint {path}: {d} is a file, not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".ember-probe-", dir=d)
    except OSError as e:
        raise CLIError(f"--checkpoint {path}: cannot write in {d}: {e.strerror or e}") from None
    os.close(fd)
    os.unlink(probe)


def _progress(iterable, total, desc, enabled):
    if enabled:
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return tqdm(iterable, total=total, desc=desc, leave=False, disable=None)
    return iterable


def train(args):
    import numpy as np
    import ember

    _check_numbers(args)
    threads = args.threads if args.threads is not None else (1 if args.model in ("mlp", "cnn") else None)
    if threads is not None:
        ember.set_num_threads(threads)
    ckpt_path = args.checkpoint or os.path.join("checkpoints", f"{args.dataset}-{args.model}.ckpt")
    _check_writable(ckpt_path)      # before any work: not after an epoch of it
    resume = None
    if args.resume is not None:
        resume = _load_checkpoint(ckpt_path if args.resume is True else args.resume)
        cfg = resume["config"]
        for key in ("model", "dataset", "seed"):
            if cfg.get(key) != getattr(args, key):
                raise CLIError(f"--resume: the checkpoint was trained with --{key} {cfg.get(key)}, "
                               f"not {getattr(args, key)}", 2)

    if args.dataset == "digits" and args.data_dir:
        raise CLIError("--data-dir is for --dataset mnist (the digits are bundled with ember)", 2)
    if args.dataset == "mnist" and not args.data_dir:
        raise CLIError("--dataset mnist needs --data-dir DIR (a folder holding the MNIST IDX files)", 2)
    xtr, ytr, xte, yte = _load_data(args)
    import ember.nn.functional as F
    rank, world = 0, 1
    dist = None
    if args.distributed:
        import ember.distributed as dist
        try:
            dist.init_process_group("mpi")
        except RuntimeError as e:
            raise CLIError(f"--distributed: {e}") from None
        rank, world = dist.get_rank(), dist.get_world_size()
    say = print if rank == 0 else (lambda *a, **k: None)

    if args.limit:
        xtr, ytr = xtr[:args.limit], ytr[:args.limit]
    if dist is not None:    # the same options and the same data everywhere, or a clear error now
        _check_same_config(dist, args, world, {"training images": tuple(xtr.shape),
                                               "test images": tuple(xte.shape)})
    channels, size = xtr.shape[1], xtr.shape[2]
    num_classes = 10

    ember.manual_seed(args.seed)
    model = _build_model(args.model, channels, size, num_classes)
    memory_format = ember.channels_last if args.channels_last and args.model != "mlp" else ember.contiguous_format
    if args.channels_last and args.model != "mlp":
        model = model.to(memory_format=ember.channels_last)
    lr = args.lr if args.lr is not None else _default_lr(args.model)
    optimizer = ember.optim.Adam(model.parameters(), lr=lr)
    scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    start_epoch = 0
    if resume is not None:
        try:
            model.load_state_dict(resume["model"])
            optimizer.load_state_dict(resume["optimizer"])
            scheduler.load_state_dict(resume["scheduler"])
            scheduler.T_max = args.epochs          # a longer --epochs stretches the cosine
        except (KeyError, RuntimeError, ValueError, TypeError, AttributeError, IndexError) as e:
            raise CLIError(f"--resume: the checkpoint does not fit the model: "
                           f"{(str(e).splitlines() or [type(e).__name__])[0]}") from None
        start_epoch = resume["epoch"]
        if resume.get("rng_state") is not None:
            try:
                ember.set_rng_state(resume["rng_state"])
            except Exception as e:  # noqa: BLE001  (a malformed state, or one saved before ember's PyTorch streams)
                raise CLIError(f"--resume: the checkpoint's rng_state is malformed: {type(e).__name__}: "
                               f"{(str(e).splitlines() or [''])[0]}") from None
        say(f"resumed from {args.resume if args.resume is not True else ckpt_path} after epoch {start_epoch}")
    net = model
    if dist is not None:
        from ember.nn.parallel import DistributedDataParallel
        net = DistributedDataParallel(model)

    from ember.utils.data import DistributedSampler
    # the epoch's order: a permutation drawn from seed + epoch (the same on every process, each
    # taking its share), so a resumed run sees the batches an uninterrupted one would
    sampler = DistributedSampler(range(len(ytr)), num_replicas=world, rank=rank, shuffle=True, seed=args.seed)

    def prep(x):
        return x.contiguous(memory_format=memory_format) if memory_format is ember.channels_last else x

    nparams = sum(p.numel() for p in model.parameters())
    say(f"ember {ember.__version__}: training {args.model} ({nparams:,} parameters) on {args.dataset} "
        f"({len(ytr)} train / {len(yte)} test{f', {world} processes' if world > 1 else ''}), "
        f"batch {args.batch_size}, Adam lr {lr:g} (cosine), seed {args.seed}")
    if start_epoch >= args.epochs:
        say(f"nothing to do: the checkpoint has already done {start_epoch} epoch(s) of --epochs {args.epochs}")

    acc = None
    for epoch in range(start_epoch, args.epochs):
        t0 = time.perf_counter()
        sampler.set_epoch(epoch)
        order = np.fromiter(iter(sampler), np.int64)
        batches = [order[i:i + args.batch_size] for i in range(0, len(order), args.batch_size)]
        prof = None
        if args.profile and epoch == start_epoch:
            from ember import profiler
            # each training step a ProfilerStep#N range, as PyTorch's prof.step() marks it: what
            # `ember trace-diff` and Holistic Trace Analysis select iterations by
            steps = profiler.schedule(wait=0, warmup=0, active=max(len(batches), 1), repeat=1)
            prof = profiler.profile(activities=[profiler.ProfilerActivity.CPU], schedule=steps,
                                    record_shapes=True)
            prof.__enter__()
        model.train()
        total, count = 0.0, 0
        bar = _progress(batches, len(batches), f"epoch {epoch + 1}/{args.epochs}",
                        rank == 0 and not args.no_progress)
        for idx in bar:
            ix = ember.from_numpy(idx)
            x, y = prep(xtr[ix]), ytr[ix]
            loss = F.cross_entropy(net(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
            count += len(idx)
            if bar is not batches:
                bar.set_postfix(loss=f"{total / count:.4f}", refresh=False)
            if prof is not None:
                prof.step()
        if prof is not None:
            prof.__exit__(None, None, None)
        if dist is not None:
            stats = ember.tensor([total, float(count)], dtype=ember.float64)
            dist.all_reduce(stats)
            total, count = stats.tolist()
        scheduler.step()
        acc = evaluate(model, xte, yte, prep)
        dt = time.perf_counter() - t0
        say(f"epoch {epoch + 1:>3}/{args.epochs}  loss {total / count:.4f}  test accuracy {acc * 100:6.2f}%  "
            f"({dt:.1f} s)", flush=True)
        if rank == 0:
            try:
                save_checkpoint(ckpt_path, model, optimizer, scheduler, epoch + 1, args)
            except OSError as e:    # a full disk, a folder gone read-only: one line, not a traceback
                raise CLIError(f"cannot save checkpoint {ckpt_path} after epoch {epoch + 1}: "
                               f"{e.strerror or e}") from None
        if prof is not None and rank == 0:
            _report_profile(prof, args.profile)
        if args.stop_after is not None and epoch + 1 >= args.stop_after:
            break
    if acc is not None:
        say(f"done: test accuracy {acc * 100:.2f}%, checkpoint {ckpt_path}")
        say(f"  load it with: ckpt = ember.load({ckpt_path!r}); model.load_state_dict(ckpt['model']) "
            f"(or torch.load(..., weights_only=True) in PyTorch); continue with: ember train --resume {ckpt_path}")
    if dist is not None:
        dist.barrier()
        dist.destroy_process_group()
    return 0


def _check_same_config(dist, args, world, data):
    """Every process must train the same way on data of the same shapes: ranks that disagree on
    --batch-size, or read datasets of different sizes, would run different numbers of steps and
    wait for each other. One exchange at the start."""
    keys = ("model", "dataset", "epochs", "batch_size", "lr", "seed", "channels_last", "limit", "stop_after",
            "resume")
    mine = {k: getattr(args, k) for k in keys}
    mine.update(data)
    everyone = [None] * world
    dist.all_gather_object(everyone, mine)
    bad = [k for k in mine if any(c[k] != everyone[0][k] for c in everyone)]
    if bad:
        what = "options" if any(k in keys for k in bad) else "data"
        raise CLIError(f"--distributed: the processes were started with different {what}: " + "; ".join(
            (f"--{k.replace('_', '-')} " if k in keys else f"{k} ") +
            ", ".join(f"{c[k]} on rank {r}" for r, c in enumerate(everyone)) for k in bad), 2)


def evaluate(model, x, y, prep, batch_size=512):
    import ember
    model.eval()
    correct = 0
    with ember.no_grad():
        for i in range(0, len(y), batch_size):
            out = model(prep(x[i:i + batch_size]))
            correct += int((out.argmax(1) == y[i:i + batch_size]).sum().item())
    model.train()
    return correct / len(y)


def save_checkpoint(path, model, optimizer, scheduler, epoch, args):
    import ember
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    config = {k: getattr(args, k) for k in ("model", "dataset", "seed", "epochs", "batch_size", "lr",
                                            "channels_last")}
    # ember.save writes a unique temporary file next to path, fsyncs it and renames it over path:
    # a crash or a failed save leaves the previous checkpoint, and concurrent writers never collide
    ember.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": epoch,
                "config": config, "rng_state": ember.get_rng_state()}, path)


def _report_profile(prof, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    trace = os.path.join(out_dir, "trace.json")
    prof.export_chrome_trace(trace)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
    print(f"chrome trace: {trace} (open in chrome://tracing or https://ui.perfetto.dev)")


# ----------------------------------------------------------------------------------------- bench
def _package_bench_dir(package_file=None):
    """ember's own benchmarks: <checkout>/benchmarks when this package is <checkout>/src/ember (a source
    checkout or an editable install); None for an installed wheel, which does not ship them. Derived
    from the package's own path only: never searched for from the current folder (a run.py planted
    in a shared ancestor folder must not be executed)."""
    pkg = os.path.dirname(os.path.realpath(package_file or __file__))
    src = os.path.dirname(pkg)
    root = os.path.dirname(src)
    if os.path.basename(src) != "src" or not os.path.isfile(os.path.join(root, "pyproject.toml")):
        return None
    bench = os.path.join(root, "benchmarks")
    return bench if os.path.isfile(os.path.join(bench, "run.py")) else None


def _find_bench_dir(explicit):
    if explicit:
        if os.path.isfile(os.path.join(explicit, "run.py")):
            return os.path.abspath(explicit)
        raise CLIError(f"--bench-dir {explicit}: no run.py there (expected ember's benchmarks/ folder)")
    found = _package_bench_dir()
    if found is None:
        raise CLIError("the benchmarks are not installed: they live in ember's source checkout "
                       "(benchmarks/run.py), which this installed package does not include; install ember "
                       "from a checkout (pip install -e .) or pass --bench-dir PATH")
    return found


def bench(args, rest):
    import importlib.util
    if args.threads is not None and args.threads < 1:
        raise CLIError(f"--threads must be positive, got {args.threads}", 2)
    bench_dir = _find_bench_dir(args.bench_dir)
    spec = importlib.util.spec_from_file_location("ember_bench_run", os.path.join(bench_dir, "run.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, bench_dir)
    spec.loader.exec_module(mod)
    argv = list(args.patterns) + rest
    if args.json:
        argv += ["--json", args.json]
    if args.quick:
        argv.append("--quick")
    if args.threads is not None:
        argv += ["--threads", str(args.threads)]
    mod.main(argv)
    return 0


def trace_diff(argv):
    try:
        from ember.trace_analysis.cli import main as td_main
    except ImportError as e:
        raise CLIError(f"trace-diff is not available: {e}") from None
    return td_main(argv) or 0


def _abort_job_if_distributed(code):
    """An error on one process of an MPI job ends the whole job: the others would wait forever."""
    dist = sys.modules.get("ember.distributed")
    if dist is not None and dist.is_initialized() and dist.get_world_size() > 1:
        sys.stderr.flush()
        dist._MPI.COMM_WORLD.Abort(code)


# ------------------------------------------------------------------------------------------ main
def build_parser():
    ap = _Parser(prog="ember", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from . import __version__
    ap.add_argument("--version", action="version", version=f"ember {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="{train,bench,trace-diff}", parser_class=_Parser)
    _train_parser(sub)
    b = sub.add_parser("bench", help="run the benchmark suite (ember vs PyTorch, ratios)",
                       description="Run benchmarks/run.py from ember's source checkout; extra arguments "
                                   "are passed on to it.")
    b.add_argument("patterns", nargs="*", help="substrings of 'area/workload' names")
    b.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    b.add_argument("--quick", action="store_true", help="shorter timing (noisier)")
    b.add_argument("--threads", type=int, default=None,
                   help="BLAS/intra-op threads for ember and PyTorch alike (default: the CPU count)")
    b.add_argument("--bench-dir", help="the benchmarks folder (default: the benchmarks/ folder of the source "
                                       "checkout this ember was installed from)")
    sub.add_parser("trace-diff", help="compare two profiler traces (ember trace-diff --help)", add_help=False)
    return ap


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "trace-diff":
            return trace_diff(argv[1:])
        ap = build_parser()
        if argv and argv[0] == "bench":
            args, rest = ap.parse_known_args(argv)
            return bench(args, rest)
        args = ap.parse_args(argv)
        if args.command is None:
            ap.print_help()
            return 2
        return args.run(args)
    except CLIError as e:
        msg = str(e)
        print(msg if msg.startswith("ember") else f"ember: error: {msg}", file=sys.stderr)
        if os.environ.get("EMBER_DEBUG"):
            raise
        _abort_job_if_distributed(e.code)
        return e.code
    except KeyboardInterrupt:
        print("ember: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as e:   # a collective that timed out or lost a rank: one line, then end the job
        dist = sys.modules.get("ember.distributed")
        if dist is None or not isinstance(e, dist.DistError) or os.environ.get("EMBER_DEBUG"):
            raise
        print(f"ember: error: {str(e).splitlines()[0]}", file=sys.stderr)
        _abort_job_if_distributed(1)
        return 1


if __name__ == "__main__":
    sys.exit(main())
