"""ShapeProp: run the graph on example inputs and record each node's tensor metadata."""
from typing import NamedTuple, Any

from ..interpreter import Interpreter
from ..node import map_aggregate


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(t):
    from ... import channels_last, contiguous_format
    mf = None
    if t.is_contiguous():
        mf = contiguous_format
    elif t.dim() == 4 and t.is_contiguous(memory_format=channels_last):
        mf = channels_last
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, t.stride(), mf, False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` stores ``node.meta['tensor_meta']`` (a TensorMetadata, or a
    structure of them for nodes producing several tensors) and ``node.meta['type']``."""

    def run_node(self, n):
        from ..._tensor import Tensor
        result = super().run_node(n)
        found = []

        def extract(x):
            if isinstance(x, Tensor):
                found.append(True)
                return _extract_tensor_metadata(x)
            return x
        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        return super().run(*args)
