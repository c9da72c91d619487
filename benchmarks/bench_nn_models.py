"""Models side by side with PyTorch: SimpleCNN forward+backward (batch 64, 1x28x28), ResNet-18 inference
(batch 5, 224x224) in NCHW and in channels_last, ResNet-18 SGD train step (batch 8, 64x64).

ember runs ember.models; PyTorch runs the same architectures defined below with torch.nn (torchvision is
not installed here), with the same initialisation scheme and the same inputs' shapes.

Convolutions are GEMM-bound in ember (im2col + NumPy's BLAS) while PyTorch uses oneDNN's direct
kernels, so the ratios here mostly measure the BLAS: run once with OPENBLAS_NUM_THREADS=1 (and
torch.set_num_threads(1)) as well on a busy machine, where multi-threaded BLAS calls are erratic.
"""
from _harness import Workload


def _torch_resnet18(torch, num_classes=1000):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, inp, planes, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(inp, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inp != planes:
                self.downsample = nn.Sequential(nn.Conv2d(inp, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += idt
            return self.relu(out)

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            chans = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
            for i, (a, b, s) in enumerate(chans):
                setattr(self, f"layer{i + 1}", nn.Sequential(Block(a, b, s), Block(b, b, 1)))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))
    return ResNet18()


def _torch_simple_cnn(torch):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = torch.relu(self.conv1(x))
            x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
            x = self.dropout1(x)
            x = torch.relu(self.fc1(torch.flatten(x, 1)))
            return self.fc2(self.dropout2(x))
    return Net()


def _model(lib, name, **kw):
    if lib.__name__ == "ember":
        from ember import models
        return getattr(models, {"cnn": "SimpleCNN", "resnet18": "resnet18"}[name])(**kw)
    return _torch_simple_cnn(lib) if name == "cnn" else _torch_resnet18(lib, **kw)


def _cnn_fwd_bwd(lib):
    lib.manual_seed(0)
    model = _model(lib, "cnn")
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
        lib.manual_seed(0)
        model = _model(lib, "resnet18").eval()
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
        lib.manual_seed(0)
        model = _model(lib, "resnet18", num_classes=10).train()
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
