"""Models side by side with PyTorch: SimpleCNN forward+backward (batch 64, 1x28x28), ResNet-18 inference
(batch 5, 224x224) in NCHW and in channels_last, ResNet-18 SGD train step (batch 8, 64x64).

ember runs ember.models; PyTorch runs the same architectures from benchmarks/_models.py (torchvision
is not installed here), with the same initialisation scheme and the same inputs' shapes.

Convolutions are GEMM-bound in ember (im2col + NumPy's BLAS) while PyTorch uses oneDNN's direct
kernels, so the ratios here mostly measure the BLAS: run once with OPENBLAS_NUM_THREADS=1 (and
torch.set_num_threads(1)) as well on a busy machine, where multi-threaded BLAS calls are erratic.
"""
import _models
from _harness import Workload


def _cnn_fwd_bwd(lib):
    model = _models.simple_cnn(lib)
    x = lib.randn(64, 1, 28, 28)
    y = lib.randint(0, 10, (64,))
    F = lib.nn.functional

    def step():
        for p in model.parameters():
            p.grad = None
        F.cross_entropy(model(x), y).backward()
    return step


def _resnet_infer(channels_last):
    def make(lib):
        model = _models.resnet18(lib).eval()
        x = lib.randn(5, 3, 224, 224)
        if channels_last:
            model = model.to(memory_format=lib.channels_last)
            x = x.to(memory_format=lib.channels_last)

        def step():
            with lib.no_grad():
                return model(x)
        return step
    return make


def _resnet_train(channels_last):
    def make(lib):
        model = _models.resnet18(lib, num_classes=10).train()
        x = lib.randn(8, 3, 64, 64)
        y = lib.randint(0, 10, (8,))
        if channels_last:
            model = model.to(memory_format=lib.channels_last)
            x = x.to(memory_format=lib.channels_last)
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        F = lib.nn.functional

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        return step
    return make


WORKLOADS = [
    Workload("simplecnn_fwd_bwd_b64", ember=_cnn_fwd_bwd, unit="fwd+bwd",
             notes="conv 1->32 3x3, conv 32->64 3x3, maxpool 2, fc 9216->128, fc 128->10; batch 64, cross-entropy"),
    Workload("resnet18_infer_b5_nchw", ember=_resnet_infer(False), unit="forward", min_time=2.0, repeats=3,
             notes="eval, no_grad, batch 5, 3x224x224, NCHW"),
    Workload("resnet18_infer_b5_channels_last", ember=_resnet_infer(True), unit="forward", min_time=2.0, repeats=3,
             notes="eval, no_grad, batch 5, 3x224x224, model and input channels_last"),
    Workload("resnet18_train_b8_64px", ember=_resnet_train(False), unit="train step", min_time=2.0, repeats=3,
             notes="forward, cross-entropy, backward, SGD(momentum) step; batch 8, 3x64x64, NCHW"),
    Workload("resnet18_train_b8_64px_channels_last", ember=_resnet_train(True), unit="train step", min_time=2.0,
             repeats=3, notes="same step with model and input channels_last"),
]
