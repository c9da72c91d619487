"""The classic VAE example's structure: an MLP encoder to (mu, logvar), the reparameterisation
trick with randn_like, a sigmoid decoder, BCE + KL loss, Adam; on synthetic binary 8x8 images."""
import argparse

import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(0)
    protos = rng.random((4, 64)) < 0.5
    data = torch.from_numpy((protos[rng.integers(0, 4, 256)] ^ (rng.random((256, 64)) < 0.05)).astype(np.float32))
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(1, args.epochs + 1):
        model.train()
        train_loss = 0.0
        for i in range(0, len(data), 32):
            batch = data[i:i + 32]
            optimizer.zero_grad()
            recon, mu, logvar = model(batch)
            loss = loss_function(recon, batch, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        print(f"====> Epoch: {epoch} Average loss: {train_loss / len(data):.4f}")
    with torch.no_grad():
        sample = model.decode(torch.randn(4, 4))
        print("sample mean", f"{sample.mean().item():.4f}")


if __name__ == "__main__":
    main()
