"""ember.bfloat16 (issue 17) on ml_dtypes: promotion, conversions, printing, arithmetic computed in
float32 and rounded once, reductions accumulating in float32, matmul, and checkpoints with torch."""
import numpy as np
import pytest

import ember


def _pair(torch, *shapes, seed=0):
    rs = np.random.RandomState(seed)
    xs = [rs.randn(*s).astype(np.float32) for s in shapes]
    return [ember.tensor(x).to(ember.bfloat16) for x in xs], [torch.tensor(x).bfloat16() for x in xs]


def _check(e, t, ulps=0):
    assert e.dtype.name == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    ev, tv = e.float().numpy(), t.float().numpy()
    if ulps == 0:
        np.testing.assert_array_equal(ev, tv)
    else:  # bfloat16 has 8 significant bits: one unit in the last place is 2**-7 relative
        np.testing.assert_allclose(ev, tv, rtol=ulps * 2.0 ** -7, atol=1e-30)


def test_dtype_and_promotion(torch):
    assert ember.bfloat16.is_floating_point and ember.bfloat16.itemsize == 2
    assert repr(ember.bfloat16) == "ember.bfloat16"
    names = ["bfloat16", "float16", "float32", "float64", "int64", "int32", "int8", "uint8", "bool"]
    for a in names:
        for b in names:
            ea, eb = getattr(ember, a), getattr(ember, b)
            ta, tb = getattr(torch, a), getattr(torch, b)
            if "bfloat16" in (a, b):
                assert ember.promote_types(ea, eb).name == str(torch.promote_types(ta, tb)).split(".")[-1], (a, b)
    x = ember.ones(2, dtype=ember.bfloat16)
    assert (x + ember.ones(2, dtype=ember.float16)).dtype == ember.float32
    assert (x + ember.ones(2, dtype=ember.int64)).dtype == ember.bfloat16
    assert (x + 1).dtype == ember.bfloat16 and (x + 1.5).dtype == ember.bfloat16
    assert (x + ember.tensor(2.0)).dtype == ember.bfloat16 and (x + ember.ones(2)).dtype == ember.float32
    assert (ember.arange(3) * x[0]).dtype == ember.bfloat16


def test_conversions_and_printing(torch):
    vals = [0.1, 1.1, -2.7, 1e30, 3.0e-39, 65504.0, 1 / 3, float("inf"), float("nan")]
    e = ember.tensor(vals).to(ember.bfloat16)
    t = torch.tensor(vals).to(torch.bfloat16)
    _check(e, t)
    assert e.bfloat16() is e and ember.tensor(vals).bfloat16().dtype == ember.bfloat16
    assert e.to(ember.float16).tolist()[:3] == t.to(torch.float16).tolist()[:3]
    _check(ember.tensor([1.5, -2.5, 300.7]).bfloat16().long(), torch.tensor([1.5, -2.5, 300.7]).bfloat16().long())
    _check(ember.tensor([3, 257, -9]).to(ember.bfloat16), torch.tensor([3, 257, -9]).to(torch.bfloat16))
    assert ember.tensor([1.1], dtype=ember.bfloat16).item() == torch.tensor([1.1], dtype=torch.bfloat16).item()
    assert e.is_floating_point() and e.type() == "torch.BFloat16Tensor" and e.element_size() == 2
    assert str(ember.tensor([1.1, 2.0, -3.5]).bfloat16()) == str(torch.tensor([1.1, 2.0, -3.5]).bfloat16()).replace(
        "torch", "ember")
    p = ember.nn.Parameter(ember.ones(2, dtype=ember.bfloat16))
    assert p.requires_grad and ember.zeros(3, dtype=ember.bfloat16).dtype == ember.bfloat16


ELEMENTWISE = {
    "add": lambda T, a, b: a + b, "sub": lambda T, a, b: a - b, "mul": lambda T, a, b: a * b,
    "div": lambda T, a, b: a / b, "add_scalar": lambda T, a, b: a + 1.1, "rmul_scalar": lambda T, a, b: 3.3 * a,
    "rsub_scalar": lambda T, a, b: 1 - a, "div_scalar": lambda T, a, b: a / 3, "neg": lambda T, a, b: -a,
    "abs": lambda T, a, b: a.abs(), "exp": lambda T, a, b: a.exp(), "log": lambda T, a, b: a.abs().log(),
    "sin": lambda T, a, b: a.sin(), "tanh": lambda T, a, b: a.tanh(), "sqrt": lambda T, a, b: a.abs().sqrt(),
    "sigmoid": lambda T, a, b: a.sigmoid(), "relu": lambda T, a, b: a.relu(),
    "maximum": lambda T, a, b: T.maximum(a, b),
    "clamp": lambda T, a, b: a.clamp(-0.3, 0.7), "floor": lambda T, a, b: (a * 10).floor(),
    "round": lambda T, a, b: (a * 10).round(), "where": lambda T, a, b: T.where(a > b, a, b),
    "pow": lambda T, a, b: a.abs() ** 1.5, "cmp": lambda T, a, b: a >= b, "atan2": lambda T, a, b: T.atan2(a, b),
    "mixed_int": lambda T, a, b: a * T.arange(20, dtype=T.int32).reshape(4, 5),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_matches_torch(torch, name):
    (ea, eb), (ta, tb) = _pair(torch, (4, 5), (4, 5))
    f = ELEMENTWISE[name]
    _check(f(ember, ea, eb), f(torch, ta, tb), ulps=1 if name in ("sin", "tanh", "sigmoid", "atan2", "pow") else 0)


def test_matmul_linear_and_reductions_accumulate_in_float32(torch):
    (ea, eb, ew), (ta, tb, tw) = _pair(torch, (16, 1000), (1000, 8), (8, 1000))
    _check(ea @ eb, ta @ tb)
    _check(ember.nn.functional.linear(ea, ew, ew[:, 0]), torch.nn.functional.linear(ta, tw, tw[:, 0]))
    big_e, big_t = ea.repeat(20, 1), ta.repeat(20, 1)
    _check(big_e.sum(), big_t.sum())       # 320,000 terms: a bfloat16 running sum would stall
    _check(big_e.sum(1), big_t.sum(1))
    _check(big_e.mean(), big_t.mean())
    _check(big_e.mean(0), big_t.mean(0))
    _check(ea.abs().cumsum(1), ta.abs().cumsum(1), ulps=1)
    _check(ea.var(1), ta.var(1), ulps=1)
    _check(ea.norm(), ta.norm())
    _check(ea.amax(1), ta.amax(1))
    _check(ea.softmax(1), ta.softmax(1), ulps=1)
    assert ea.argmax().item() == ta.argmax().item()


def test_autograd_through_bfloat16(torch):
    (ea,), (ta,) = _pair(torch, (3, 4))
    ea.requires_grad_()
    ta.requires_grad_()
    (ea.exp() * 2).sum().backward()
    (ta.exp() * 2).sum().backward()
    assert ea.grad.dtype == ember.bfloat16
    _check(ea.grad, ta.grad)


def test_bfloat16_checkpoints_with_torch(torch, tmp_path):
    t = torch.randn(4, 5).bfloat16()
    p = tmp_path / "t.pt"
    torch.save({"w": t, "v": t[1:, ::2]}, p)
    e = ember.load(p)
    assert e["w"].dtype == ember.bfloat16 and e["w"].float().tolist() == t.float().tolist()
    assert e["v"].float().tolist() == t[1:, ::2].float().tolist()
    q = tmp_path / "e.pt"
    ember.save({"w": e["w"], "m": e["w"] * 2}, q)
    back = torch.load(q, weights_only=True)
    assert back["w"].dtype == torch.bfloat16 and torch.equal(back["w"], t) and torch.equal(back["m"], t * 2)


def test_bfloat16_safetensors(torch, tmp_path):
    sttorch = pytest.importorskip("safetensors.torch")
    from ember.utils import safetensors as est
    x = ember.randn(3, 2).bfloat16()
    est.save_file({"x": x}, tmp_path / "b.safetensors")
    t = sttorch.load_file(str(tmp_path / "b.safetensors"))["x"]
    assert t.dtype == torch.bfloat16 and t.float().tolist() == x.float().tolist()


def test_inplace_ops_and_finfo(torch):
    (ea, eb), (ta, tb) = _pair(torch, (4, 5), (4, 5))
    for f in (lambda a, b: a.add_(1.1), lambda a, b: a.mul_(1.3), lambda a, b: a.sub_(b), lambda a, b: a.div_(3.0),
              lambda a, b: a.mul_(b), lambda a, b: a.clamp_(-0.5, 0.5)):
        f(ea, eb)
        f(ta, tb)
        _check(ea, ta)
    assert repr(ember.finfo(ember.bfloat16)) == repr(torch.finfo(torch.bfloat16))


def test_training_step_in_bfloat16(torch):
    ember.manual_seed(0)
    m = ember.nn.Linear(5, 3).to(ember.bfloat16)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    tm = torch.nn.Linear(5, 3).bfloat16()
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(m.weight.detach().float().numpy()).bfloat16())
        tm.bias.copy_(torch.tensor(m.bias.detach().float().numpy()).bfloat16())
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    (ex,), (tx,) = _pair(torch, (8, 5))
    for mod, o, x in ((m, opt, ex), (tm, topt, tx)):
        o.zero_grad()
        mod(x).sum().backward()
        o.step()
    assert m.weight.dtype == ember.bfloat16
    _check(m.weight.detach(), tm.weight.detach(), ulps=1)
    _check(m.bias.detach(), tm.bias.detach(), ulps=1)
