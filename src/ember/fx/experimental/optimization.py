"""Graph-level optimisations of traced modules: folding BatchNorm into the layer before it."""
import copy

from ... import nn
from .._symbolic_trace import symbolic_trace
from ..graph_module import GraphModule


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """Weights and bias of conv followed by eval-mode BatchNorm, as one conv."""
    from ... import zeros_like, ones_like, rsqrt, no_grad
    with no_grad():
        if conv_b is None:
            conv_b = zeros_like(bn_rm)
        if bn_w is None:
            bn_w = ones_like(bn_rm)
        if bn_b is None:
            bn_b = zeros_like(bn_rm)
        scale = bn_w * rsqrt(bn_rv + bn_eps)
        shape = [1] * conv_w.dim()
        shape[1 if transpose else 0] = -1
        w = (conv_w * scale.reshape(shape)).to(conv_w.dtype)
        b = ((conv_b - bn_rm) * scale + bn_b).to(conv_w.dtype)
    return nn.Parameter(w, conv_w.requires_grad), nn.Parameter(b, conv_w.requires_grad)


def _check_eval(a, b):
    if a.training or b.training:
        raise RuntimeError(f"fusing {type(a).__name__} with {type(b).__name__} is for inference only: "
                           "call .eval() on the model first")


def _copy_but_params(layer):
    """A deep copy of ``layer`` sharing its weight and bias, which the caller replaces at once
    (copying a ResNet's conv weights only to drop the copies doubled what fuse() copies)."""
    memo = {id(p): p for p in (layer.weight, layer.bias) if p is not None}
    return copy.deepcopy(layer, memo)


def fuse_conv_bn_eval(conv, bn, transpose=False):
    _check_eval(conv, bn)
    fused = _copy_but_params(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                    bn.running_var, bn.eps, bn.weight, bn.bias,
                                                    transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features:
        raise RuntimeError(f"cannot fuse Linear(out_features={linear.out_features}) with "
                           f"BatchNorm1d({bn.num_features}): the sizes differ")
    fused = _copy_but_params(linear)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                    bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def _patterns():
    pats = []
    for a, b in (("Conv1d", "BatchNorm1d"), ("Conv2d", "BatchNorm2d"), ("Conv3d", "BatchNorm3d"),
                 ("Linear", "BatchNorm1d")):
        if hasattr(nn, a) and hasattr(nn, b):
            pats.append((getattr(nn, a), getattr(nn, b)))
    return pats


def _parent_name(target):
    *parent, name = target.rsplit(".", 1)
    return (parent[0] if parent else ""), name


def fuse(model, inplace=False, no_trace=False):
    """Fold every eval-mode BatchNorm that directly follows a Conv1d/2d/3d or a Linear (and is its
    only user) into that layer. Returns a GraphModule; ``model`` is copied unless ``inplace``."""
    if not inplace:
        model = copy.deepcopy(model)
    gm = model if (no_trace or isinstance(model, GraphModule)) else symbolic_trace(model)
    modules = dict(gm.named_modules())
    graph = copy.deepcopy(gm.graph)
    for first_t, bn_t in _patterns():
        for node in graph.nodes:
            if node.op != "call_module" or type(modules.get(node.target)) is not bn_t:
                continue
            prev = node.args[0] if node.args else None
            if getattr(prev, "op", None) != "call_module" or type(modules.get(prev.target)) is not first_t:
                continue
            if len(prev.users) > 1:
                continue
            first, bn = modules[prev.target], modules[node.target]
            if not bn.track_running_stats or bn.running_mean is None:
                continue
            fused = fuse_linear_bn_eval(first, bn) if first_t.__name__ == "Linear" else \
                fuse_conv_bn_eval(first, bn, transpose=False)
            parent, name = _parent_name(prev.target)
            setattr(modules[parent], name, fused)
            modules[prev.target] = fused
            node.replace_all_uses_with(prev)
            graph.erase_node(node)
    return GraphModule(gm, graph, type(gm).__name__)
