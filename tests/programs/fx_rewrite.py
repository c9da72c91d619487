"""FX as users write it: trace a model, swap every ReLU call for GELU with a Transformer, insert a
scaling node after each linear layer, recompile, and check the rewritten model against the
original computed by hand."""
import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 8)
        self.l2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x))).relu()


class ReluToGelu(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target is F.relu:  # (PyTorch's trace records relu's inplace=False: gelu takes no such argument)
            return super().call_function(F.gelu, args, {})
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "relu":
            return super().call_function(F.gelu, args, kwargs)
        return super().call_method(target, args, kwargs)


def main():
    torch.manual_seed(0)
    m = M()
    gm = fx.symbolic_trace(m)
    print([n.op for n in gm.graph.nodes])
    new = ReluToGelu(gm).transform()
    for node in list(new.graph.nodes):
        if node.op == "call_module" and node.target.startswith("l"):
            with new.graph.inserting_after(node):
                scaled = new.graph.call_function(torch.mul, (node, 2.0))
            node.replace_all_uses_with(scaled)
            scaled.args = (node, 2.0)
    new.graph.lint()
    new.recompile()
    x = torch.randn(3, 4)
    expect = F.gelu(m.l2(F.gelu(m.l1(x) * 2.0)) * 2.0)
    print("max diff", (new(x) - expect).abs().max().item())
    print(new.code.strip().splitlines()[0])


if __name__ == "__main__":
    main()
