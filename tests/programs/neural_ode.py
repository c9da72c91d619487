"""A neural ODE in the style of the torchdiffeq demos, with its own fixed-step RK4 solver: an MLP
vector field trained by backpropagating through the solver to follow a spiral trajectory."""
import argparse

import torch
import torch.nn as nn


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2))
        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)

    def forward(self, t, y):
        return self.net(y ** 3)


def odeint_rk4(func, y0, t):
    ys = [y0]
    y = y0
    for t0, t1 in zip(t[:-1], t[1:]):
        h = t1 - t0
        k1 = func(t0, y)
        k2 = func(t0 + h / 2, y + h / 2 * k1)
        k3 = func(t0 + h / 2, y + h / 2 * k2)
        k4 = func(t1, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return torch.stack(ys)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--niters", type=int, default=15)
    args = p.parse_args()
    torch.manual_seed(0)
    true_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])
    t = torch.linspace(0.0, 2.0, 20)
    true_y0 = torch.tensor([[2.0, 0.0]])
    with torch.no_grad():
        true_y = odeint_rk4(lambda t, y: torch.mm(y ** 3, true_A), true_y0, t)
    func = ODEFunc()
    optimizer = torch.optim.RMSprop(func.parameters(), lr=1e-3)
    for itr in range(1, args.niters + 1):
        optimizer.zero_grad()
        pred_y = odeint_rk4(func, true_y0, t)
        loss = torch.mean(torch.abs(pred_y - true_y))
        loss.backward()
        optimizer.step()
        if itr % 5 == 0:
            print(f"Iter {itr:04d} | Total Loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
