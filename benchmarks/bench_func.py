"""ember.func against torch.func: per-sample gradients, ensembling, Jacobians, Hessians, hvp.

The same code runs on both sides (``lib`` is ember or torch); loops of plain autograd calls are
timed next to their vmapped twins, so the vmap speed-up is visible in one run.
"""
from _harness import Workload


# ----------------------------------------------------------------------------- models


def _simple_cnn(lib):
    nn, F = lib.nn, lib.nn.functional

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.max_pool2d(x, 2)
            x = lib.flatten(x, 1)
            x = F.relu(self.fc1(x))
            return F.log_softmax(self.fc2(x), dim=1)
    return SimpleCNN()


_MLP = {}


def _simple_mlp(lib):
    if lib.__name__ in _MLP:
        return _MLP[lib.__name__]()
    nn, F = lib.nn, lib.nn.functional

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 128)
            self.fc2 = nn.Linear(128, 128)
            self.fc3 = nn.Linear(128, 10)

        def forward(self, x):
            x = x.flatten(1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)
    _MLP[lib.__name__] = SimpleMLP
    return SimpleMLP()


# ----------------------------------------------------------------------------- per-sample grads

B_PSG = 64


def _psg_setup(lib):
    lib.manual_seed(0)
    model = _simple_cnn(lib)
    data = lib.randn(B_PSG, 1, 28, 28)
    targets = lib.randint(10, (B_PSG,))
    return model, data, targets


def psg_vmap(lib):
    model, data, targets = _psg_setup(lib)
    F = lib.nn.functional
    fc = lib.func.functional_call
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss(p, b, x, t):
        return F.nll_loss(fc(model, (p, b), (x.unsqueeze(0),)), t.unsqueeze(0))
    f = lib.func.vmap(lib.func.grad(loss), in_dims=(None, None, 0, 0))
    return lambda: f(params, buffers, data, targets)


def psg_loop(lib):
    model, data, targets = _psg_setup(lib)
    F = lib.nn.functional
    ps = list(model.parameters())

    def step():
        out = []
        for i in range(B_PSG):
            loss = F.nll_loss(model(data[i].unsqueeze(0)), targets[i].unsqueeze(0))
            out.append(lib.autograd.grad(loss, ps))
        return [lib.stack(g) for g in zip(*out)]
    return step


# ----------------------------------------------------------------------------- ensembling

N_MODELS = 10


def _ens_setup(lib):
    lib.manual_seed(0)
    models = [_simple_mlp(lib) for _ in range(N_MODELS)]
    data = lib.randn(64, 1, 28, 28)
    return models, data


def ensemble_vmap(lib):
    import copy
    models, data = _ens_setup(lib)
    params, buffers = lib.func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def fmodel(p, b, x):
        return lib.func.functional_call(base, (p, b), (x,))
    f = lib.func.vmap(fmodel, in_dims=(0, 0, None))

    def step():
        with lib.no_grad():
            return f(params, buffers, data)
    return step


def ensemble_loop(lib):
    models, data = _ens_setup(lib)

    def step():
        with lib.no_grad():
            return lib.stack([m(data) for m in models])
    return step


# ----------------------------------------------------------------------------- jacobians


def _affine(lib, din, dout):
    lib.manual_seed(0)
    w, b, x = lib.randn(dout, din), lib.randn(dout), lib.randn(din)

    def f(x):
        return lib.nn.functional.linear(x, w, b).tanh()
    return f, x


def jac(kind, din, dout):
    def make(lib):
        f, x = _affine(lib, din, dout)
        j = getattr(lib.func, kind)(f)
        return lambda: j(x)
    return make


def hessian_wl(lib):
    lib.manual_seed(0)
    din, dout = 512, 32
    w, b, x = lib.randn(dout, din), lib.randn(dout), lib.randn(din)

    def f(x):
        return lib.nn.functional.linear(x, w, b).tanh()
    h = lib.func.hessian(f)
    return lambda: h(x)


def _hvp_setup(lib):
    lib.manual_seed(0)
    return lib.randn(2048), lib.randn(2048)


def _sin_sum(t):
    return t.sin().sum()


def hvp_fwdrev(lib):
    x, v = _hvp_setup(lib)
    g = lib.func.grad(_sin_sum)
    return lambda: lib.func.jvp(g, (x,), (v,))[1]


def hvp_revrev(lib):
    x, v = _hvp_setup(lib)
    g = lib.func.grad(_sin_sum)

    def step():
        _, fn = lib.func.vjp(g, x)
        return fn(v)
    return step


WORKLOADS = [
    Workload("func.per_sample_grads.vmap_grad[SimpleCNN,B=64]", psg_vmap, psg_vmap, min_time=2.0, repeats=3),
    Workload("func.per_sample_grads.loop_autograd_grad[SimpleCNN,B=64]", psg_loop, psg_loop, min_time=2.0,
             repeats=3),
    Workload("func.ensemble.vmap[10xSimpleMLP,64]", ensemble_vmap, ensemble_vmap),
    Workload("func.ensemble.loop[10xSimpleMLP,64]", ensemble_loop, ensemble_loop),
    Workload("func.jacrev[tanh(Wx+b),Din=32,Dout=2048]", jac("jacrev", 32, 2048), jac("jacrev", 32, 2048)),
    Workload("func.jacrev[tanh(Wx+b),Din=2048,Dout=32]", jac("jacrev", 2048, 32), jac("jacrev", 2048, 32)),
    Workload("func.jacfwd[tanh(Wx+b),Din=32,Dout=2048]", jac("jacfwd", 32, 2048), jac("jacfwd", 32, 2048)),
    Workload("func.jacfwd[tanh(Wx+b),Din=2048,Dout=32]", jac("jacfwd", 2048, 32), jac("jacfwd", 2048, 32)),
    Workload("func.hessian[tanh(Wx+b),Din=512,Dout=32]", hessian_wl, hessian_wl),
    Workload("func.hvp.jvp_of_grad[sin.sum,2048]", hvp_fwdrev, hvp_fwdrev),
    Workload("func.hvp.vjp_of_grad[sin.sum,2048]", hvp_revrev, hvp_revrev),
]
