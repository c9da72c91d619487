"""op_db entries of the recurrent family (ops/rnn.py): the fused LSTM layer and its fused backward.
The oracle of ``lstm_layer`` is the recurrence written step by step in PyTorch's ops."""
import op_db
from op_db import add, fixed, S, U

_reg = op_db._reg


def _torch_lstm_layer(m, x, h0, c0, w_ih, w_hh, b=None, reverse=False):
    h, c = h0, c0
    xw = m.nn.functional.linear(x, w_ih)
    seq = [None] * x.shape[0]
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        g = xw[t] + m.nn.functional.linear(h, w_hh, b)
        i, f, gg, o = g.chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * gg.tanh()
        h = o.sigmoid() * c.tanh()
        seq[t] = h
    return m.stack(seq, 0), h, c


def _lstm_samples(T, B, I, H, bias=True, **kw):
    return lambda r: S((U(r, (T, B, I)), U(r, (B, H)), U(r, (B, H)), U(r, (4 * H, I)), U(r, (4 * H, H)),
                        U(r, (4 * H,)) if bias else None), kw)


add("lstm_layer", fn=_reg("lstm_layer"), torch_fn=_torch_lstm_layer,
    samples=fixed(_lstm_samples(3, 2, 3, 2), _lstm_samples(4, 1, 2, 3, reverse=True),
                  _lstm_samples(2, 3, 1, 2, bias=False),
                  _lstm_samples(2, 2, 66, 2)))  # (an input too wide for the step's GEMM: projected before the loop)
add("lstm_layer_backward", fn=_reg("lstm_layer_backward"), oracle=False, grad=False,
    samples=fixed(lambda r: S((U(r, (3, 2, 2)), U(r, (2, 2)), U(r, (2, 2)), U(r, (3, 2, 3)), U(r, (2, 2)),
                               U(r, (2, 2)), U(r, (8, 3)), U(r, (8, 2)), U(r, (8,))), {"reverse": False}),
                  lambda r: S((U(r, (2, 1, 3)), U(r, (1, 3)), U(r, (1, 3)), U(r, (2, 1, 2)), U(r, (1, 3)),
                               U(r, (1, 3)), U(r, (12, 2)), U(r, (12, 3)), None), {"reverse": True})))
op_db.NON_DIFFERENTIABLE.append("lstm_layer_backward")
op_db.INTERNAL.append("lstm_layer_backward")
