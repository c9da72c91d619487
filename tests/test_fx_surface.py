"""FX as its users write it (issue 20): graphs built by hand with GraphAppendingTracer, ATen call
targets (torch.ops.aten.*), the torch.fx.node type names; compared with torch.fx where it runs."""
import numpy as np
import pytest

import ember
import ember.fx as fx
import ember.nn as nn


def _build(lib, libfx):
    g = libfx.Graph()
    x = g.placeholder("x")
    tracer = libfx.proxy.GraphAppendingTracer(g)
    p = libfx.Proxy(x, tracer)
    y = lib.relu(p) * 2 + lib.exp(p).sum() - p.tanh()
    g.output(y.node)
    return libfx.GraphModule(lib.nn.Module(), g)


def test_graph_appending_tracer_matches_torch(torch):
    import torch.fx as tfx
    gm, tgm = _build(ember, fx), _build(torch, tfx)
    x = np.array([-1.0, 2.0, 0.5], np.float32)
    np.testing.assert_allclose(gm(ember.tensor(x)).numpy(), tgm(torch.tensor(x)).numpy(), rtol=1e-6)
    assert [n.op for n in gm.graph.nodes] == [n.op for n in tgm.graph.nodes]


def test_graph_appending_tracer_releases_the_slow_path():
    import gc
    from ember import _dispatch as D
    before = D.state.proxy_tracers
    gm = _build(ember, fx)
    gc.collect()
    assert D.state.proxy_tracers == before and D.state.simple
    assert gm(ember.ones(2)).shape == (2,)


def test_aten_targets_run_and_print(torch):
    aten = ember.ops.aten
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(aten.relu.default, (x,))
    z = g.call_function(aten.add.Tensor, (y, x))
    w = g.call_function(aten._softmax.default, (z, 0, False))
    g.output(w)
    gm = fx.GraphModule(nn.Module(), g)
    assert "ops.aten.add.Tensor(" in gm.code
    v = np.array([-1.0, 2.0], np.float32)
    t = torch.ops.aten
    expect = t._softmax.default(t.add.Tensor(t.relu.default(torch.tensor(v)), torch.tensor(v)), 0, False)
    np.testing.assert_allclose(gm(ember.tensor(v)).numpy(), expect.numpy(), rtol=1e-6)
    assert aten.relu.default is aten.relu.default and aten.relu.default.overloadpacket is aten.relu
    assert str(aten.add.Tensor) == str(t.add.Tensor) and aten.relu.default.name() == t.relu.default.name()
    a = np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype(np.float32)
    k = np.random.default_rng(2).standard_normal((3, 2, 3, 3)).astype(np.float32)
    args = ([2, 1], [1, 1], [1, 1], False, [0, 0], 1)
    np.testing.assert_allclose(aten.convolution(ember.tensor(a), ember.tensor(k), None, *args).numpy(),
                               t.convolution(torch.tensor(a), torch.tensor(k), None, *args).numpy(),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(AttributeError, match="no attribute"):
        aten.no_such_op_anywhere


def test_node_type_names():
    from ember.fx.node import Target, Argument  # noqa: F401
    assert Target is not None
