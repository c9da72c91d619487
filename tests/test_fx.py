"""ember.fx: tracing, the Graph/Node API, code generation, GraphModule, Interpreter/Transformer,
passes (ShapeProp, profiling, conv/linear+bn fusion). torch.fx is the oracle for graph text/names."""
import copy
import linecache
import operator
import traceback
from math import sqrt  # bound at module scope: the tracer records calls of it on traced values

import numpy as np
import pytest

import ember
import ember.fx as fx
from ember import nn
from ember.fx import Graph, GraphModule, Interpreter, Transformer, symbolic_trace
from ember.fx.passes.shape_prop import ShapeProp
from ember.fx.passes.profiling import ProfilingInterpreter
from ember.fx.experimental.optimization import fuse


def opaque_pair(x, y):
    """Branches on data: traced only because it is wrapped."""
    return x * 2 if y.sum() > 0 else x


fx.wrap("opaque_pair")
fx.wrap("len")


def _net(lib):
    """The same small residual network for ember and torch (for comparing traces)."""
    nn_ = lib.nn

    class Block(nn_.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn_.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn_.BatchNorm2d(c)
            self.relu = nn_.ReLU()
            self.conv2 = nn_.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn_.BatchNorm2d(c)

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += x
            return self.relu(out)

    class Net(nn_.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn_.Conv2d(3, 4, 3, padding=1)
            self.bn1 = nn_.BatchNorm2d(4)
            self.layer1 = nn_.Sequential(Block(4), Block(4))
            self.pool = nn_.AdaptiveAvgPool2d((1, 1))
            self.fc = nn_.Linear(4, 5)
            self.scale = nn_.Parameter(lib.ones(5))

        def forward(self, x, bias=1.0):
            x = lib.relu(self.bn1(self.conv1(x)))
            x = self.layer1(x)
            x = lib.flatten(self.pool(x), 1)
            y = self.fc(x) * self.scale + bias
            n = x.size(0)
            return y.view(n, -1)[:, :3].sum(dim=1) + x.shape[1]

    return Net()


def _fn(lib):
    def f(a, b, k: int = 2):
        c = lib.cat([a, b], dim=1)
        left, right = c.chunk(2, dim=1)
        d = lib.sigmoid(left) * k - right.mean()
        return {"out": d.t(), "parts": (left, -right)}
    return f


def _same(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def _as_ember_text(text):
    return text.replace("torch.", "ember.")


# ----------------------------------------------------------------------------- tracing vs torch.fx

def test_function_graph_text_matches_torch_fx(torch):
    g = symbolic_trace(_fn(ember))
    tg = torch.fx.symbolic_trace(_fn(torch))
    assert str(g.graph) == _as_ember_text(str(tg.graph))
    assert [n.name for n in g.graph.nodes] == [n.name for n in tg.graph.nodes]


def test_module_graph_text_and_names_match_torch_fx(torch):
    g = symbolic_trace(_net(ember))
    tg = torch.fx.symbolic_trace(_net(torch))
    assert str(g.graph) == _as_ember_text(str(tg.graph))
    names = [n.name for n in g.graph.nodes]
    assert "layer1_0_relu_1" in names and "add_1" in names and "layer1_1_bn2" in names
    print_line = next(n.format_node() for n in g.graph.nodes if n.name == "conv1")
    assert print_line == "%conv1 : [num_users=1] = call_module[target=conv1](args = (%x,), kwargs = {})"


def test_traced_module_matches_eager_exactly():
    m = _net(ember).eval()
    g = symbolic_trace(m)
    x = ember.randn(2, 3, 8, 8)
    _same(g(x), m(x))
    _same(g(x, 3.0), m(x, 3.0))
    # with autograd: same gradients
    x1 = ember.randn(2, 3, 8, 8, requires_grad=True)
    x2 = x1.detach().requires_grad_()
    g(x1).sum().backward()
    m(x2).sum().backward()
    np.testing.assert_allclose(x1.grad.numpy(), x2.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_function_trace_runs_and_signature_kept():
    f = _fn(ember)
    g = symbolic_trace(f)
    a, b = ember.randn(2, 3), ember.randn(2, 3)
    out, ref = g(a, b), f(a, b)
    ember.testing.assert_close(out, ref)
    ember.testing.assert_close(g(a, b, k=5), f(a, b, k=5))
    assert "def forward(self, a, b, k : int = 2):" in g.code
    assert type(g).__name__ == "f"


def test_leaf_modules_and_custom_tracer():
    m = _net(ember)
    g = symbolic_trace(m)
    targets = [n.target for n in g.graph.nodes if n.op == "call_module"]
    assert targets[:3] == ["conv1", "bn1", "layer1.0.conv1"]  # Sequential and Block are inlined
    assert "layer1" not in targets

    class KeepBlocks(fx.Tracer):
        def is_leaf_module(self, mod, qualname):
            return type(mod).__name__ == "Block" or super().is_leaf_module(mod, qualname)
    graph = KeepBlocks().trace(m)
    gm = GraphModule(m, graph)
    assert [n.target for n in graph.nodes if n.op == "call_module"] == \
        ["conv1", "bn1", "layer1.0", "layer1.1", "pool", "fc"]
    x = ember.randn(1, 3, 6, 6)
    _same(gm(x), m(x))


def test_parameters_become_get_attr_and_constants_are_stored():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.randn(3))
            self.register_buffer("b", ember.ones(3))

        def forward(self, x):
            return self.w * x + self.b + ember.tensor([1.0, 2.0, 3.0])

    m = M()
    m.register_buffer("hidden", ember.ones(3), persistent=False)
    g = symbolic_trace(m)
    gets = [n.target for n in g.graph.nodes if n.op == "get_attr"]
    assert gets == ["w", "b", "_tensor_constant0"]
    x = ember.randn(3)
    ember.testing.assert_close(g(x), m(x))
    assert list(g.state_dict()) == list(m.state_dict()) == ["w", "b"]  # constants stay out of it

    class UsesHidden(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("hidden", ember.ones(3), persistent=False)
            self.register_buffer("kept", ember.ones(3))

        def forward(self, x):
            return x + self.hidden + self.kept
    u = UsesHidden()
    assert list(symbolic_trace(u).state_dict()) == list(u.state_dict()) == ["kept"]


def test_wrap_keeps_function_opaque():
    def f(x, y):
        return opaque_pair(x, y) + 1
    g = symbolic_trace(f)
    calls = [n.target for n in g.graph.nodes if n.op == "call_function"]
    assert calls == [opaque_pair, operator.add]
    x = ember.randn(3)
    ember.testing.assert_close(g(x, ember.ones(2)), x * 2 + 1)
    ember.testing.assert_close(g(x, -ember.ones(2)), x + 1)


def test_control_flow_error_names_the_line():
    def branchy(x):
        if x.sum() > 0:  # the line the error names
            return x
        return -x
    with pytest.raises(fx.TraceError) as ei:
        symbolic_trace(branchy)
    assert not hasattr(ember.relu, "__fx_original__")  # patches are undone after a failed trace
    msg = str(ei.value)
    assert "symbolically traced variables cannot be used as inputs to control flow" in msg
    assert "if x.sum() > 0:" in msg and "test_fx.py" in msg


def test_concrete_args_specialise():
    def f(x, flag):
        if flag:
            return x.relu()
        return x
    g = symbolic_trace(f, concrete_args={"flag": True})
    x = ember.randn(4)
    ember.testing.assert_close(g(x, True), x.relu())
    ember.testing.assert_close(g(x), x.relu())  # the specialised value is the default
    with pytest.raises(AssertionError, match="flag has been specialized"):
        g(x, False)
    with pytest.raises(TypeError, match="concrete_args"):
        symbolic_trace(f, concrete_args={"nope": 1})


def test_iteration_and_len_errors():
    def unpack(x):
        a, b = x.split(2)
        return a + b
    g = symbolic_trace(unpack)
    x = ember.randn(4)
    ember.testing.assert_close(g(x), x[:2] + x[2:])

    def loop(x):
        return [t for t in x]
    with pytest.raises(fx.TraceError, match="cannot be iterated"):
        symbolic_trace(loop)
    with pytest.raises(RuntimeError, match="'len' is not supported"):
        symbolic_trace(lambda x: x.__len__())


def test_wrap_builtin_len():
    g = symbolic_trace(lambda x: x * len(x))
    assert [n.target for n in g.graph.nodes if n.op == "call_function"][0] is len
    assert "len_1 = len(x)" in g.code
    ember.testing.assert_close(g(ember.ones(3)), ember.full((3,), 3.0))
    assert "len" not in globals()  # the module's namespace is restored after tracing


def test_tensor_with_proxy_operators_and_patches_restored():
    c = ember.ones(3)
    relu = ember.relu
    g = symbolic_trace(lambda x: c * x + c[0])
    x = ember.randn(3)
    ember.testing.assert_close(g(x), c * x + c[0])
    assert ember.relu is relu and ember.Tensor.__mul__ is type(c).__mul__
    assert not hasattr(ember.relu, "__fx_original__")
    assert ember.nn.Module.__call__.__name__ == "__call__"


# ----------------------------------------------------------------------------- Graph / Node API

def _simple():
    g = Graph()
    x = g.placeholder("x")
    y = g.call_function(ember.relu, (x,))
    z = g.call_method("sum", (y,), {"dim": 0})
    g.output(z)
    return g, x, y, z


def test_graph_building_users_and_inputs():
    g, x, y, z = _simple()
    assert [n.op for n in g.nodes] == ["placeholder", "call_function", "call_method", "output"]
    assert list(x.users) == [y] and list(y.users) == [z]
    assert z.all_input_nodes == [y]
    assert len(g.nodes) == 4
    assert [n.name for n in reversed(g.nodes)] == ["output", "sum_1", "relu", "x"]
    gm = GraphModule(nn.Module(), g)
    v = ember.tensor([[1.0, -2.0], [3.0, 4.0]])
    ember.testing.assert_close(gm(v), ember.relu(v).sum(dim=0))


def test_inserting_before_after_and_replace():
    g, x, y, z = _simple()
    with g.inserting_before(y):
        a = g.call_function(ember.neg, (x,))
    y.replace_input_with(x, a)
    with g.inserting_after(y):
        b = g.call_function(operator.mul, (y, 2))
    changed = y.replace_all_uses_with(b)
    assert changed == [z, b] or set(changed) == {z, b}
    b.args = (y, 2)  # replace_all_uses_with also rewired b itself
    assert [n.name for n in g.nodes] == ["x", "neg", "relu", "mul", "sum_1", "output"]
    g.lint()
    gm = GraphModule(nn.Module(), g)
    v = ember.tensor([[1.0, -2.0], [3.0, 4.0]])
    ember.testing.assert_close(gm(v), (ember.relu(-v) * 2).sum(dim=0))
    assert "mul = relu * 2" in gm.code


def test_erase_node_refuses_used_nodes_and_dce():
    g, x, y, z = _simple()
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(y)
    with g.inserting_after(y):
        dead = g.call_function(ember.exp, (y,))
    with g.inserting_after(dead):
        g.call_function(ember.sin, (dead,))
    assert len(g.nodes) == 6
    assert g.eliminate_dead_code()
    assert [n.name for n in g.nodes] == ["x", "relu", "sum_1", "output"]
    assert not g.eliminate_dead_code()
    assert x.users and y.users


def test_lint_catches_broken_graphs():
    g, x, y, z = _simple()
    g.lint()
    y.prepend(z)  # z now runs before its input
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()
    g2 = Graph()
    g2.get_attr("missing")
    g2.output(None)
    m = nn.Module()
    m.missing = ember.ones(1)
    gm = GraphModule(m, g2)
    gm.graph.lint()
    del gm.missing
    with pytest.raises(RuntimeError, match="nonexistent attribute missing"):
        gm.graph.lint()


def test_node_copy_graph_copy_and_deepcopy():
    g, x, y, z = _simple()
    g2 = Graph()
    val_map = {}
    out = g2.graph_copy(g, val_map)
    g2.output(out)
    assert [n.name for n in g2.nodes] == [n.name for n in g.nodes]
    assert val_map[y].graph is g2 and val_map[y].target is ember.relu
    g3 = Graph()
    p = g3.placeholder("inp")
    c = g3.node_copy(y, lambda n: p)
    assert c.args == (p,) and c.name == "relu"
    g4 = copy.deepcopy(g)
    assert str(g4) == str(g) and all(n.graph is g4 for n in g4.nodes)
    with pytest.raises(RuntimeError, match="another graph"):
        g3.call_function(ember.neg, (x,))


def test_names_are_unique_and_legal():
    g = Graph()
    a = g.placeholder("input")
    b = g.placeholder("x")
    n1 = g.call_function(operator.add, (a, b))
    n2 = g.call_function(operator.add, (n1, b))
    n3 = g.call_function(getattr, (n2, "shape"))
    n4 = g.call_module("layer1.0.conv1", (n2,))
    n5 = g.call_module("layer1.0.conv1", (n4,))
    assert [a.name, n1.name, n2.name, n3.name, n4.name, n5.name] == \
        ["input_1", "add", "add_1", "getattr_1", "layer1_0_conv1", "layer1_0_conv1_1"]


# ----------------------------------------------------------------------------- GraphModule

def test_graphmodule_code_recompile_and_traceback():
    class Bad(nn.Module):
        def forward(self, x):
            y = x + 1
            return y.view(-1, 7)
    g = symbolic_trace(Bad())
    assert "view = add.view(-1, 7)" in g.code
    with pytest.raises(RuntimeError) as ei:
        g(ember.randn(4))
    frames = traceback.extract_tb(ei.value.__traceback__)
    gen = [f for f in frames if f.filename.startswith("<eval_with_key>")]
    assert gen and "view = add.view(-1, 7)" in gen[0].line
    assert linecache.getline(gen[0].filename, gen[0].lineno).strip().startswith("view = add.view")
    # edit and recompile
    for n in g.graph.nodes:
        if n.op == "call_method" and n.target == "view":
            n.args = (n.args[0], -1, 2)
    g.recompile()
    assert g(ember.randn(4)).shape == (2, 2)
    text = str(g)
    assert text.startswith("Bad(") and "def forward(self, x):" in text


def test_graphmodule_state_dict_and_deepcopy():
    m = _net(ember).eval()
    g = symbolic_trace(m)
    assert list(g.state_dict()) == list(m.state_dict()) or sorted(g.state_dict()) == sorted(m.state_dict())
    m2 = _net(ember).eval()
    g.load_state_dict(m2.state_dict())
    x = ember.randn(1, 3, 5, 5)
    _same(g(x), m2(x))
    g2 = copy.deepcopy(g)
    assert type(g2) is not type(g) and g2.code == g.code
    assert g2.fc is not g.fc and g2.layer1 is not g.layer1
    _same(g2(x), g(x))
    # changing the copy leaves the original alone
    for n in g2.graph.nodes:
        if n.op == "call_function" and n.target is ember.relu:
            n.target = ember.sigmoid
    g2.recompile()
    assert "ember.sigmoid" in g2.code and "ember.sigmoid" not in g.code
    _same(g(x), m2(x))


def test_graphmodule_from_dict_root():
    g = Graph()
    x = g.placeholder("x")
    w = g.get_attr("sub.w")
    g.output(g.call_function(operator.mul, (x, w)))
    gm = GraphModule({"sub.w": ember.tensor([2.0, 3.0])}, g)
    ember.testing.assert_close(gm(ember.ones(2)), ember.tensor([2.0, 3.0]))
    with pytest.raises(RuntimeError, match="not provided"):
        GraphModule({}, g)


# ----------------------------------------------------------------------------- Interpreter & co

def test_interpreter_runs_and_overrides():
    m = _net(ember).eval()
    g = symbolic_trace(m)
    x = ember.randn(2, 3, 6, 6)
    _same(Interpreter(g).run(x), m(x))

    class NegRelu(Interpreter):
        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                return ember.neg(*args)
            return super().call_function(target, args, kwargs)
    f = symbolic_trace(lambda a: ember.relu(a) + 1)
    v = ember.randn(3)
    ember.testing.assert_close(NegRelu(f).run(v), -v + 1)
    seen = []

    class Record(Interpreter):
        def run_node(self, n):
            seen.append(n.op)
            return super().run_node(n)
    Record(f).run(v)
    assert seen == ["placeholder", "call_function", "call_function", "output"]
    with pytest.raises(RuntimeError, match="Expected positional argument"):
        Interpreter(f).run()


def test_transformer_rewrites():
    def f(x):
        return ember.sigmoid(x) + x.relu()

    class Swap(Transformer):
        def call_function(self, target, args, kwargs):
            if target is ember.sigmoid:
                return ember.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "relu":
                return super().call_method("abs", args, kwargs)
            return super().call_method(target, args, kwargs)
    g = Swap(symbolic_trace(f)).transform()
    x = ember.randn(4)
    ember.testing.assert_close(g(x), -x + x.abs())
    assert "ember.neg(x)" in g.code and "x.abs()" in g.code
    # identity transform of a module keeps the module calls
    m = _net(ember).eval()
    t = Transformer(symbolic_trace(m)).transform()
    y = ember.randn(1, 3, 4, 4)
    _same(t(y), m(y))


def test_shape_prop():
    m = _net(ember).eval()
    g = symbolic_trace(m)
    ShapeProp(g).propagate(ember.randn(2, 3, 6, 6))
    meta = {n.name: n.meta.get("tensor_meta") for n in g.graph.nodes}
    assert meta["conv1"].shape == (2, 4, 6, 6) and meta["conv1"].dtype is ember.float32
    assert meta["flatten"].shape == (2, 4)
    assert meta["fc"].stride == (5, 1)
    assert g.graph.nodes.__iter__().__next__().meta["type"] is ember.Tensor


def test_profiling_interpreter_table():
    m = _net(ember).eval()
    p = ProfilingInterpreter(m)
    x = ember.randn(1, 3, 6, 6)
    for _ in range(2):
        _same(p.run(x), m(x))
    rows = p.summary()
    assert len(rows) == len(p.module.graph.nodes)
    assert all(r[3] >= 0 for r in rows) and sum(r[4] for r in rows) <= 100.5
    assert rows == sorted(rows, key=lambda r: r[3], reverse=True)
    table = p.summary_table(top=3)
    assert "Mean time (ms)" in table and "Total:" in table and len(table.splitlines()) == 7
    with pytest.raises(RuntimeError, match="at least once"):
        ProfilingInterpreter(m).summary()


# ----------------------------------------------------------------------------- fusion

def _randomise_bn(m):
    ember.manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
            with ember.no_grad():
                mod.running_mean.copy_(ember.randn(mod.num_features) * 0.1)
                mod.running_var.copy_(ember.rand(mod.num_features) + 0.5)
                mod.weight.copy_(ember.randn(mod.num_features))
                mod.bias.copy_(ember.randn(mod.num_features))
    return m


def test_fuse_conv_bn():
    m = _randomise_bn(_net(ember)).eval()
    f = fuse(m)
    assert not [n for n in f.graph.nodes if n.op == "call_module" and "bn" in n.target]
    assert "bn" not in f.code
    x = ember.randn(2, 3, 6, 6)
    with ember.no_grad():
        ember.testing.assert_close(f(x), m(x), rtol=1e-4, atol=1e-5)
    assert f.conv1.bias is not None and m.conv1 is not f.conv1  # the model was copied
    with pytest.raises(RuntimeError, match="eval"):
        fuse(_net(ember).train())


def test_fuse_linear_bn1d_and_shared_input_left_alone():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 6)
            self.bn = nn.BatchNorm1d(6)
            self.lin2 = nn.Linear(4, 6)
            self.bn2 = nn.BatchNorm1d(6)

        def forward(self, x):
            a = self.lin2(x)
            return self.bn(self.lin(x)) + self.bn2(a) + a  # lin2 has two users: not fused
    m = _randomise_bn(M()).eval()
    f = fuse(m)
    mods = [n.target for n in f.graph.nodes if n.op == "call_module"]
    assert mods == ["lin2", "lin", "bn2"]
    x = ember.randn(3, 4)
    with ember.no_grad():
        ember.testing.assert_close(f(x), m(x), rtol=1e-4, atol=1e-5)


def test_fuse_matches_torch_fx_fuse(torch):
    m = _randomise_bn(_net(ember)).eval()
    tm = _net(torch).eval()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    import torch.fx.experimental.optimization as topt
    f, tf = fuse(m), topt.fuse(tm)
    assert [n.name for n in f.graph.nodes] == [n.name for n in tf.graph.nodes]
    for k, v in tf.state_dict().items():
        np.testing.assert_allclose(f.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,shape", [("SimpleMLP", (4, 1, 28, 28)), ("SimpleCNN", (2, 1, 28, 28))])
def test_small_models_traced_identical_to_eager(name, shape):
    from ember import models
    m = getattr(models, name)().eval()
    g = symbolic_trace(m)
    x = ember.randn(*shape)
    with ember.no_grad():
        _same(g(x), m(x))
        _same(Interpreter(g).run(x), m(x))
    assert sorted(g.state_dict()) == sorted(m.state_dict())
    if name == "SimpleMLP":  # `from ember import flatten` in the model's module is recorded too
        assert [n.target for n in g.graph.nodes if n.op == "call_function"] == [ember.flatten]


def test_resnet18_traced_identical_to_eager():
    models = pytest.importorskip("ember.models")
    r = models.resnet18().eval()
    g = symbolic_trace(r)
    names = {n.name for n in g.graph.nodes}
    assert {"conv1", "maxpool", "layer1_0_conv1", "layer1_0_relu_1", "add", "add_7", "flatten", "fc"} <= names
    assert sum(1 for n in g.graph.nodes if n.op == "call_module") == 60
    x = ember.randn(1, 3, 32, 32)
    with ember.no_grad():
        _same(g(x), r(x))
    assert sorted(g.state_dict()) == sorted(r.state_dict())


def test_submodule_surgery():
    m = _net(ember).eval()
    g = symbolic_trace(m)
    assert g.add_submodule("extra.act", nn.Sigmoid())
    out = next(n for n in g.graph.nodes if n.op == "output")
    with g.graph.inserting_before(out):
        act = g.graph.call_module("extra.act", (out.args[0],))
    out.args = (act,)
    g.graph.lint()
    g.recompile()
    x = ember.randn(1, 3, 4, 4)
    ember.testing.assert_close(g(x), ember.sigmoid(m(x)))
    assert g.graph.find_nodes(op="call_module", target="extra.act") == [act]
    out.args = (act.args[0],)
    g.graph.erase_node(act)
    g.recompile()
    g.delete_all_unused_submodules()
    assert not hasattr(g, "extra") and hasattr(g, "fc")
    assert not g.delete_submodule("nope.x")


def _rewrite_case(lib):
    def f(x, w):
        a = lib.relu(x) * 2
        b = lib.relu(a) * 2
        return lib.sigmoid(b) + lib.relu(w) * 2 + lib.relu(w) * 3

    def pattern(x):
        return lib.relu(x) * 2

    def replacement(x):
        return lib.sigmoid(x) + 1
    return f, pattern, replacement


def test_replace_pattern_matches_torch_fx(torch):
    f, pattern, replacement = _rewrite_case(ember)
    g = symbolic_trace(f)
    matches = fx.replace_pattern(g, pattern, replacement)
    tf, tp, tr = _rewrite_case(torch)
    tg = torch.fx.symbolic_trace(tf)
    tmatches = torch.fx.replace_pattern(tg, tp, tr)
    assert len(matches) == len(tmatches) == 3
    assert [n.target for n in g.graph.nodes] == [
        getattr(ember, t.__name__) if callable(t) and getattr(t, "__module__", "") == "torch" else t
        for t in (n.target for n in tg.graph.nodes)]
    g.graph.lint()
    x, w = ember.randn(4), ember.randn(4)
    s = ember.sigmoid
    ember.testing.assert_close(g(x, w), s(s(s(x) + 1) + 1) + s(w) + 1 + ember.relu(w) * 3)


def test_replace_pattern_leaves_escaping_values_alone():
    def f(x):
        r = ember.relu(x)
        return r * 2, r  # relu's value is used outside the pattern: no match
    g = symbolic_trace(f)
    assert fx.replace_pattern(g, lambda x: ember.relu(x) * 2, lambda x: x) == []
    with pytest.raises(ValueError, match="inputs"):
        fx.replace_pattern(g, lambda x: ember.relu(x) * 2, lambda x, y: x)


def test_autowrap_math_and_stack_traces():
    def f(x):
        return x * sqrt(x.shape[0])  # sqrt of a traced value: recorded, not evaluated
    g = symbolic_trace(f)
    assert any(n.target is sqrt for n in g.graph.nodes)
    ember.testing.assert_close(g(ember.ones(4)), ember.full((4,), 2.0))
    ember.testing.assert_close(g(ember.ones(9)), ember.full((9,), 3.0))

    def bad(x):
        return x.view(-1, 7)
    graph = fx.Tracer(record_stack_traces=True).trace(bad)
    node = next(n for n in graph.nodes if n.op == "call_method")
    assert "return x.view(-1, 7)" in node.stack_trace and "test_fx.py" in node.stack_trace
    with pytest.raises(RuntimeError) as ei:
        Interpreter(GraphModule(nn.Module(), graph)).run(ember.randn(4))
    notes = "\n".join(getattr(ei.value, "__notes__", []))
    assert "While executing %view" in notes and "return x.view(-1, 7)" in notes


def test_keyword_only_parameters():
    def f(x=1.0, *, y):
        return y * x
    g = symbolic_trace(f)
    assert "def forward(self, x = 1.0, *, y):" in g.code
    ember.testing.assert_close(g(2.0, y=ember.ones(2)), ember.full((2,), 2.0))
    with pytest.raises(NotImplementedError, match=r"\*args"):
        symbolic_trace(lambda x, *args: x)
