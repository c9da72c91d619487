"""nn.Module behaviour: registration, traversal, state_dict keys and loading, modes, conversions
(dtype, 'meta'), deepcopy, repr (PyTorch's string), hooks, parameter swapping."""
import copy
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn


class Net(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.fc1 = m.Linear(4, 3)
        self.bn = m.BatchNorm1d(3)
        self.seq = m.Sequential(m.ReLU(), m.Linear(3, 2, bias=False))
        self.register_buffer("steps", ember.zeros(1) if m is nn else None, persistent=False)
        self.scale = m.Parameter(ember.ones(1) if m is nn else None) if False else None

    def forward(self, x):
        return self.seq(self.bn(self.fc1(x)))


def make_pair(torch):
    e = nn.Sequential(OrderedDict(fc1=nn.Linear(4, 3), bn=nn.BatchNorm1d(3),
                                  seq=nn.Sequential(nn.ReLU(), nn.Linear(3, 2, bias=False))))
    t = torch.nn.Sequential(OrderedDict(fc1=torch.nn.Linear(4, 3), bn=torch.nn.BatchNorm1d(3),
                                        seq=torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(3, 2, bias=False))))
    return e, t


def test_names_and_keys_match_torch(torch):
    e, t = make_pair(torch)
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert len(list(e.modules())) == len(list(t.modules()))
    assert repr(e) == repr(t)


def test_repr_matches_torch(torch):
    for make in (lambda m: m.Linear(3, 4, bias=False), lambda m: m.Dropout(0.2), lambda m: m.LeakyReLU(0.1),
                 lambda m: m.ReLU(inplace=True), lambda m: m.Softmax(dim=1), lambda m: m.GELU("tanh"),
                 lambda m: m.LayerNorm((2, 3)), lambda m: m.GroupNorm(2, 4, affine=False),
                 lambda m: m.BatchNorm2d(4, momentum=None), lambda m: m.Embedding(10, 3, padding_idx=1),
                 lambda m: m.EmbeddingBag(10, 3, mode="sum"), lambda m: m.Conv2d(3, 4, 3, stride=2, padding=1),
                 lambda m: m.Conv2d(3, 4, (3, 5), dilation=2, groups=1, bias=False, padding_mode="reflect"),
                 lambda m: m.Conv1d(2, 4, 3), lambda m: m.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
                 lambda m: m.MaxPool2d(3, 2, 1), lambda m: m.AvgPool2d(2), lambda m: m.AdaptiveAvgPool2d((1, 1)),
                 lambda m: m.Flatten(), lambda m: m.Unflatten(1, (2, 2)), lambda m: m.CrossEntropyLoss(),
                 lambda m: m.Bilinear(2, 3, 4), lambda m: m.ModuleList([m.Tanh(), m.Sigmoid()]),
                 lambda m: m.ModuleDict({"a": m.Identity()}), lambda m: m.ModuleList(),
                 lambda m: m.ModuleList([m.Linear(2, 2), m.Linear(2, 2), m.ReLU(), m.Linear(2, 2)])):
        assert repr(make(nn)) == repr(make(torch.nn))


def test_attribute_registration():
    m = nn.Module()
    m.w = nn.Parameter(ember.ones(2))
    m.sub = nn.Linear(2, 2)
    m.register_buffer("b", ember.zeros(2))
    m.plain = ember.ones(1)
    assert [n for n, _ in m.named_parameters()] == ["w", "sub.weight", "sub.bias"]
    assert [n for n, _ in m.named_buffers()] == ["b"]
    assert "plain" not in m.state_dict()
    with pytest.raises(TypeError, match="cannot assign"):
        m.w = ember.ones(2)  # a plain tensor over a registered parameter
    with pytest.raises(TypeError, match="child module"):
        m.sub = 3
    m.b = ember.ones(2)  # buffers can be replaced by tensors
    assert m.b.tolist() == [1.0, 1.0]
    del m.w
    assert not hasattr(m, "w")
    m.w = ember.ones(2) * 3  # after delattr, a plain tensor is just an attribute (forward AD users)
    assert [n for n, _ in m.named_parameters()] == ["sub.weight", "sub.bias"]
    with pytest.raises(KeyError):
        m.register_parameter("a.b", None)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        m.nothing
    lin = nn.Linear(2, 2)
    with pytest.raises(AttributeError):
        nn.Module.__new__(nn.Module).register_buffer("x", ember.zeros(1))
    w = lin.weight
    lin.weight = nn.Parameter(ember.zeros(2, 2))
    assert lin.weight is not w and lin(ember.ones(1, 2)).tolist() == lin.bias.unsqueeze(0).tolist()


def test_shared_parameters_deduplicated():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert len(list(seq.modules())) == 2


def test_non_persistent_buffer_and_state_dict_detached():
    m = nn.Linear(2, 2)
    m.register_buffer("tmp", ember.zeros(1), persistent=False)
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias"]
    assert not sd["weight"].requires_grad and sd["weight"].numpy() is not None
    assert m.state_dict(keep_vars=True)["weight"] is m.weight
    assert sd["weight"].data_ptr() == m.weight.data_ptr()


def test_load_state_dict_strict_and_messages(torch):
    e, t = make_pair(torch)
    sd = {k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()}
    assert str(e.load_state_dict(sd)) == "<All keys matched successfully>"
    np.testing.assert_allclose(e.fc1.weight.detach().numpy(), t.fc1.weight.detach().numpy())
    bad = dict(sd)
    del bad["fc1.bias"]
    bad["extra"] = ember.zeros(1)
    with pytest.raises(RuntimeError) as ei:
        e.load_state_dict(bad)
    msg = str(ei.value)
    assert msg.startswith("Error(s) in loading state_dict for Sequential:")
    assert 'Missing key(s) in state_dict: "fc1.bias".' in msg and 'Unexpected key(s) in state_dict: "extra".' in msg
    r = e.load_state_dict(bad, strict=False)
    assert r.missing_keys == ["fc1.bias"] and r.unexpected_keys == ["extra"]
    wrong = dict(sd)
    wrong["fc1.weight"] = ember.zeros(5, 5)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param with shape "
                                           r"torch.Size\(\[5, 5\]\) from checkpoint"):
        e.load_state_dict(wrong)
    # BatchNorm without num_batches_tracked (old checkpoints) still loads
    old = {k: v for k, v in sd.items() if "num_batches" not in k}
    e.load_state_dict(old)


def test_load_state_dict_assign_keeps_values():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    a.load_state_dict(b.state_dict(), assign=True)
    assert isinstance(a.weight, nn.Parameter) and a.weight.tolist() == b.weight.tolist()


def test_train_eval_requires_grad_zero_grad_apply():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
    assert m.training and m[1].training
    m.eval()
    assert not m.training and not m[1].training
    m.train()
    assert m[1].training
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_(True)
    m(ember.ones(1, 2)).sum().backward()
    assert m[0].weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert m[0].weight.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    m.zero_grad()
    assert m[0].weight.grad is None
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Dropout", "Sequential"]


def test_to_dtype_keeps_parameter_identity():
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    w = m[0].weight
    m.to(ember.float64)
    assert m[0].weight is w and w.dtype == ember.float64 and isinstance(w, nn.Parameter)
    assert m[1].running_mean.dtype == ember.float64 and m[1].num_batches_tracked.dtype == ember.int64
    assert m(ember.randn(4, 2, dtype=ember.float64)).dtype == ember.float64
    m.float()
    assert w.dtype == ember.float32
    with pytest.raises(TypeError):
        m.to(ember.int64)


def test_to_meta_device():
    m = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    m.to("meta")
    assert m[0].weight.is_meta and m[0].weight.device.type == "meta"
    assert tuple(m[0].weight.shape) == (3, 4)
    y = m(ember.empty(2, 4, device="meta"))
    assert y.is_meta and tuple(y.shape) == (2, 3)
    m2 = nn.Linear(4, 3, device="meta")
    assert m2.weight.is_meta
    ref = nn.Linear(4, 3)
    m2.load_state_dict(ref.state_dict(), assign=True)
    assert not m2.weight.is_meta and m2.weight.tolist() == ref.weight.tolist()
    m3 = nn.Linear(4, 3, device="meta")
    with pytest.raises(NotImplementedError, match="to_empty"):
        m3.to("cpu")
    m3.to_empty(device="cpu")
    assert not m3.weight.is_meta and m3.weight.requires_grad
    nn.init.ones_(m3.weight)
    assert m3(ember.ones(1, 4)).shape == (1, 3)


def test_deepcopy():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    c = copy.deepcopy(m)
    assert c[0].weight is not m[0].weight and isinstance(c[0].weight, nn.Parameter)
    assert c[0].weight.tolist() == m[0].weight.tolist() and c[0].weight.requires_grad
    with ember.no_grad():
        c[0].weight.fill_(0)
    assert m[0].weight.abs().sum().item() > 0


def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre") or (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out + 1)
    y = m(ember.ones(1, 2))
    assert calls == ["pre", "post"]
    np.testing.assert_allclose(y.detach().numpy(), (m.bias + 1).detach().numpy()[None])
    h1.remove()
    h2.remove()
    m(ember.ones(1, 2))
    assert calls == ["pre", "post"]
    kw = []
    m.register_forward_pre_hook(lambda mod, args, kwargs: kw.append(dict(kwargs)), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: kw.append("out"), with_kwargs=True)
    m(input=ember.ones(1, 2))
    assert len(kw) == 2 and "input" in kw[0]
    order = []
    m2 = nn.Identity()
    m2.register_forward_hook(lambda *a: order.append(1))
    m2.register_forward_hook(lambda *a: order.append(0), prepend=True)
    m2(ember.ones(1))
    assert order == [0, 1]


def test_full_backward_hook(torch):
    def run(M):
        lin = M.nn.Linear(3, 2)
        with M.no_grad():
            lin.weight.copy_(M.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]]))
        seen = {}

        def hook(mod, gin, gout):
            seen["gin"] = [g.detach().numpy().copy() for g in gin]
            seen["gout"] = [g.detach().numpy().copy() for g in gout]
            return (gin[0] * 2,)
        lin.register_full_backward_hook(hook)
        x = M.ones(4, 3, requires_grad=True)
        (lin(x) * M.tensor([1.0, 3.0])).sum().backward()
        return seen, x.grad.numpy()
    (es, eg), (ts, tg) = run(ember), run(torch)
    for k in ("gin", "gout"):
        for a, b in zip(es[k], ts[k]):
            np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(eg, tg)


def test_state_dict_hooks_and_extra_state():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = 1

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]
    m = WithExtra()
    m.value = 5
    sd = m.state_dict()
    assert sd["_extra_state"] == {"value": 5}
    m2 = WithExtra()
    m2.load_state_dict(sd)
    assert m2.value == 5


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.Linear)
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2 and sub[0] is seq[1]
    assert list(sub.state_dict()) == ["2.weight", "2.bias"]  # keys are kept, as in PyTorch
    seq.append(nn.Sigmoid())
    assert len(seq) == 4
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Sigmoid"]
    assert list(seq._modules) == ["0", "1", "2"]
    with pytest.raises(IndexError):
        seq[10]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.ReLU())
    ml.insert(0, nn.Tanh())
    assert len(ml) == 5 and isinstance(ml[0], nn.Tanh) and len(list(ml.parameters())) == 6
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.ReLU()
    assert list(md.keys()) == ["a", "b"] and "a" in md
    pl = nn.ParameterList([nn.Parameter(ember.ones(2)), ember.zeros(1)])
    assert len(list(pl.parameters())) == 2 and isinstance(pl[1], nn.Parameter)
    pd = nn.ParameterDict({"x": nn.Parameter(ember.ones(1))})
    assert [n for n, _ in pd.named_parameters()] == ["x"]


def test_parameter_basics():
    p = nn.Parameter(ember.ones(2))
    assert p.requires_grad and p.is_leaf and isinstance(p, ember.Tensor)
    assert repr(p).startswith("Parameter containing:\ntensor(")
    q = nn.Parameter(ember.ones(2), requires_grad=False)
    assert not q.requires_grad
    y = p * 2
    assert type(y) is ember.Tensor
    with pytest.raises(RuntimeError):
        nn.Parameter(ember.tensor([1, 2]))


def test_get_submodule_and_parameter():
    m = nn.Sequential(OrderedDict(block=nn.Sequential(nn.Linear(2, 2))))
    assert isinstance(m.get_submodule("block.0"), nn.Linear)
    assert m.get_parameter("block.0.bias") is m.block[0].bias
    with pytest.raises(AttributeError):
        m.get_submodule("block.7")
