"""nn training steps side by side with PyTorch: the MLP 784-128-128-10 at batch 64
(forward, cross-entropy, backward, SGD step, zero_grad(set_to_none=True)).

On a shared, loaded machine multi-threaded BLAS (OpenBLAS for ember, PyTorch's pool) spins and
the timings swing by 10-100x; compare with OPENBLAS_NUM_THREADS=1 and one PyTorch thread there.
"""
import _models
from _harness import Workload


def _mlp_forward(lib, batch=64):
    model = _models.mlp(lib)
    x, _ = _models.mlp_batch(lib, batch)

    def step():
        with lib.no_grad():
            model(x)
    return step


WORKLOADS = [
    Workload("mlp_train_step_sgd_b64", ember=_models.mlp_train_step,
             notes="784-128-128-10, CrossEntropyLoss, SGD(momentum=0.9)"),
    Workload("mlp_train_step_adam_b64", ember=lambda lib: _models.mlp_train_step(lib, opt="Adam")),
    Workload("mlp_inference_b64", ember=_mlp_forward),
]
