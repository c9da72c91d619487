"""The DCGAN example's structure at 16x16: a ConvTranspose generator with BatchNorm/ReLU/Tanh, a
strided-conv discriminator with LeakyReLU/Sigmoid, weights_init by class name, BCELoss with real
and fake labels, two Adam optimizers with betas (0.5, 0.999)."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

nz, ngf, ndf, nc = 8, 8, 8, 1


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--manualSeed", type=int, default=999)
    args = p.parse_args()
    torch.manual_seed(args.manualSeed)
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[:16, :16]
    blobs = [np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 8.0) * 2 - 1 for cx, cy in rng.integers(4, 12, (64, 2))]
    real_data = torch.from_numpy(np.stack(blobs)[:, None].astype(np.float32))
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(4, nz, 1, 1)
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    for i in range(args.iters):
        real = real_data[(i * 16) % 64:(i * 16) % 64 + 16]
        b_size = real.size(0)
        netD.zero_grad()
        label = torch.full((b_size,), real_label, dtype=torch.float)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        noise = torch.randn(b_size, nz, 1, 1)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        errG = criterion(netD(fake), label)
        errG.backward()
        optimizerG.step()
        print(f"[{i}/{args.iters}] Loss_D: {(errD_real + errD_fake).item():.4f} Loss_G: {errG.item():.4f}")
    with torch.no_grad():
        print("fake mean", f"{netG(fixed_noise).mean().item():.4f}")


if __name__ == "__main__":
    main()
