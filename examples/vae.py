"""A variational autoencoder on the bundled 8x8 digits (binarised): a Normal posterior q(z|x)
sampled with rsample (reparameterised, so gradients reach the encoder), a Bernoulli decoder
p(x|z), and the closed-form kl_divergence to the Normal prior. Prints the ELBO per epoch.

    python examples/vae.py [--small]
"""
import argparse
import time

import ember
import ember.nn as nn
from ember.datasets import digits
from ember.distributions import Bernoulli, Independent, Normal, kl_divergence
from ember.utils.data import DataLoader, TensorDataset

LATENT = 8


class VAE(nn.Module):
    def __init__(self, d=64, hidden=128, latent=LATENT):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, d))

    def posterior(self, x):
        loc, raw_scale = self.encoder(x).chunk(2, dim=-1)
        return Independent(Normal(loc, nn.functional.softplus(raw_scale) + 1e-4), 1)

    def likelihood(self, z):
        return Independent(Bernoulli(logits=self.decoder(z)), 1)

    def elbo(self, x):
        q = self.posterior(x)
        prior = Independent(Normal(ember.zeros_like(q.mean), ember.ones_like(q.mean)), 1)
        z = q.rsample()
        return self.likelihood(z).log_prob(x) - kl_divergence(q, prior)


def main(small=False):
    ember.manual_seed(0)
    x = (digits(flatten=True).tensors[0] > 0.5).float()       # binary pixels for a Bernoulli decoder
    test_x = (digits(train=False, flatten=True).tensors[0] > 0.5).float()
    loader = DataLoader(TensorDataset(x), batch_size=64, shuffle=True)
    model = VAE()
    opt = ember.optim.Adam(model.parameters(), lr=3e-3)
    epochs = 3 if small else 30
    start = time.perf_counter()
    history = []
    for epoch in range(1, epochs + 1):
        total = 0.0
        for (xb,) in loader:
            loss = -model.elbo(xb).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += -loss.item() * xb.shape[0]
        with ember.no_grad():
            test_elbo = model.elbo(test_x).mean().item()
        history.append(total / len(x))
        print(f"epoch {epoch:2d}: train ELBO per image {total / len(x):8.3f} nats, test ELBO {test_elbo:8.3f}")
    print(f"trained {epochs} epochs in {time.perf_counter() - start:.1f} s")
    print(f"ELBO improved: {history[-1] > history[0]}")
    with ember.no_grad():
        z = ember.randn(4, LATENT)
        samples = model.likelihood(z).sample()
    print(f"decoded samples from the prior: {tuple(samples.shape)}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--small", action="store_true")
    main(p.parse_args().small)
