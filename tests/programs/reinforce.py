"""REINFORCE in the style of the classic example: a policy network, Categorical action sampling
with log_prob, discounted normalised returns, an Adam step per episode; on a small corridor
environment of its own (no gym)."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


class Corridor:
    """Walk right from cell 0 to cell 5; each step costs 0.1, reaching the end pays 1."""

    def reset(self):
        self.pos = 0
        return self.obs()

    def obs(self):
        v = np.zeros(6, np.float32)
        v[self.pos] = 1.0
        return v

    def step(self, action):
        self.pos = max(0, min(5, self.pos + (1 if action == 1 else -1)))
        done = self.pos == 5
        return self.obs(), (1.0 if done else -0.1), done


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(6, 16)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs, self.rewards = [], []

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--seed", type=int, default=543)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    env, policy = Corridor(), Policy()
    optimizer = optim.Adam(policy.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()
    for episode in range(args.episodes):
        state = env.reset()
        for t in range(50):
            probs = policy(torch.from_numpy(state).float().unsqueeze(0))
            m = Categorical(probs)
            action = m.sample()
            policy.saved_log_probs.append(m.log_prob(action))
            state, reward, done = env.step(action.item())
            policy.rewards.append(reward)
            if done:
                break
        R, returns = 0, []
        for r in policy.rewards[::-1]:
            R = r + args.gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + eps)
        loss = torch.cat([-lp * r for lp, r in zip(policy.saved_log_probs, returns)]).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"Episode {episode}\tLength: {t + 1}\tReturn: {sum(policy.rewards):.2f}")
        del policy.rewards[:]
        del policy.saved_log_probs[:]


if __name__ == "__main__":
    main()
