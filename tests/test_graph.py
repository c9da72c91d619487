"""Graph inspection: grad_fn classes, next_functions, AccumulateGrad, callable nodes."""
import numpy as np
import pytest

import ember
from ember.autograd.graph import AccumulateGrad


def test_node_names_match_torch(torch):
    cases = [lambda m, x: x * 2, lambda m, x: x + x, lambda m, x: x.exp(), lambda m, x: x ** 2,
             lambda m, x: x.sum(), lambda m, x: x.mean(), lambda m, x: x - 1, lambda m, x: x / 3,
             lambda m, x: x.tanh(), lambda m, x: x.sigmoid(), lambda m, x: x.relu(), lambda m, x: x.view(2, 2),
             lambda m, x: x.permute(1, 0), lambda m, x: x[0], lambda m, x: x.abs(), lambda m, x: x.clone(),
             lambda m, x: m.log_softmax(x, 1), lambda m, x: x.sqrt(), lambda m, x: x.neg(), lambda m, x: x.log()]
    for f in cases:
        e = f(ember, ember.ones(2, 2, requires_grad=True))
        t = f(torch, torch.ones(2, 2, requires_grad=True))
        assert e.grad_fn.name() == t.grad_fn.name(), (e.grad_fn.name(), t.grad_fn.name())
        assert type(e.grad_fn).__name__ == e.grad_fn.name()
        assert len(e.grad_fn.next_functions) == len(t.grad_fn.next_functions), e.grad_fn.name()


# PyTorch names a node after the overload or the distinct op a call amounts to
_OVERLOAD_CASES = {
    "rsub_scalar": lambda m, x: 2 - x,
    "rdiv_scalar": lambda m, x: 2 / x,
    "rpow_scalar": lambda m, x: 2 ** x,
    "pow_tensor": lambda m, x: x ** (x + 1),
    "sum_dim": lambda m, x: x.sum(1),
    "sum_dims_keepdim": lambda m, x: x.sum((0, 1), keepdim=True),
    "mean_dim": lambda m, x: x.mean(-1),
    "prod_dim": lambda m, x: x.prod(0),
    "max_all": lambda m, x: x.max(),
    "min_all": lambda m, x: x.min(),
    "amax_dim": lambda m, x: x.amax(1),
    "std": lambda m, x: x.std(),
    "std_dim": lambda m, x: x.std(1, keepdim=True),
    "norm": lambda m, x: x.norm(),
    "norm_dim": lambda m, x: x.norm(dim=1),
    "vector_norm": lambda m, x: m.linalg.vector_norm(x),
    "norm_p1": lambda m, x: x.norm(p=1),
    "norm_p3_dim": lambda m, x: x.norm(p=3, dim=1),
    "t": lambda m, x: x.t(),
    "transpose": lambda m, x: x.transpose(0, 1),
    "swapaxes": lambda m, x: x.swapaxes(0, 1),
    "mT": lambda m, x: x.mT,
    "T": lambda m, x: x.T,
    "squeeze_dim": lambda m, x: x.unsqueeze(0).squeeze(0),
    "squeeze_dims": lambda m, x: x.unsqueeze(0).squeeze((0,)),
    "dot": lambda m, x: x[0] @ x[1],
    "mv": lambda m, x: x @ x[0],
    "mm": lambda m, x: x @ x,
    "bmm": lambda m, x: m.bmm(x.unsqueeze(0), x.unsqueeze(0)),
    "clamp": lambda m, x: x.clamp(0.2, 0.8),
    "clamp_min": lambda m, x: x.clamp(min=0.2),
    "clamp_tensor": lambda m, x: x.clamp(x.detach() * 0.5, x.detach() + 1),
    "linear": lambda m, x: m.nn.functional.linear(x, x, x[0]),
    "linear_no_bias": lambda m, x: m.nn.functional.linear(x, x),
    "mse_loss": lambda m, x: m.nn.functional.mse_loss(x, x.detach() * 0.5),
    "mse_loss_sum": lambda m, x: m.nn.functional.mse_loss(x, x.detach() * 0.5, reduction="sum"),
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, (2,)),
    "layer_norm_affine": lambda m, x: m.nn.functional.layer_norm(x, (2,), x[0], x[1]),
    "group_norm": lambda m, x: m.nn.functional.group_norm(x.reshape(1, 2, 2), 2, x[0], x[1]),
    "nll_loss": lambda m, x: m.nn.functional.nll_loss(x, m.tensor([0, 1])),
    "bce": lambda m, x: m.nn.functional.binary_cross_entropy(x, x.detach() * 0.5),
    "bce_with_logits": lambda m, x: m.nn.functional.binary_cross_entropy_with_logits(x, x.detach() * 0.5),
    "smooth_l1_loss": lambda m, x: m.nn.functional.smooth_l1_loss(x, x.detach() * 0.5),
    "huber_loss": lambda m, x: m.nn.functional.huber_loss(x, x.detach() * 0.5, delta=0.1),
    "addmm": lambda m, x: m.addmm(x[0], x, x),
    "addmm_scaled": lambda m, x: m.addmm(x, x, x, beta=0.5, alpha=2.0),
    "H": lambda m, x: x.H,
    "log1p": lambda m, x: x.log1p(),
    "logsigmoid": lambda m, x: m.nn.functional.logsigmoid(x),
    "mish": lambda m, x: m.nn.functional.mish(x),
    "selu": lambda m, x: m.nn.functional.selu(x),
    "hardswish": lambda m, x: m.nn.functional.hardswish(x),
    "hardsigmoid": lambda m, x: m.nn.functional.hardsigmoid(x),
    "pad": lambda m, x: m.nn.functional.pad(x, (1, 2)),
    "interpolate_nearest_1d": lambda m, x: m.nn.functional.interpolate(x.unsqueeze(0), scale_factor=2),
    "interpolate_nearest_2d": lambda m, x: m.nn.functional.interpolate(x.reshape(1, 1, 2, 2), size=(3, 5)),
    "pad_crop": lambda m, x: m.nn.functional.pad(x, (-1, 1), value=0.5),
    "scatter_value": lambda m, x: x.scatter(1, m.tensor([[0], [1]]), 0.5),
    "scatter_src": lambda m, x: x.scatter(1, m.tensor([[0], [1]]), x),
    "copy_slices": lambda m, x: _set_first(x.clone()),
    "accumulate_grad": lambda m, x: _Leaf((x * 1).grad_fn.next_functions[0][0]),
}


def _set_first(y):
    y[0] = 1.0
    return y


class _Leaf:
    """The AccumulateGrad node of a leaf, in the shape of a tensor (its .grad_fn)."""
    def __init__(self, node):
        self.grad_fn = node


@pytest.mark.parametrize("name", list(_OVERLOAD_CASES))
def test_overload_node_names_match_torch(torch, name):
    f = _OVERLOAD_CASES[name]
    x = np.array([[0.3, 0.6], [0.9, 0.4]])
    e = f(ember, ember.tensor(x, requires_grad=True))
    t = f(torch, torch.tensor(x, requires_grad=True))
    assert e.grad_fn.name() == t.grad_fn.name()
    # (PyTorch's hand-written nodes add their namespace: torch::autograd::AccumulateGrad)
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__ == e.grad_fn.name().rsplit("::", 1)[-1]


def test_node_classes_are_made_once_per_name():
    x = ember.ones(2, 3, requires_grad=True)
    assert type(x.sum(0).grad_fn) is type(x.sum(1).grad_fn)
    assert type(x.sum(0).grad_fn) is not type(x.sum().grad_fn)
    assert type(x.sum().grad_fn).__name__ == "SumBackward0"


def test_next_functions_and_accumulate_grad():
    a = ember.tensor([2.0], requires_grad=True)
    b = ember.tensor([3.0], requires_grad=True)
    c = a * b
    d = c.exp()
    nf = d.grad_fn.next_functions
    assert nf == ((c.grad_fn, 0),)
    (na, ia), (nb, ib) = c.grad_fn.next_functions
    assert isinstance(na, AccumulateGrad) and na.variable is a and nb.variable is b
    assert ia == ib == 0
    assert na.name() == "torch::autograd::AccumulateGrad" and type(na).__name__ == "AccumulateGrad"  # as PyTorch
    assert c.grad_fn.next_functions[0][0] is na  # one accumulator per leaf while it lives
    e = a * 2
    assert e.grad_fn.next_functions[1] == (None, 0)
    assert a.grad_fn is None and a.is_leaf


def test_nodes_are_callable():
    a = ember.tensor([3.0], requires_grad=True)
    b = ember.tensor([2.0], requires_grad=True)
    c = a * b
    ga, gb = c.grad_fn(ember.tensor([1.0]))
    assert ga.tolist() == [2.0] and gb.tolist() == [3.0]
    e = c.exp()
    (g,) = (e.grad_fn(ember.tensor([1.0])),)
    np.testing.assert_allclose(g.detach().numpy(), np.exp([6.0]), rtol=1e-6)


def test_hand_written_engine_over_next_functions():
    x = ember.tensor([1.5], requires_grad=True)
    y = (x * x + x.sin()).exp()
    grads = {}
    queue = [(y.grad_fn, ember.tensor([1.0]))]
    while queue:
        fn, g = queue.pop()
        outs = fn(g)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for gn, (nxt, _) in zip(outs, fn.next_functions):
            if nxt is None or gn is None:
                continue
            if isinstance(nxt, AccumulateGrad):
                grads[id(nxt.variable)] = grads.get(id(nxt.variable), 0) + gn.item()
            else:
                queue.append((nxt, gn))
    ref = np.exp(1.5 ** 2 + np.sin(1.5)) * (3.0 + np.cos(1.5))
    assert abs(grads[id(x)] - ref) < 1e-3 * ref


def test_multi_output_node():
    x = ember.tensor([[3.0, 1.0, 2.0]], requires_grad=True)
    v, i = x.max(1)
    assert v.grad_fn is not None
    assert not i.requires_grad and i.grad_fn is None
    v.sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 0.0]]
    s, idx = x.sort(1)
    s[0, 0].backward()
    assert x.grad.tolist() == [[1.0, 1.0, 0.0]]


def test_metadata_dict():
    x = ember.ones(1, requires_grad=True)
    y = x * 2
    y.grad_fn.metadata["tag"] = 1
    assert y.grad_fn.metadata == {"tag": 1}


def test_naming_rules_take_array_operands():
    a = ember.rand(3, 3, requires_grad=True)
    assert (np.ones((2, 3), dtype=np.float32) @ a).grad_fn.name() == "MmBackward0"
    assert (a @ np.ones(3, dtype=np.float32)).grad_fn.name() == "MvBackward0"
    assert (2 - a).grad_fn.name() == "RsubBackward1" and (a - 2).grad_fn.name() == "SubBackward0"
