"""Custom autograd.Function: both forms, ctx features, and clear errors."""
import os

import numpy as np
import pytest

import ember
from ember.autograd import Function, once_differentiable


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class MulConst(Function):
    @staticmethod
    def forward(x, k):
        return x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.k = inputs[1]

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


def test_classic_form_and_graph():
    x = ember.tensor([0.5, 1.0], requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward" and type(y.grad_fn).__name__ == "ExpBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, 1.0]), rtol=1e-6)


def test_setup_context_form_and_non_tensor_args():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    MulConst.apply(x, 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_needs_input_grad_and_attributes():
    seen = {}

    class F(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.tag = "hello"
            return a * b

        @staticmethod
        def backward(ctx, g):
            seen["needs"] = ctx.needs_input_grad
            seen["tag"] = ctx.tag
            return g, None

    a = ember.ones(2, requires_grad=True)
    F.apply(a, ember.ones(2)).sum().backward()
    assert seen == {"needs": (True, False), "tag": "hello"}


def test_mark_non_differentiable_and_dirty():
    class SortF(Function):
        @staticmethod
        def forward(ctx, x):
            v, i = x.sort()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            return v, i

        @staticmethod
        def backward(ctx, gv, gi):
            (i,) = ctx.saved_tensors
            return ember.zeros_like(gv).scatter(0, i, gv)

    x = ember.tensor([3.0, 1.0, 2.0], requires_grad=True)
    v, i = SortF.apply(x)
    assert not i.requires_grad and v.requires_grad
    (v * ember.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [3.0, 1.0, 2.0]

    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = ember.ones(2, requires_grad=True)
    b = a * 1
    v0 = b._version
    c = AddOneInPlace.apply(b)
    assert c is b and b._version > v0 and b.grad_fn.name() == "AddOneInPlaceBackward"
    (c * 2).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]


def test_set_materialize_grads():
    got = {}

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got["g2"] = g2
            return g1

    x = ember.ones(2, requires_grad=True)
    a, b = Two.apply(x)
    a.sum().backward()
    assert got["g2"] is None and x.grad.tolist() == [1.0, 1.0]

    class TwoM(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got["m"] = g2
            return g1 + g2

    x = ember.ones(2, requires_grad=True)
    a, b = TwoM.apply(x)
    a.sum().backward()
    assert got["m"].tolist() == [0.0, 0.0]


def test_once_differentiable_and_double_backward():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ember.tensor([3.0], requires_grad=True)
    (g,) = ember.autograd.grad(Square.apply(x), x, create_graph=True)
    assert g.item() == 6.0 and not g.requires_grad

    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    x = ember.tensor([2.0], requires_grad=True)
    (g,) = ember.autograd.grad(Cube.apply(x), x, create_graph=True)
    (gg,) = ember.autograd.grad(g, x)
    assert g.item() == 12.0 and gg.item() == 12.0


def test_wrong_gradient_count_and_shape_are_errors():
    class BadCount(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        BadCount.apply(x, x).sum().backward()

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return ember.ones(3)

    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        BadShape.apply(ember.ones(2, requires_grad=True)).backward()


def test_saved_tensor_modified_and_freed():
    x = ember.ones(2, requires_grad=True)
    h = x * 1
    y = Exp.apply(h)
    y.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.mul_(2)
        y.sum().backward()
    z = Exp.apply(x * 1)
    z.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        z.sum().backward()


def test_no_grad_inputs_give_no_graph():
    y = Exp.apply(ember.ones(2))
    assert y.grad_fn is None and not y.requires_grad
    with ember.no_grad():
        z = Exp.apply(ember.ones(2, requires_grad=True))
    assert z.grad_fn is None


# ------------------------------------------------------------------ issue 14: deep nesting in forward
class _Nest(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x, depth):
        return x * 2 if depth == 0 else _Nest.apply(x, depth - 1) + 0

    @staticmethod
    def backward(ctx, g):
        return g, None


def test_nested_functions_as_deep_as_pytorch():
    """Each nested apply costs two frames (apply and forward), as PyTorch's: 400 deep fits the
    default recursion limit of 1000 (PyTorch: about 480)."""
    x = ember.ones(3, requires_grad=True)
    _Nest.apply(x, 400).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_nested_functions_past_the_recursion_limit_clear_error():
    import re
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RecursionError, match=r"_Nest.apply: custom Functions nested \d+\+ deep in forward exceed "
                                             r"Python's recursion limit \(sys.getrecursionlimit\(\) = \d+") as e:
        _Nest.apply(x, 5000)
    assert int(re.search(r"nested (\d+)\+", str(e.value)).group(1)) > 300
    assert ember.is_grad_enabled()                   # grad mode restored on the way out


def test_nested_functions_5000_deep_with_a_higher_limit():
    import subprocess
    import sys
    code = ("import sys; sys.setrecursionlimit(12000)\n"
            "import ember\n"
            "class F(ember.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(ctx, x, d): return x * 2 if d == 0 else F.apply(x, d - 1) + 0\n"
            "    @staticmethod\n"
            "    def backward(ctx, g): return g, None\n"
            "x = ember.ones(2, requires_grad=True); F.apply(x, 5000).sum().backward(); print(x.grad.tolist())\n")
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and "[1.0, 1.0]" in r.stdout, r.stderr[-2000:]
