"""nn.utils.rnn: pad_sequence (packed sequences are not supported: pad and mask instead)."""
from ... import ops as _ops
from ..._creation import full


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
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
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lengths)]
