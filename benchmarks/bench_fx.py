"""FX: ResNet-18 inference (batch 5, 224x224) eager, traced (GraphModule) and with conv+bn folded
by fx.experimental.optimization.fuse; symbolic tracing itself. PyTorch runs the same model
(torchvision's structure, written here since torchvision is not a dependency) through torch.fx."""
from _harness import Workload


def _torch_resnet18(torch):
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            return self.relu(out)

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            self.layer1 = self._layer(64, 1)
            self.layer2 = self._layer(128, 2)
            self.layer3 = self._layer(256, 2)
            self.layer4 = self._layer(512, 2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, 1000)

        def _layer(self, planes, stride):
            ds = None
            if stride != 1 or self.inplanes != planes:
                ds = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                   nn.BatchNorm2d(planes))
            blocks = [BasicBlock(self.inplanes, planes, stride, ds), BasicBlock(planes, planes)]
            self.inplanes = planes
            return nn.Sequential(*blocks)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet18()


def _model(lib):
    lib.manual_seed(0)
    if lib.__name__ == "ember":
        from ember.models import resnet18
        return resnet18().eval()
    return _torch_resnet18(lib).eval()


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
        lib.manual_seed(0)
        nn = lib.nn
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 128),
                              nn.ReLU(), nn.Linear(128, 10)).eval()
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
