"""DLPack exchange (torch.utils.dlpack): zero-copy tensors to and from any DLPack producer or
consumer (PyTorch, NumPy, JAX, CuPy). Views and strides travel as they are."""
import numpy as np

__all__ = ["from_dlpack", "to_dlpack"]


def from_dlpack(ext_tensor):
    """A tensor sharing memory with ``ext_tensor``: an object with ``__dlpack__`` (a PyTorch,
    NumPy, JAX ... array) or a DLPack capsule. Only CPU memory can be shared (ember runs on the
    CPU): a producer on another device gets PyTorch's error for a device it cannot reach."""
    from .._tensor import Tensor, new_tensor
    from .._dtype import from_numpy_dtype
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if hasattr(ext_tensor, "__dlpack_device__"):
        dev_type, dev_id = ext_tensor.__dlpack_device__()
        if int(dev_type) != 1:  # kDLCPU
            raise RuntimeError(f"from_dlpack: the producer's memory is on DLPack device type {int(dev_type)} "
                               f"(id {dev_id}); ember tensors live on the CPU (device type 1)")
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ != "PyCapsule":
            raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, "
                            f"got {type(ext_tensor).__name__}")
        ext_tensor = _Capsule(ext_tensor)
    try:
        arr = np.from_dlpack(ext_tensor)
    except BufferError as e:
        raise RuntimeError(f"from_dlpack: the producer refused to export: {e}") from None
    from_numpy_dtype(arr.dtype, "DLPack tensor")
    return new_tensor(arr)


class _Capsule:
    """A bare (legacy) DLPack capsule, handed to NumPy's consumer, which takes producers only."""
    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        cap, self._capsule = self._capsule, None
        if cap is None:
            raise BufferError("this DLPack capsule was consumed already")
        return cap

    def __dlpack_device__(self):
        return (1, 0)


def to_dlpack(tensor):
    """A DLPack capsule of ``tensor``'s memory (the legacy, unversioned protocol, as
    torch.utils.dlpack.to_dlpack returns). Prefer passing the tensor itself to a consumer's
    ``from_dlpack``."""
    return tensor.__dlpack__()
