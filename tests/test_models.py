"""Models: ResNet-18/34/50 with torchvision's structure and state_dict keys (checked against a PyTorch
reimplementation of torchvision's documented architecture written here, since torchvision itself is
not installed), loading a state_dict of NumPy arrays, and the tutorial models."""
import numpy as np
import pytest

import ember
from ember import models


def _torch_resnet(torch, block_name, layers, num_classes=1000):
    """torchvision's ResNet architecture (attribute names, layer order) in plain PyTorch."""
    nn = torch.nn

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out = out + (x if self.downsample is None else self.downsample(x))
            return self.relu(out)

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            out = out + (x if self.downsample is None else self.downsample(x))
            return self.relu(out)

    block = BasicBlock if block_name == "basic" else Bottleneck

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            self.layer1 = self._make(64, layers[0], 1)
            self.layer2 = self._make(128, layers[1], 2)
            self.layer3 = self._make(256, layers[2], 2)
            self.layer4 = self._make(512, layers[3], 2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512 * block.expansion, num_classes)

        def _make(self, planes, n, stride):
            ds = None
            if stride != 1 or self.inplanes != planes * block.expansion:
                ds = nn.Sequential(nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                                   nn.BatchNorm2d(planes * block.expansion))
            blocks = [block(self.inplanes, planes, stride, ds)]
            self.inplanes = planes * block.expansion
            blocks += [block(self.inplanes, planes) for _ in range(1, n)]
            return nn.Sequential(*blocks)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))
    return ResNet()


@pytest.mark.parametrize("name,block,layers,nparams,nkeys", [
    ("resnet18", "basic", [2, 2, 2, 2], 11689512, 122),
    ("resnet34", "basic", [3, 4, 6, 3], 21797672, 218),
    ("resnet50", "bottleneck", [3, 4, 6, 3], 25557032, 320),
])
def test_resnet_state_dict_keys_and_shapes(torch, name, block, layers, nparams, nkeys):
    m = getattr(models, name)()
    ref = _torch_resnet(torch, block, layers)
    sd, rsd = m.state_dict(), ref.state_dict()
    assert list(sd) == list(rsd)
    assert len(sd) == nkeys
    for k in sd:
        assert tuple(sd[k].shape) == tuple(rsd[k].shape), k
    assert sum(p.numel() for p in m.parameters()) == nparams


@pytest.mark.parametrize("cl", [False, True])
def test_resnet18_loads_numpy_state_dict_and_matches(torch, cl):
    torch.manual_seed(0)
    ref = _torch_resnet(torch, "basic", [2, 2, 2, 2], num_classes=10)
    with torch.no_grad():  # non-trivial running statistics
        for mod in ref.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.1, 0.1)
    ref.eval()
    m = models.resnet18(num_classes=10)
    m.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    m.eval()
    x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
    xe = ember.tensor(x)
    if cl:
        m = m.to(memory_format=ember.channels_last)
        xe = xe.to(memory_format=ember.channels_last)
    with ember.no_grad():
        y = m(xe)
    with torch.no_grad():
        yt = ref(torch.tensor(x))
    np.testing.assert_allclose(y.numpy(), yt.numpy(), rtol=1e-3, atol=1e-3)


def test_resnet_train_step_gradients_match_torch(torch):
    torch.manual_seed(0)
    ref = _torch_resnet(torch, "basic", [1, 1, 1, 1], num_classes=5).double()
    m = models.ResNet(models.BasicBlock, [1, 1, 1, 1], num_classes=5).double()
    m.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32))
    m.to(memory_format=ember.channels_last)
    y = m(ember.tensor(x).to(memory_format=ember.channels_last))
    yt = ref(torch.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-8, atol=1e-8)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    named = dict(ref.named_parameters())
    for k, p in m.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), named[k].grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=k)
    for k, b in ref.named_buffers():
        np.testing.assert_allclose(dict(m.named_buffers())[k].numpy(), b.numpy(), rtol=1e-10, err_msg=k)


def test_resnet_rejects_pretrained_download():
    with pytest.raises(ValueError, match="cannot download"):
        models.resnet18(weights="IMAGENET1K_V1")


def test_simple_models_shapes_and_train_step():
    mlp = models.SimpleMLP()
    assert [tuple(p.shape) for p in mlp.parameters()] == [(128, 784), (128,), (128, 128), (128,), (10, 128), (10,)]
    y = mlp(ember.randn(4, 1, 28, 28))
    assert tuple(y.shape) == (4, 10)
    cnn = models.SimpleCNN()
    assert [tuple(p.shape) for p in cnn.parameters()] == [(32, 1, 3, 3), (32,), (64, 32, 3, 3), (64,), (128, 9216),
                                                           (128,), (10, 128), (10,)]
    y = cnn(ember.randn(2, 1, 28, 28))
    assert tuple(y.shape) == (2, 10)
    y.sum().backward()
    assert all(p.grad is not None for p in cnn.parameters())
