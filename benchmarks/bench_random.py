"""Random streams (PyTorch's CPU generator, the same numbers in both libraries): randn and rand of
10**6 floats, randperm, dropout masks, and a ResNet-18's default initialisation (every layer's
kaiming_uniform_ / uniform_ draws)."""
from _harness import Workload
import _models


def _call(fn):
    def make(lib):
        lib.manual_seed(0)
        return lambda: fn(lib)
    return make


def _resnet18_init(lib):
    lib.manual_seed(0)
    return lambda: _models.resnet18(lib)


WORKLOADS = [
    Workload("randn_1e6_float32", ember=_call(lambda L: L.randn(10 ** 6)), unit="call",
             notes="blocked Box-Muller (PyTorch's AVX2 float32 kernel, emulated bit for bit)"),
    Workload("randn_1e6_float64", ember=_call(lambda L: L.randn(10 ** 6, dtype=L.float64)), unit="call"),
    Workload("rand_1e6_float32", ember=_call(lambda L: L.rand(10 ** 6)), unit="call"),
    Workload("randperm_1e5", ember=_call(lambda L: L.randperm(10 ** 5)), unit="call"),
    Workload("dropout_mask_1e6", ember=_call(lambda L: L.nn.functional.dropout(L.ones(10 ** 6), 0.5)),
             unit="call"),
    Workload("resnet18_init", ember=_resnet18_init, unit="model", min_time=2.0, repeats=3,
             notes="models.resnet18() / torchvision-style construction: every layer's default init"),
]
