"""default_collate / default_convert: samples -> batches, as PyTorch's rules."""
import collections.abc
import re

import numpy as np

from ..._tensor import Tensor

_np_str = re.compile(r"[SaUO]")


def default_convert(data):
    """Convert NumPy arrays in a sample to tensors (the collate of DataLoader(batch_size=None))."""
    from ..._creation import as_tensor
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) and not _np_str.search(data.dtype.str):
        return as_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()}) if not isinstance(data, dict) \
            else {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(d) for d in data) if isinstance(data, list) else \
            [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Stack a list of samples into a batch (tensors, NumPy arrays and numbers stack; dicts, tuples and lists by
    key or position)."""
    from ..._creation import tensor, as_tensor
    from ... import ops, _dtype as dt
    elem = batch[0]
    if isinstance(elem, Tensor):
        return ops.stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _np_str.search(elem.dtype.str):
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                            f"lists; found {elem.dtype}")
        return ops.stack([as_tensor(b) for b in batch], 0)
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        return as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return tensor(list(batch), dtype=dt.bool_)
    if isinstance(elem, float):
        return tensor(list(batch), dtype=dt.float64)
    if isinstance(elem, int):
        return tensor(list(batch), dtype=dt.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        out = {k: default_collate([d[k] for d in batch]) for k in elem}
        if type(elem) is not dict:
            try:
                return type(elem)(out)
            except TypeError:
                return out
        return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        n = len(next(it))
        if not all(len(e) == n for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            return type(elem)([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(elem)}")
