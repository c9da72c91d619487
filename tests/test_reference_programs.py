"""The reference documents' programs (and what a user writes next) run under ember and PyTorch
with the same inputs, and agree: values, gradients, graph structure, dtypes, strides, errors.

Each test runs one program twice, ``prog(ember)`` and ``prog(torch)``, and compares the
results with ``_same``. Inputs come from NumPy so both libraries see the same numbers.
"""
import copy
import importlib
import io

import numpy as np
import pytest

import ember


def R(*shape, seed=0):
    return np.random.RandomState(seed + 7 * len(shape) + sum(shape)).randn(*shape).astype(np.float32)


def _sub(lib, name):
    return importlib.import_module(f"{lib.__name__}.{name}")


def _norm(v, lib):
    """Results as plain Python/NumPy values, comparable across the two libraries."""
    if isinstance(v, lib.Tensor):
        return ("T", str(v.dtype).split(".")[-1], tuple(v.shape), v.detach().numpy().copy(),
                v.requires_grad)
    if isinstance(v, (list, tuple)):
        return [_norm(x, lib) for x in v]
    if isinstance(v, dict):
        return {k: _norm(x, lib) for k, x in v.items()}
    if type(v).__name__ == "Size":
        return tuple(v)
    return v


def _same(a, b, path="result", rtol=1e-4, atol=1e-5):
    if isinstance(a, tuple) and a[:1] == ("T",):
        assert isinstance(b, tuple) and b[:1] == ("T",), f"{path}: tensor vs {b!r}"
        assert a[1:3] == b[1:3], f"{path}: dtype/shape {a[1:3]} vs {b[1:3]}"
        assert a[4] == b[4], f"{path}: requires_grad {a[4]} vs {b[4]}"
        np.testing.assert_allclose(a[3], b[3], rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a!r} vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]", rtol, atol)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{path}: keys {list(a)} vs {list(b)}"
        for k in a:
            _same(a[k], b[k], f"{path}.{k}", rtol, atol)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=rtol, abs=atol), f"{path}: {a} vs {b}"
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def compare(torch, prog, **tol):
    results = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        results[lib.__name__] = _norm(prog(lib), lib)
    _same(results["ember"], results["torch"], **tol)


def _name(fn):
    return None if fn is None else type(fn).__name__


def _edges(fn):
    return [(_name(f), i) for f, i in fn.next_functions]


def _error(f):
    try:
        f()
    except Exception as e:  # the type is what is compared
        return type(e).__name__
    return "no error"


def _init(m, lib, scale=0.3, seed=0):
    sd = {k: (lib.tensor(R(*v.shape, seed=seed + i) * scale) if v.is_floating_point() else v)
          for i, (k, v) in enumerate(m.state_dict().items())}
    m.load_state_dict(sd)
    return m


# ----------------------------------------------------------------------------- the walkthrough


def test_walkthrough_custom_functions(torch):
    def prog(L):
        class Exp(L.autograd.Function):
            @staticmethod
            def forward(ctx, i):
                result = i.exp()
                ctx.save_for_backward(result)
                return result

            @staticmethod
            def backward(ctx, grad_output):
                result, = ctx.saved_tensors
                return grad_output * result

        class GradCoeff(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, coeff):
                ctx.coeff = coeff
                return x.view_as(x)

            @staticmethod
            def backward(ctx, grad_output):
                return ctx.coeff * grad_output, None

        x = L.tensor([1.], requires_grad=True)
        ret = Exp.apply(x)
        ret.backward()
        x2 = L.tensor([2.], requires_grad=True)
        ret2 = GradCoeff.apply(x2, -0.1) ** 2
        ret2.backward()
        return [ret, x.grad, _name(ret.grad_fn), _edges(ret.grad_fn), str(ret2), x2.grad]
    compare(torch, prog)


def test_walkthrough_graph_structure(torch):
    def prog(L):
        A = L.tensor(2., requires_grad=True)
        B = L.tensor(.5, requires_grad=True)
        E = L.tensor(1., requires_grad=True)
        C = A * B
        D = C.exp()
        F = D + E
        out = [str(F), [x.is_leaf for x in [A, B, C, D, E, F]],
               [_name(x.grad_fn) for x in [F, D, C, A]], _edges(F.grad_fn), _edges(D.grad_fn),
               _edges(C.grad_fn)]
        F.backward(retain_graph=True)
        out += [A.grad.clone(), B.grad.clone(), E.grad.clone()]
        F.backward()
        return out + [A.grad, B.grad, E.grad]
    compare(torch, prog)


def test_walkthrough_calling_backward_nodes(torch):
    """grad_fn objects are callable; a hand-written traversal of next_functions reproduces
    backward(), on the toy graph and on the walkthrough's MLP."""
    def autograd(grad_fn, gradient):
        queue = [[grad_fn, gradient]]
        while queue:
            fn, g = queue.pop()
            grads = fn(g)
            if type(grads) is not tuple:
                grads = (grads,)
            for grad, (func, _) in zip(grads, fn.next_functions):
                if func is None:
                    continue
                if type(func).__name__ == "AccumulateGrad":
                    v = func.variable
                    v.auto_grad = v.auto_grad + grad if hasattr(v, "auto_grad") else grad
                else:
                    queue.append([func, grad])

    def prog(L):
        nn = L.nn
        A = L.tensor([3.], requires_grad=True)
        B = L.tensor([2.], requires_grad=True)
        C = A ** 2
        D = B ** 2
        E = C * D
        F = D + E
        Dm, Em = F.grad_fn(L.tensor(1))
        Cm, tmp = E.grad_fn(Em)
        manual = [Dm + tmp, C.grad_fn(Cm), D.grad_fn(Dm + tmp)]
        autograd(F.grad_fn, L.tensor(1))

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(10, 5)
                self.relu = nn.ReLU()
                self.fc2 = nn.Linear(5, 2)
                self.fc3 = nn.Linear(5, 2)
                self.fc4 = nn.Linear(2, 2)

            def forward(self, x):
                x = self.relu(self.fc1(x))
                return self.fc2(x) + self.fc4(self.relu(self.fc3(x)))

        mlp = _init(MLP(), L)
        x = L.ones([10], requires_grad=True)
        autograd(L.sum(mlp(x)).grad_fn, L.tensor(1.))
        L.sum(mlp(x)).backward()
        return manual + [A.auto_grad, B.auto_grad, x.auto_grad, x.grad, list(mlp.state_dict())]
    compare(torch, prog)


def test_walkthrough_dynamic_graph(torch):
    def f(x):
        result = 1
        for ii in x:
            if ii.item() > 0:
                result = ii * result
        return result

    def prog(L):
        out = []
        for v in ([0.3071, 1.1043, 1.3605, -0.3471], [1.2817, 1.7840, -1.7033, 0.1302]):
            x = L.tensor(v, requires_grad=True)
            y = f(x)
            y.backward()
            out += [y, x.grad]
        return out
    compare(torch, prog)


def test_walkthrough_jacobian_hessian(torch):
    def prog(L):
        Fn = _sub(L, "autograd.functional")
        fc = _init(L.nn.Linear(4, 2), L)
        pool = L.nn.AvgPool2d(kernel_size=2)

        def scalar_func(x):
            return L.sum(x ** 2)

        def mat_func(x):
            x = pool(x.reshape((1, 1,) + x.shape))
            return x.reshape(x.shape[2:]) ** 2

        vi = L.tensor(R(4), requires_grad=True)
        mi = L.tensor(R(4, 4), requires_grad=True)
        j = Fn.jacobian(scalar_func, vi)
        h = Fn.hessian(scalar_func, vi)
        jv = Fn.jacobian(fc, vi)
        return [j, bool(L.all(j == 2 * vi)), h, bool(L.all(h == 2 * L.eye(4))), jv,
                bool(L.all(jv == fc.weight)), Fn.jacobian(mat_func, mi),
                Fn.vjp(scalar_func, vi), Fn.jvp(fc, vi, L.ones(4)), Fn.hvp(scalar_func, vi, L.ones(4)),
                Fn.hessian(lambda a, b: (a * b).sum(), (vi, vi))]
    compare(torch, prog)


def test_walkthrough_grad_and_hooks(torch):
    def prog(L):
        A = L.tensor(2., requires_grad=True)
        B = L.tensor(.5, requires_grad=True)
        g = L.autograd.grad((A * B).exp(), (A,))
        C = A * B
        D = C.exp()
        g2 = L.autograd.grad(D, (C, A))
        seen = []
        C = A * B
        handle = C.register_hook(seen.append)
        C.exp().backward()
        handle.remove()
        (A * B).exp().backward()
        return [g, g2, seen, A.grad]
    compare(torch, prog)


def test_walkthrough_gradcheck_sigmoid(torch):
    def prog(L):
        class Sigmoid(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                output = 1 / (1 + L.exp(-x))
                ctx.save_for_backward(output)
                return output

            @staticmethod
            def backward(ctx, grad_output):
                output, = ctx.saved_tensors
                return output * (1 - output) * grad_output

        x = L.tensor(R(4).astype(np.float64), requires_grad=True)
        return [L.autograd.gradcheck(fn, (x,), eps=eps)
                for fn in (Sigmoid.apply, L.sigmoid) for eps in (1e-4, 1e-6)]
    compare(torch, prog)


# ----------------------------------------------------------------------------- tensor idioms


def test_data_has_its_own_version_counter_detach_shares_it(torch):
    def prog(L):
        x = L.tensor(R(3), requires_grad=True)
        h = x.exp()
        h.data.mul_(0)  # invisible to autograd: backward uses the zeroed values
        h.sum().backward()
        out = [x.grad]
        h = x.exp()
        h.detach().mul_(0)  # shared version counter: backward refuses
        out.append(_error(lambda: h.sum().backward()))
        p = L.nn.Parameter(L.ones(2))
        out += [type(p.data).__name__, type(p.detach()).__name__, p.data._base is None]
        return out
    compare(torch, prog)


def test_integer_scalars_wrap_like_a_cast(torch):
    def prog(L):
        h = L.tensor([1, 2, 3], dtype=L.int8)
        u = L.tensor([1, 2], dtype=L.uint8)
        return [h + 1000, u - 300, h * 200, u + (-1), h.add(1000)]
    compare(torch, prog)


def test_where_with_two_numbers_and_shifts(torch):
    def prog(L):
        b = L.tensor([True, False, True])
        i = L.tensor([1, -8, 3])
        return [L.where(b, 1., 0.), L.where(b, True, False), L.where(b, 1, 0), L.where(b, 1, 0.5),
                i << 2, i >> 1, 1 << L.tensor([0, 3]), L.bitwise_left_shift(i, 1),
                L.bitwise_right_shift(i, L.tensor([0, 1, 2]))]
    compare(torch, prog)


def test_setitem_and_0d_views(torch):
    def prog(L):
        x = L.zeros(3, 3)
        x[0:2][0, 0] = 5.
        x[1, 1].add_(2)
        x[2][2].fill_(7)
        x[0, 1] = 3
        x[:, 2] += 1
        b = L.tensor(R(3), requires_grad=True)
        c = L.zeros(5, 3)
        c[1] = b
        c[3] = b * 2
        names = [_name(c.grad_fn), _edges(c.grad_fn)[0]]  # [1]: ember keeps a CopyBackwards node there
        c.sum().backward()
        d = L.zeros(5, 3)
        d[[0, 2]] = b  # advanced indexing: index_put
        names.append(_name(d.grad_fn))
        e = L.zeros(6)
        e[L.tensor([0, 0, 2])] += 1
        return [x, c, names, b.grad, e]
    compare(torch, prog)


def test_binary_ops_follow_the_first_operands_layout(torch):
    def prog(L):
        x = L.tensor(R(2, 3, 4, 5)).to(memory_format=L.channels_last)
        c = L.tensor(R(2, 3, 4, 5))
        t = L.tensor(R(2, 3)).t()
        o = L.ones(3, 2)
        return [(x + c).stride(), (c + x).stride(), (x * c).stride(), (x > c).stride(), x + c,
                (t + o).stride(), (o + t).stride(), t - o]
    compare(torch, prog)


def test_integer_division_by_zero_and_scalar_conversion_errors(torch):
    def prog(L):
        return [_error(lambda: L.tensor([1, 2]) // 0), _error(lambda: L.tensor([1, 2]) % 0),
                _error(lambda: L.tensor([1, 2]).fmod(0)), _error(lambda: 5 // L.tensor([0, 1])),
                L.tensor([1., 2.]) // 0, L.tensor([4, 5]) // L.tensor([2, -2]),
                _error(lambda: int(L.ones(2))), _error(lambda: float(L.ones(2))),
                _error(lambda: L.ones(2).item()), _error(lambda: bool(L.ones(2))), int(L.ones(1)),
                _error(lambda: L.tensor(R(2, 3)) @ L.tensor(R(2, 3))),
                _error(lambda: (L.ones(2, requires_grad=True) * 2).backward())]
    compare(torch, prog)


def test_printing_summarized_tensors(torch):
    def prog(L):
        return [str(L.arange(2000)).replace(L.__name__, "lib"),
                str(L.arange(2000.).reshape(2, 1000)), str(L.arange(3000).reshape(1000, 3))]
    compare(torch, prog)


# ----------------------------------------------------------------------------- the tutorials


def test_tutorial_forward_ad(torch):
    def prog(L):
        fwAD = L.autograd.forward_ad  # reachable without importing the submodule
        primal, tangent = L.tensor(R(4, 4)), L.tensor(R(4, 4, seed=1))
        out = []
        with fwAD.dual_level():
            dual = fwAD.make_dual(primal, tangent)
            out.append(fwAD.unpack_dual(dual).tangent is tangent)
            y = dual ** 2 + L.tensor(R(4, 4, seed=2)) ** 2
            out.append(fwAD.unpack_dual(y).tangent)
            for f in (L.tanh, lambda a: a @ a, lambda a: a[1:3, ::2], lambda a: a.softmax(-1)):
                out.append(fwAD.unpack_dual(f(dual)).tangent)
        model = _init(L.nn.Linear(4, 3), L)
        params = dict(model.named_parameters())
        tangents = {n: L.tensor(R(*p.shape, seed=3)) for n, p in params.items()}
        with fwAD.dual_level():
            dual_params = {n: fwAD.make_dual(p, tangents[n]) for n, p in params.items()}
            out_f = _sub(L, "func").functional_call(model, dual_params, primal)
            out.append(fwAD.unpack_dual(out_f).tangent.detach())
        return out
    compare(torch, prog)


def test_tutorial_fx_conv_bn_fuser(torch):
    def prog(L):
        fx, nn = _sub(L, "fx"), L.nn

        class Wrapped(nn.Module):
            def __init__(self):
                super().__init__()
                self.mod = nn.BatchNorm2d(1)

            def forward(self, x):
                return self.mod(x)

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(1, 1, 1)
                self.bn1 = nn.BatchNorm2d(1)
                self.conv2 = nn.Conv2d(1, 1, 1)
                self.nested = nn.Sequential(nn.BatchNorm2d(1), nn.Conv2d(1, 1, 1))
                self.wrapped = Wrapped()

            def forward(self, x):
                return self.wrapped(self.nested(self.conv2(self.bn1(self.conv1(x)))))

        model = _init(M(), L)
        with L.no_grad():
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_var.copy_(L.tensor(np.abs(R(1)) + 0.5))
        model.eval()

        def fuse(model):
            model = copy.deepcopy(model)
            gm = fx.symbolic_trace(model)
            modules = dict(gm.named_modules())
            for node in gm.graph.nodes:
                if node.op != "call_module":
                    continue
                if type(modules[node.target]) is nn.BatchNorm2d and \
                        type(modules[node.args[0].target]) is nn.Conv2d:
                    if len(node.args[0].users) > 1:
                        continue
                    conv, bn = modules[node.args[0].target], modules[node.target]
                    fused = copy.deepcopy(conv)
                    rs = L.rsqrt(bn.running_var + bn.eps)
                    fused.weight = nn.Parameter(conv.weight * (bn.weight * rs).reshape([-1, 1, 1, 1]))
                    fused.bias = nn.Parameter((conv.bias - bn.running_mean) * rs * bn.weight + bn.bias)
                    *parent, name = node.args[0].target.rsplit(".", 1)
                    setattr(modules[parent[0] if parent else ""], name, fused)
                    node.replace_all_uses_with(node.args[0])
                    gm.graph.erase_node(node)
            gm.graph.lint()
            gm.recompile()
            return gm

        fused = fuse(model)
        inp = L.tensor(R(5, 1, 1, 1))
        traced = fx.symbolic_trace(model)
        return [fused(inp), model(inp), [(n.op, str(n.target)) for n in fused.graph.nodes],
                [n.name for n in traced.graph.nodes], fused.code.strip().splitlines()]
    compare(torch, prog)


def test_tutorial_memory_format(torch):
    def prog(L):
        x = L.empty(10, 3, 32, 32)
        out = [x.stride()]
        x = x.to(memory_format=L.channels_last)
        out += [x.shape, x.stride(), x.to(memory_format=L.contiguous_format).stride(),
                x.is_contiguous(memory_format=L.channels_last)]
        s = L.empty(4, 1, 4, 4)
        out += [s.is_contiguous(memory_format=L.channels_last), s.is_contiguous(),
                s.to(memory_format=L.channels_last).stride()]
        x = L.tensor(R(2, 3, 6, 6)).to(memory_format=L.channels_last)
        conv = _init(L.nn.Conv2d(3, 4, 3), L).to(memory_format=L.channels_last)
        o = conv(x)
        out += [x.clone().stride(), L.empty_like(x).stride(), (x + x).stride(), x.relu().stride(),
                o.stride(), o, L.nn.functional.max_pool2d(o, 2).stride()]
        return out
    compare(torch, prog)


def test_tutorial_ensembling_and_per_sample_grads(torch):
    def prog(L):
        nn, F, func = L.nn, L.nn.functional, _sub(L, "func")

        class SimpleMLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(16, 12)
                self.fc2 = nn.Linear(12, 10)

            def forward(self, x):
                return self.fc2(F.relu(self.fc1(x.flatten(1))))

        models = [_init(SimpleMLP(), L, seed=i) for i in range(3)]
        data = L.tensor(R(4, 1, 4, 4))
        params, buffers = func.stack_module_state(models)
        base = copy.deepcopy(models[0]).to("meta")

        def fmodel(p, b, x):
            return func.functional_call(base, (p, b), (x,))
        ensembled = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data)
        model = models[0]
        targets = L.tensor([0, 3, 9, 1])

        def loss(p, b, sample, target):
            return F.cross_entropy(func.functional_call(model, (p, b), (sample.unsqueeze(0),)),
                                   target.unsqueeze(0))
        ps = {k: v.detach() for k, v in model.named_parameters()}
        per_sample = func.vmap(func.grad(loss), in_dims=(None, None, 0, 0))(ps, {}, data, targets)
        return [[m(data) for m in models], ensembled, per_sample]
    compare(torch, prog)


# ----------------------------------------------------------------------------- training programs


def test_training_loops_with_optimizers_and_schedulers(torch):
    def prog(L):
        nn, F = L.nn, L.nn.functional
        X, Y = L.tensor(R(32, 10)), L.tensor(np.random.RandomState(3).randint(0, 3, 32))
        out = []
        for Opt, kw in ((L.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)),
                        (L.optim.Adam, dict(lr=1e-2, amsgrad=True)),
                        (L.optim.AdamW, dict(lr=1e-2, weight_decay=0.1))):
            m = _init(nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 3)), L)
            opt = Opt(m.parameters(), **kw)
            sched = L.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
            for _ in range(4):
                opt.zero_grad()
                loss = F.cross_entropy(m(X), Y)
                loss.backward()
                nn.utils.clip_grad_norm_(m.parameters(), 0.5)
                opt.step()
                sched.step()
                with L.no_grad():
                    acc = (m(X).argmax(1) == Y).float().mean()
                out += [loss.item(), acc]
            out += [sched.get_last_lr(), [p.detach() for p in m.parameters()]]
        return out
    compare(torch, prog)


def test_state_dict_save_load_round_trip(torch):
    def prog(L):
        nn = L.nn

        def make():
            return nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                                 nn.Linear(8, 2))
        m = _init(make(), L)
        x = L.tensor(R(3, 1, 4, 4))
        m(x)  # train mode: running stats move
        # (SGD: with BatchNorm after the conv, the conv's true gradient is 0 and Adam would
        #  blow its rounding noise up to +-lr)
        opt = L.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        (m(x) ** 2).sum().backward()
        opt.step()
        buf = io.BytesIO()
        L.save({"model": m.state_dict(), "opt": opt.state_dict(), "epoch": 3}, buf)
        buf.seek(0)
        ck = L.load(buf)
        m2 = make()
        res = m2.load_state_dict(ck["model"])
        opt2 = L.optim.SGD(m2.parameters(), lr=0.1, momentum=0.9)
        opt2.load_state_dict(ck["opt"])
        bad = dict(ck["model"])
        bad["4.weight"] = L.zeros(3, 8)
        missing = dict(ck["model"])
        del missing["1.running_mean"]
        m.eval()
        m2.eval()
        return [list(ck["model"]), ck["model"]["1.num_batches_tracked"], m(x), m2(x),
                list(map(list, res)), _error(lambda: m2.load_state_dict(bad)),
                _error(lambda: m2.load_state_dict(missing)),
                list(map(list, m2.load_state_dict(missing, strict=False))), ck["epoch"],
                opt2.state_dict()["state"][4]["momentum_buffer"]]
    compare(torch, prog)


def test_dataloader_loops(torch):
    def prog(L):
        data = _sub(L, "utils.data")
        ds = data.TensorDataset(L.tensor(R(10, 3)), L.arange(10))
        out = [len(ds), ds[3]]
        for bs, drop in ((4, False), (4, True), (3, False)):
            dl = data.DataLoader(ds, batch_size=bs, drop_last=drop)
            out += [len(dl), [(xb.shape, yb) for xb, yb in dl]]

        class Dicts(data.Dataset):
            def __len__(self):
                return 5

            def __getitem__(self, i):
                return {"x": L.tensor([float(i)]), "y": i, "n": np.float32(i)}
        out.append(list(data.DataLoader(Dicts(), batch_size=2)))
        out.append(list(data.DataLoader([(1, 2.), (3, 4.)], batch_size=2)))
        return out
    compare(torch, prog)


def test_size_arithmetic_stays_a_size(torch):
    def prog(L):
        s = L.zeros(2, 3).shape
        return [type(x).__name__ for x in (s + (4,), (1,) + s, s * 2, 2 * s, s[1:])] + \
            [tuple(s + (4,)), _error(lambda: s + [4]), L.zeros(s + (1,)).shape == (2, 3, 1)]
    compare(torch, prog)


def test_grad_accumulates_into_the_same_tensor(torch):
    """A second backward adds into the .grad object the first one made (a reference to p.grad
    sees it), a hook's tensor is not written through, and an assigned .grad (a view too) is
    accumulated into in place, as in PyTorch."""
    def prog(L):
        A = L.tensor(R(3), requires_grad=True)
        (A * 2).sum().backward()
        g = A.grad
        (A * 2).sum().backward()
        (A * 2).sum().backward()
        seen = []
        B = L.tensor(R(3), requires_grad=True)
        B.register_hook(seen.append)
        (B * 2).sum().backward()
        (B * 2).sum().backward()
        C, D = L.ones(2, requires_grad=True), L.ones(2, requires_grad=True)
        (C + D).sum().backward()
        (C + D).sum().backward()
        base = L.zeros(4)
        E = L.ones(2, requires_grad=True)
        E.grad = base[:2]
        (E * 3).sum().backward()
        return [A.grad is g, g, seen, B.grad, B.grad is seen[0], C.grad, D.grad, E.grad, base]
    compare(torch, prog)


def test_vector_to_parameters_makes_views_of_the_vector(torch):
    def prog(L):
        m = L.nn.Linear(2, 2)
        old = m.weight.detach()
        before = old.clone()
        v = L.arange(6.)
        L.nn.utils.vector_to_parameters(v, m.parameters())
        v[0] = 100.
        m(L.ones(1, 2)).sum().backward()
        return [m.weight.detach(), m.bias.detach(), L.equal(old, before), m.weight.grad,
                L.nn.utils.parameters_to_vector(m.parameters())]
    compare(torch, prog)


def test_linalg_norms(torch):
    inf = float("inf")

    def prog(L):
        x = L.tensor(R(4, 5), requires_grad=True)
        y = L.tensor(R(2, 3, 4), requires_grad=True)
        LA = L.linalg
        outs = [LA.norm(x), LA.norm(x, dim=1), LA.norm(x, ord=1), LA.norm(x, ord=inf), LA.norm(x, "fro"),
                LA.norm(x, ord=-1), LA.norm(x, ord=-inf, keepdim=True), LA.norm(x[0], ord=3),
                LA.norm(x[0], ord=0), LA.norm(y), LA.norm(y, dim=(1, 2), ord=1),
                LA.vector_norm(x, 3), LA.vector_norm(x, dim=(0, 1), keepdim=True),
                LA.vector_norm(x, keepdim=True), LA.vector_norm(x, 1, dim=-1), LA.vector_norm(x, -inf, 0),
                LA.vector_norm(x, 0.5), LA.vector_norm(x, dtype=L.float64), LA.matrix_norm(x),
                LA.matrix_norm(x, 1), LA.matrix_norm(x, -inf), LA.matrix_norm(x, 1, keepdim=True),
                LA.matrix_norm(y, inf, dim=(0, 2)), LA.matrix_norm(y, -1, dim=(2, 0), keepdim=True)]
        grads = L.autograd.grad(sum(o.sum() for o in outs), [x, y])
        return outs + list(grads) + [
            _error(lambda: LA.vector_norm(L.tensor([1, 2]))), _error(lambda: LA.norm(y, ord=1)),
            _error(lambda: LA.matrix_norm(x[0]))]
    compare(torch, prog)


def test_gradients_arrive_in_each_inputs_dtype(torch):
    def prog(L):
        a = L.tensor(R(3), requires_grad=True)
        b = L.tensor(R(3).astype(np.float64), requires_grad=True)
        h = L.ones(3, dtype=L.float16, requires_grad=True)
        (a * b + a + h).sum().backward()
        x = L.tensor(R(3), requires_grad=True)
        (x.sum() + x.double().sum() * 2).backward()
        return [a.grad, b.grad, h.grad, x.grad]
    compare(torch, prog)


def test_as_strided_of_a_non_contiguous_input_differentiates_through_storage(torch):
    def prog(L):
        x = L.arange(20.).reshape(4, 5).requires_grad_()
        w = x.t().as_strided((2, 3), (1, 5), 1)
        u = x.t().unfold(0, 3, 2)
        g1, = L.autograd.grad((w * w).sum(), x, create_graph=True)
        g2, = L.autograd.grad((g1 * L.arange(20.).reshape(4, 5)).sum(), x)
        g3, = L.autograd.grad((u * L.arange(u.numel()).reshape(u.shape)).sum(), x)
        return [w, u, u.stride(), g1, g2, g3]
    compare(torch, prog)


def test_composites_diff_cdist_quantile_unfold_and_friends(torch):
    inf = float("inf")

    def prog(L):
        x = L.tensor(R(4, 5), requires_grad=True)
        y = L.tensor(R(2, 3, 4), requires_grad=True)
        xn = x.detach().clone()
        xn[1, 2] = float("nan")
        xn[3] = float("nan")
        outs = [x.diff(), L.diff(x, dim=0), L.diff(x, n=2, dim=1),
                L.diff(x, prepend=x[:, :1], append=x[:, :2]),
                L.cdist(x, x), L.cdist(x, x[:3], p=1), L.cdist(x, x[:3], p=inf), L.cdist(y, y),
                x.quantile(0.3), x.quantile(0.3, dim=1),
                x.quantile(L.tensor([0.1, 0.5, 1.0]), dim=0, keepdim=True),
                x.quantile(0.25, interpolation="lower"), x.quantile(0.25, dim=1, interpolation="higher"),
                x.quantile(0.25, dim=1, interpolation="nearest"),
                x.quantile(0.3, dim=1, interpolation="midpoint"), L.quantile(x, 0.5, keepdim=True),
                L.block_diag(x[:2, :3], L.tensor(R(1, 2)), L.tensor(7.), L.tensor([1., 2.])),
                x.unfold(1, 2, 1), x.unfold(0, 2, 2), y.unfold(-1, 2, 2)]
        grads = L.autograd.grad(sum((o * (i + 1)).sum() for i, o in enumerate(outs)), [x, y])
        return outs + list(grads) + [
            L.diff(L.tensor([True, False, False])), L.diff(L.tensor([1, 4, 9])),
            L.quantile(xn, 0.3, dim=1), L.nanquantile(xn, 0.3, dim=1),
            L.nanquantile(xn, L.tensor([0.3, 0.9])), L.cartesian_prod(L.arange(2), L.arange(3)),
            L.cartesian_prod(L.tensor([1., 2.]), L.tensor([3., 4.]), L.tensor([5.])),
            L.arange(7.).unfold(0, 3, 3), _error(lambda: L.quantile(x, 1.5)),
            _error(lambda: L.quantile(L.tensor([1, 2]), 0.5)), _error(lambda: x.unfold(1, 9, 1))]
    compare(torch, prog)


def test_p_norms_below_one_have_zero_gradient_at_zero(torch):
    def prog(L):
        out = []
        for p in (0.5, 0.3, 1.5, 3):
            x = L.tensor([0., 1., -2.], requires_grad=True)
            L.linalg.vector_norm(x, p).backward()
            out.append(x.grad)
        y = L.tensor([[0., 1.], [2., 0.]], requires_grad=True)
        L.cdist(y, y, p=0.5).sum().backward()
        return out + [y.grad, L.tensor([1., -1., 0.]) // 0]
    compare(torch, prog)


def test_cyclic_lr(torch):
    def prog(L):
        out = []
        for kw, Opt, okw in ((dict(mode="triangular"), L.optim.SGD, dict(momentum=0.9)),
                             (dict(mode="triangular2", step_size_down=3), L.optim.SGD, dict(momentum=0.5)),
                             (dict(mode="exp_range", gamma=0.9), L.optim.Adam, {}),
                             (dict(scale_fn=lambda x: 0.5 ** x, scale_mode="iterations",
                                   cycle_momentum=False), L.optim.SGD, {})):
            p = L.nn.Parameter(L.ones(2))
            opt = Opt([p], lr=0.1, **okw)
            sched = L.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2, **kw)
            lrs, moms = [], []
            for _ in range(9):
                opt.zero_grad()
                (p ** 2).sum().backward()
                opt.step()
                sched.step()
                g = opt.param_groups[0]
                lrs.append(round(g["lr"], 7))
                moms.append(round(g["betas"][0] if "betas" in g else g.get("momentum", 0), 7))
            out += [lrs, moms, p.detach()]
        return out
    compare(torch, prog)
