"""nn training steps side by side with PyTorch: the MLP 784-128-128-10 at batch 64
(forward, cross-entropy, backward, SGD step, zero_grad(set_to_none=True)).

On a shared, loaded machine multi-threaded BLAS (OpenBLAS for ember, PyTorch's pool) spins and
the timings swing by 10-100x; compare with OPENBLAS_NUM_THREADS=1 and one PyTorch thread there.
"""
import numpy as np

from _harness import Workload


def _mlp_step(lib, batch=64, opt="SGD"):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    rs = np.random.RandomState(0)
    x = lib.tensor(rs.randn(batch, 784).astype(np.float32))
    y = lib.tensor(rs.randint(0, 10, batch).astype(np.int64))
    if opt == "SGD":
        optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    return step


def _mlp_forward(lib, batch=64):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    x = lib.tensor(np.random.RandomState(0).randn(batch, 784).astype(np.float32))

    def step():
        with lib.no_grad():
            model(x)
    return step


WORKLOADS = [
    Workload("mlp_train_step_sgd_b64", ember=lambda lib: _mlp_step(lib), torch=lambda lib: _mlp_step(lib),
             notes="784-128-128-10, CrossEntropyLoss, SGD(momentum=0.9)"),
    Workload("mlp_train_step_adam_b64", ember=lambda lib: _mlp_step(lib, opt="Adam"),
             torch=lambda lib: _mlp_step(lib, opt="Adam")),
    Workload("mlp_inference_b64", ember=lambda lib: _mlp_forward(lib), torch=lambda lib: _mlp_forward(lib)),
]
