"""torch.autograd.graph.saved_tensors_hooks / save_on_cpu / disable_saved_tensors_hooks (issue 20),
against PyTorch: the same tensors packed, the same gradients, the unpacked values used."""
import numpy as np
import pytest

import ember


def _run(lib, x0, pack_scale):
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t * pack_scale      # what backward will read instead of the saved tensor

    x = lib.tensor(x0, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
        y = (x * x).exp().sum() + (x.sin() * x).sum()
    y.backward()
    return packed, x.grad.numpy()


@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_hooks_match_torch(torch, scale):
    x0 = np.array([0.3, -0.2, 0.5])
    ep, eg = _run(ember, x0, scale)
    tp, tg = _run(torch, x0, scale)
    assert sorted(ep) == sorted(tp)
    np.testing.assert_allclose(eg, tg, rtol=1e-6)


def test_custom_function_saves_go_through_the_hooks():
    calls = []

    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: (calls.append("pack"), t.detach() + 1)[1],
                                                  lambda p: (calls.append("unpack"), p)[1]):
        y = Square.apply(x)
    y.sum().backward()
    assert calls == ["pack", "unpack"]
    assert x.grad.tolist() == [4.0, 6.0]     # 2 * (x + 1): the packed value was used


@pytest.mark.parametrize("pin_memory,expect", [(False, [12.0, -12.0]), (True, [8.0, -16.0])])
def test_save_on_cpu_as_pytorch_on_the_cpu(torch, pin_memory, expect):
    grads = []
    for lib in (ember, torch):
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        with lib.autograd.graph.save_on_cpu(pin_memory=pin_memory):
            a = x * 2
            z = (a * a).sum()
        with lib.no_grad():
            a.add_(1.0)   # kept as it is: the change is seen; pinned: a copy was saved
        z.backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == expect


def test_disable_saved_tensors_hooks():
    with ember.autograd.graph.disable_saved_tensors_hooks("no hooks in this library"):
        with pytest.raises(RuntimeError, match="no hooks in this library"):
            with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass


def test_unpack_must_return_a_tensor():
    x = ember.tensor([1.0], requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: 3):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack hook must return a Tensor"):
        y.backward()
