"""FX: ResNet-18 inference (batch 5, 224x224) eager, traced (GraphModule) and with conv+bn folded
by fx.experimental.optimization.fuse; symbolic tracing itself. PyTorch runs the same model
(torchvision's structure, written here since torchvision is not a dependency) through torch.fx."""
import _models
from _harness import Workload


def _model(lib):
    return _models.resnet18(lib).eval()


def _resnet(kind):
    def make(lib):
        model = _model(lib)
        if kind == "traced":
            model = lib.fx.symbolic_trace(model)
        elif kind == "fused":
            from importlib import import_module
            model = import_module(lib.__name__ + ".fx.experimental.optimization").fuse(model)
        x = lib.randn(5, 3, 224, 224)

        def step():
            with lib.no_grad():
                model(x)
        return step
    return make


def _mlp(traced):
    """Small MLP at batch 8: per-call overhead of a GraphModule against the hand-written module."""
    def make(lib):
        model = lib.nn.Sequential(lib.nn.Flatten(), *_models.mlp(lib)).eval()
        if traced:
            model = lib.fx.symbolic_trace(model)
        x = lib.randn(8, 1, 28, 28)

        def step():
            with lib.no_grad():
                model(x)
        return step
    return make


def _trace(lib):
    model = _model(lib)
    import importlib
    fx = importlib.import_module(lib.__name__ + ".fx")
    return lambda: fx.symbolic_trace(model)


WORKLOADS = [
    Workload("resnet18_b5_224_eval_eager", ember=_resnet("eager"), min_time=2.0, repeats=3,
             notes="unfused baseline"),
    Workload("resnet18_b5_224_eval_traced", ember=_resnet("traced"), min_time=2.0, repeats=3,
             notes="GraphModule from symbolic_trace, no rewrite: should equal eager"),
    Workload("resnet18_b5_224_eval_fused", ember=_resnet("fused"), min_time=2.0, repeats=3,
             notes="conv+bn folded by fx.experimental.optimization.fuse"),
    Workload("mlp_b8_eval_eager", ember=_mlp(False)),
    Workload("mlp_b8_eval_traced", ember=_mlp(True), notes="GraphModule of the same Sequential"),
    Workload("symbolic_trace_resnet18", ember=_trace, min_time=0.4, repeats=5),
]


def interleaved(lib, rounds=5, batch=5, size=224):
    """Eager, traced and fused models timed in alternation (the load of a shared machine drifts
    between separate timing runs); prints medians and the fused/unfused ratio."""
    import statistics
    import time
    from importlib import import_module
    model = _model(lib)
    traced = import_module(lib.__name__ + ".fx").symbolic_trace(model)
    fused = import_module(lib.__name__ + ".fx.experimental.optimization").fuse(model)
    x = lib.randn(batch, 3, size, size)
    times = {"eager": [], "traced": [], "fused": []}
    with lib.no_grad():
        for m in (model, traced, fused):
            m(x)
        for _ in range(rounds):
            for name, m in (("eager", model), ("traced", traced), ("fused", fused)):
                t0 = time.perf_counter()
                m(x)
                times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    ratios = [f / e for f, e in zip(times["fused"], times["eager"])]
    print(f"{lib.__name__:6s} median: eager {med['eager'] * 1e3:7.1f} ms  traced {med['traced'] * 1e3:7.1f} ms  "
          f"fused {med['fused'] * 1e3:7.1f} ms | min: eager {best['eager'] * 1e3:7.1f}  traced "
          f"{best['traced'] * 1e3:7.1f}  fused {best['fused'] * 1e3:7.1f} | fused/unfused: median of "
          f"{rounds} paired ratios {statistics.median(ratios):.3f}, of mins {best['fused'] / best['eager']:.3f}")
    return med


def bn_share(rounds=3, batch=5, size=224):
    """Share of the unfused ember forward spent in BatchNorm nodes (what folding can save), from
    ember.fx.passes.profiling: a per-node measurement, less exposed to load drift than two runs."""
    import ember
    from ember.fx.passes.profiling import ProfilingInterpreter
    p = ProfilingInterpreter(_model(ember))
    x = ember.randn(batch, 3, size, size)
    with ember.no_grad():
        for _ in range(rounds + 1):
            p.run(x)
    rows = p.summary()
    mods = dict(p.module.named_modules())
    share = sum(r[4] for r in rows if r[0] == "call_module" and type(mods[r[2]]).__name__.startswith("BatchNorm"))
    print(f"ember  BatchNorm nodes: {share:.1f}% of the unfused forward (node-by-node, {rounds + 1} runs)")
    return share


if __name__ == "__main__":
    import sys
    import ember
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    interleaved(ember, rounds)
    bn_share()
    try:
        import torch
        import os
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    except ImportError:
        torch = None
    if torch is not None:
        interleaved(torch, rounds)
