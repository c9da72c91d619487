"""nn.utils.rnn: pad_sequence, and packed sequences (PackedSequence, pack_padded_sequence,
pad_packed_sequence, pack_sequence) as PyTorch lays them out: the rows of every time step, longest
sequences first, one after the other; the recurrent layers accept them."""
from collections import namedtuple

import numpy as np

from ... import ops as _ops
from ..._creation import full, tensor as _tensor
from ..._tensor import Tensor


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Pad a list of variable-length sequences to one tensor (batch_first, padding_value, padding_side)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    T = max(s.shape[0] for s in sequences)
    rest = tuple(sequences[0].shape[1:])
    out = []
    for s in sequences:
        n = T - s.shape[0]
        if n:
            pad = full((n,) + rest, padding_value, dtype=s.dtype)
            s = _ops.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        out.append(s)
    return _ops.stack(out, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch into the list of its sequences of the given lengths."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lengths)]


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """data: the rows of each time step (sequences sorted longest first) concatenated; batch_sizes:
    how many sequences are still running at each step (int64, on the CPU)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The packed sequence with its data converted (dtype, device)."""
        return type(self)(self.data.to(*args, **kwargs), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        """False: there is no pinned memory on the CPU."""
        return False


def _invert(perm):
    inv = np.empty_like(perm._data)
    inv[perm._data] = np.arange(perm._data.size)
    return _tensor(inv)


def _lengths_array(lengths):
    a = lengths._data if isinstance(lengths, Tensor) else np.asarray(lengths)
    return np.asarray(a, dtype=np.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch of sequences with the given lengths (enforce_sorted)."""
    lens = _lengths_array(lengths)
    if enforce_sorted:
        if np.any(lens[:-1] < lens[1:]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                               "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                               "pack_sequence to sidestep this requirement if you do not need ONNX "
                               "exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = _tensor(order.astype(np.int64))
        lens = lens[order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if lens.size == 0 or lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    x = input.transpose(0, 1) if batch_first else input  # (T, B, *)
    if lens[0] > x.shape[0]:
        raise RuntimeError(f"pack_padded_sequence: a length ({lens[0]}) exceeds the padded length ({x.shape[0]})")
    batch_sizes = np.array([(lens > t).sum() for t in range(int(lens[0]))], dtype=np.int64)
    data = _ops.cat([x[t, :int(b)] for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(data, _tensor(batch_sizes), sorted_indices)


def _padded_sorted(sequence, padding_value=0.0, total_length=None):
    """(T, B, *) in the packed (sorted) batch order, and the sorted lengths."""
    bs = sequence.batch_sizes._data
    B = int(bs[0])
    T = len(bs) if total_length is None else total_length
    if T < len(bs):
        raise ValueError(f"Expected total_length to be at least {len(bs)}, but got {total_length}")
    data = sequence.data
    rest = tuple(data.shape[1:])
    steps, off = [], 0
    for b in bs:
        b = int(b)
        rows = data[off:off + b]
        off += b
        if b < B:
            rows = _ops.cat([rows, full((B - b,) + rest, padding_value, dtype=data.dtype)], 0)
        steps.append(rows)
    for _ in range(T - len(bs)):
        steps.append(full((B,) + rest, padding_value, dtype=data.dtype))
    lens = np.array([(bs > i).sum() for i in range(B)], dtype=np.int64)
    return _ops.stack(steps, 0), lens


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Unpack a PackedSequence into a padded batch and its lengths."""
    x, lens = _padded_sorted(sequence, padding_value, total_length)
    lengths = _tensor(lens)
    if sequence.unsorted_indices is not None:
        x = x.index_select(1, sequence.unsorted_indices)
        lengths = _tensor(lens[sequence.unsorted_indices._data])
    return (x.transpose(0, 1) if batch_first else x), lengths


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of variable-length sequences."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Unpack a PackedSequence into the list of its sequences."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
