"""A training script that logs to TensorBoard, saves a checkpoint dict (epoch, model and optimizer
state, loss) every epoch, and resumes from it with --resume: the resumed run continues exactly."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--ckpt", default="ckpt.pt")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--logdir", default=None)
    args = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = torch.from_numpy(rng.standard_normal((128, 5)).astype(np.float32))
    y = X @ torch.tensor([[1.0], [-2.0], [0.5], [0.0], [3.0]]) + 0.1
    loader = DataLoader(TensorDataset(X, y), batch_size=32)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    start = 0
    if args.resume and os.path.exists(args.ckpt):
        ckpt = torch.load(args.ckpt, weights_only=True)
        model.load_state_dict(ckpt["model_state_dict"])
        optimizer.load_state_dict(ckpt["optimizer_state_dict"])
        scheduler.load_state_dict(ckpt["scheduler_state_dict"])
        start = ckpt["epoch"] + 1
        print(f"resumed at epoch {start} (loss {ckpt['loss']:.6f})")
    writer = None
    if args.logdir:
        from torch.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(args.logdir)
    for epoch in range(start, args.epochs):
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item()
        scheduler.step()
        print(f"epoch {epoch} loss {total / len(loader):.6f}")
        if writer is not None:
            writer.add_scalar("loss", total / len(loader), epoch)
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(),
                    "scheduler_state_dict": scheduler.state_dict(), "loss": total / len(loader)}, args.ckpt)
    if writer is not None:
        writer.close()


if __name__ == "__main__":
    main()
