"""Gradient tools: the cost of anomaly mode on an MLP train step (784-128-128-10, batch 64, SGD with momentum),
for ember and PyTorch side by side, and the jacobian / hessian of autograd.functional.

Compare `grad/mlp_step_anomaly` with `grad/mlp_step_plain` within each column: their ratio is
anomaly mode's overhead (PyTorch's is documented as 2-3x).
"""
import _models
from _harness import Workload


def _mlp_step(anomaly):
    def make(lib):
        step = _models.mlp_train_step(lib)

        def run():
            with lib.autograd.set_detect_anomaly(anomaly):
                step()
        return run
    return make


def _jacobian(lib):
    from importlib import import_module
    F = import_module(lib.__name__ + ".autograd.functional")
    x = lib.randn(16, dtype=lib.float64)
    w = lib.randn(8, 16, dtype=lib.float64)
    return lambda: F.jacobian(lambda t: (w @ t).tanh(), x)


def _hessian(lib):
    from importlib import import_module
    F = import_module(lib.__name__ + ".autograd.functional")
    x = lib.randn(8, dtype=lib.float64)
    return lambda: F.hessian(lambda t: (t.sin() * t).sum(), x)


WORKLOADS = [
    Workload("mlp_step_plain", ember=_mlp_step(False), unit="train step",
             notes="784-128-128-10 MLP, batch 64, SGD; anomaly mode off"),
    Workload("mlp_step_anomaly", ember=_mlp_step(True), unit="train step",
             notes="same step under set_detect_anomaly(True)"),
    Workload("jacobian_8x16", ember=_jacobian, notes="functional.jacobian, loop over 8 output rows"),
    Workload("hessian_8", ember=_hessian, notes="functional.hessian of a scalar function of 8 inputs"),
]
