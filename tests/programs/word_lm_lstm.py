"""A word-level language model in the style of the classic example: embedding, a 2-layer LSTM with
dropout, a tied decoder, truncated backprop with detached hidden states, gradient clipping and
plain SGD with learning-rate annealing; on a synthetic corpus with a learnable pattern."""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2, tie_weights=True):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.nhid, self.nlayers = nhid, nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=5.0)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--bptt", type=int, default=12)
    p.add_argument("--seed", type=int, default=1111)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(0)
    ntokens = 40
    words = [int(w) for w in (np.arange(3000) * 7 + rng.integers(0, 2, 3000)) % ntokens]
    corpus = torch.tensor(words, dtype=torch.long)
    train_data, val_data = batchify(corpus[:2400], 8), batchify(corpus[2400:], 4)
    model = RNNModel(ntokens, 32, 32, 2)
    criterion = nn.NLLLoss()
    lr = args.lr
    best_val = None
    for epoch in range(1, args.epochs + 1):
        model.train()
        hidden = model.init_hidden(8)
        start = time.time()
        total = 0.0
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i, args.bptt)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            for q in model.parameters():
                q.data.add_(q.grad, alpha=-lr)
            total += loss.item()
            if batch % 10 == 9:
                print(f"| epoch {epoch:3d} | batch {batch + 1:3d} | lr {lr:02.2f} | loss {total / 10:5.2f} | "
                      f"ppl {math.exp(total / 10):8.2f}")
                total = 0.0
        model.eval()
        val_loss = 0.0
        hidden = model.init_hidden(4)
        with torch.no_grad():
            for i in range(0, val_data.size(0) - 1, args.bptt):
                data, targets = get_batch(val_data, i, args.bptt)
                output, hidden = model(data, hidden)
                val_loss += len(data) * criterion(output, targets).item()
        val_loss /= len(val_data) - 1
        print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | valid ppl {math.exp(val_loss):8.2f}")
        if best_val is None or val_loss < best_val:
            best_val = val_loss
        else:
            lr /= 4.0
        del start


if __name__ == "__main__":
    main()
