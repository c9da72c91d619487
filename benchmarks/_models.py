"""The models the benchmarks share, for ember and for PyTorch alike (``lib`` is either module).

ember uses ember.models; PyTorch gets the same architectures written with torch.nn here, since
torchvision is not installed (torchvision's ResNet-18 structure and attribute names, so FX sees
the same graph on both sides).
"""
import numpy as np


def mlp(lib):
    """SimpleMLP of the tutorials as a Sequential: 784-128-128-10."""
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))


def mlp_batch(lib, batch=64):
    rs = np.random.RandomState(0)
    return (lib.tensor(rs.randn(batch, 784).astype(np.float32)),
            lib.tensor(rs.randint(0, 10, batch).astype(np.int64)))


def mlp_train_step(lib, opt="SGD", batch=64, momentum=0.9):
    """One step: zero_grad(set_to_none), forward, cross-entropy, backward, optimizer step."""
    model = mlp(lib)
    x, y = mlp_batch(lib, batch)
    if opt == "SGD":
        optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=momentum)
    else:
        optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        optimizer.step()
    return step


def simple_cnn(lib):
    """SimpleCNN of the tutorials: conv 1->32 3x3, conv 32->64 3x3, maxpool 2, fc 9216->128, fc 128->10,
    with the dropouts of PyTorch's MNIST example (as ember.models.SimpleCNN)."""
    lib.manual_seed(0)
    if lib.__name__ == "ember":
        return lib.models.SimpleCNN()
    nn = lib.nn

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = lib.relu(self.conv1(x))
            x = self.dropout1(lib.max_pool2d(lib.relu(self.conv2(x)), 2))
            x = lib.relu(self.fc1(lib.flatten(x, 1)))
            return self.fc2(self.dropout2(x))
    return SimpleCNN()


def resnet18(lib, num_classes=1000):
    lib.manual_seed(0)
    if lib.__name__ == "ember":
        from ember import models
        return models.resnet18(num_classes=num_classes)
    nn = lib.nn

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
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
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
            self.fc = nn.Linear(512, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

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
            return self.fc(lib.flatten(self.avgpool(x), 1))
    return ResNet18()
