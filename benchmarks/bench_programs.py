"""Whole programs side by side with PyTorch (issue 22): ports of what the seed tutorials and typical
training scripts do end to end, each one step timed for both libraries in the same process.

* fx_fuse_resnet18: the FX conv/bn fusion tutorial's pipeline on ResNet-18 (trace, fuse, one fused
  and one unfused forward of batch 2 at 96x96, compared);
* ensemble_10mlp: the model-ensembling tutorial (stack_module_state + vmap(functional_call));
* per_sample_grads_cnn: the per-sample-gradients tutorial (vmap(grad(functional_call)), SimpleCNN, 32);
* jacobians_tutorial: its jacrev/jacfwd comparison (tanh(Wx+b), D=16 and 2048x16) and the hessian
  of a 2-layer MLP;
* resnet18_train_channels_last: a channels_last ResNet-18 SGD training step (batch 8, 64x64);
* lstm_seq_model: a 2-layer LSTM sequence regressor step (batch 16, 50 steps, Adam);
* gpt_step_sdpa / gpt_step_explicit: a small GPT training step (2 layers, 4 heads, 128 wide,
  block 64, batch 8, vocabulary 256) with causal attention through F.scaled_dot_product_attention
  and through explicit matmul/masked_fill/softmax; GELU MLP, LayerNorm, cross-entropy, AdamW and
  gradient clipping;
* word_lstm_lm_step: a word-level LSTM language model step (vocabulary 2000, tied weights,
  clipping, SGD, bptt 35, batch 20);
* vae_step: a VAE step on 784-pixel inputs (batch 64), reparameterised, BCE + KL, Adam.
"""
import math

import _models
from _harness import Workload


def _fx_fuse(lib):
    fx = lib.fx
    from importlib import import_module
    opt = import_module(lib.__name__ + ".fx.experimental.optimization")
    model = _models.resnet18(lib).eval()
    x = lib.randn(2, 3, 96, 96)

    def step():
        with lib.no_grad():
            fused = opt.fuse(fx.symbolic_trace(model))
            a, b = fused(x), model(x)
            return (a - b).abs().max()
    return step


def _ensemble(lib):
    models = [_models.mlp(lib) for _ in range(10)]
    params, buffers = lib.func.stack_module_state(models)
    base = models[0]
    x = lib.randn(64, 784)

    def f(p, b, x):
        return lib.func.functional_call(base, (p, b), (x,))

    def step():
        with lib.no_grad():
            return lib.func.vmap(f, in_dims=(0, 0, None))(params, buffers, x)
    return step


def _per_sample(lib):
    model = _models.simple_cnn(lib).eval()  # (dropout off: the tutorial's model has none)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = lib.randn(32, 1, 28, 28)
    y = lib.randint(0, 10, (32,))
    F = lib.nn.functional

    def loss(p, xi, yi):
        out = lib.func.functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    g = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))

    def step():
        return g(params, x, y)
    return step


def _jacobians(lib):
    F = lib.nn.functional

    def predict(weight, bias, x):
        return F.linear(x, weight, bias).tanh()
    w16, b16, x16 = lib.randn(16, 16), lib.randn(16), lib.randn(16)
    w_tall, b_tall, x_tall = lib.randn(2048, 16), lib.randn(2048), lib.randn(16)
    w1, b1, w2, b2 = lib.randn(64, 32), lib.randn(64), lib.randn(8, 64), lib.randn(8)

    def mlp(x):
        return F.linear(F.linear(x, w1, b1).tanh(), w2, b2).sum()
    xm = lib.randn(32)
    fn = lib.func

    def step():
        fn.jacrev(predict, argnums=2)(w16, b16, x16)
        fn.jacfwd(predict, argnums=2)(w16, b16, x16)
        fn.jacrev(predict, argnums=2)(w_tall, b_tall, x_tall)
        fn.jacfwd(predict, argnums=2)(w_tall, b_tall, x_tall)
        return fn.hessian(mlp)(xm)
    return step


def _resnet_cl(lib):
    model = _models.resnet18(lib, num_classes=10).train().to(memory_format=lib.channels_last)
    x = lib.randn(8, 3, 64, 64).to(memory_format=lib.channels_last)
    y = lib.randint(0, 10, (8,))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def _lstm(lib):
    nn = lib.nn

    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(8, 64, num_layers=2, batch_first=True)
            self.head = nn.Linear(64, 1)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out)
    model = Seq()
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x, y = lib.randn(16, 50, 8), lib.randn(16, 50, 1)

    def step():
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    return step


def _gpt(explicit):
    def make(lib):
        nn, F = lib.nn, lib.nn.functional
        V, T, C, H, L, B = 256, 64, 128, 4, 2, 8

        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(C, 3 * C)
                self.proj = nn.Linear(C, C)
                self.register_buffer("mask", lib.tril(lib.ones(T, T)).view(1, 1, T, T))

            def forward(self, x):
                b, t, c = x.shape
                q, k, v = self.qkv(x).split(C, dim=2)
                q, k, v = (z.view(b, t, H, c // H).transpose(1, 2) for z in (q, k, v))
                if explicit:
                    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                    att = F.softmax(att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")), dim=-1)
                    y = att @ v
                else:
                    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
                self.attn = Attn()
                self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

            def forward(self, x):
                x = x + self.attn(self.ln1(x))
                return x + self.mlp(self.ln2(x))

        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
                self.blocks = nn.ModuleList([Block() for _ in range(L)])
                self.ln_f = nn.LayerNorm(C)
                self.head = nn.Linear(C, V, bias=False)
                self.wte.weight = self.head.weight

            def forward(self, idx):
                x = self.wte(idx) + self.wpe(lib.arange(idx.shape[1]))
                for blk in self.blocks:
                    x = blk(x)
                return self.head(self.ln_f(x))
        model = GPT()
        opt = lib.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
        idx = lib.randint(0, V, (B, T))
        tgt = lib.randint(0, V, (B, T))

        def step():
            opt.zero_grad(set_to_none=True)
            logits = model(idx)
            F.cross_entropy(logits.view(-1, V), tgt.view(-1)).backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        return step
    return make


def _word_lm(lib):
    nn = lib.nn
    V, E, bptt, bsz = 2000, 200, 35, 20

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.encoder = nn.Embedding(V, E)
            self.rnn = nn.LSTM(E, E, 2, dropout=0.2)
            self.decoder = nn.Linear(E, V)
            self.decoder.weight = self.encoder.weight

        def forward(self, x, h):
            out, h = self.rnn(self.drop(self.encoder(x)), h)
            return self.decoder(self.drop(out)).view(-1, V), h
    model = RNNModel()
    data, target = lib.randint(0, V, (bptt, bsz)), lib.randint(0, V, (bptt * bsz,))
    hidden = [(lib.zeros(2, bsz, E), lib.zeros(2, bsz, E))]

    def step():
        model.zero_grad()
        h = tuple(t.detach() for t in hidden[0])
        out, h = model(data, h)
        hidden[0] = h
        lib.nn.functional.cross_entropy(out, target).backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        with lib.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-20.0)
    return step


def _vae(lib):
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc21, self.fc22 = nn.Linear(784, 400), nn.Linear(400, 20), nn.Linear(400, 20)
            self.fc3, self.fc4 = nn.Linear(20, 400), nn.Linear(400, 784)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            mu, logvar = self.fc21(h), self.fc22(h)
            z = mu + lib.randn_like(mu) * lib.exp(0.5 * logvar)
            return lib.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar
    model = VAE()
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x = lib.rand(64, 784)

    def step():
        opt.zero_grad()
        recon, mu, logvar = model(x)
        loss = F.binary_cross_entropy(recon, x, reduction="sum") - 0.5 * lib.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss.backward()
        opt.step()
    return step


WORKLOADS = [
    Workload("fx_fuse_resnet18", ember=_fx_fuse, unit="trace+fuse+2 forwards", min_time=2.0, repeats=3),
    Workload("ensemble_10mlp", ember=_ensemble, unit="forward of 10 models"),
    Workload("per_sample_grads_cnn", ember=_per_sample, unit="32 per-sample grads", min_time=1.0, repeats=3),
    Workload("jacobians_tutorial", ember=_jacobians, unit="4 jacobians + hessian", min_time=1.0, repeats=3),
    Workload("resnet18_train_channels_last", ember=_resnet_cl, unit="train step", min_time=2.0, repeats=3),
    Workload("lstm_seq_model", ember=_lstm, unit="train step", min_time=1.0, repeats=3),
    Workload("gpt_step_sdpa", ember=_gpt(False), unit="train step", min_time=1.0, repeats=3),
    Workload("gpt_step_explicit", ember=_gpt(True), unit="train step", min_time=1.0, repeats=3),
    Workload("word_lstm_lm_step", ember=_word_lm, unit="train step", min_time=1.0, repeats=3),
    Workload("vae_step", ember=_vae, unit="train step"),
]
