"""parameters_to_vector / vector_to_parameters."""
from ..._tensor import Tensor
from ... import ops as _ops


def parameters_to_vector(parameters):
    """One 1-d tensor of all parameters, concatenated (differentiable, as in PyTorch)."""
    return _ops.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy the slices of one vector into the parameters (the inverse of parameters_to_vector)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    parameters = list(parameters)
    total = sum(p.numel() for p in parameters)
    if vec.dim() != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: expected a 1-d vector of {total} elements, got shape "
                           f"{list(vec.shape)}")
    ptr = 0
    for p in parameters:
        n = p.numel()
        # as in PyTorch, each parameter's data becomes a view of vec (no copy; tensors taken
        # from the old parameter data keep the old values)
        p.data = vec[ptr:ptr + n].view_as(p).data
        ptr += n
