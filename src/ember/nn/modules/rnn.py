"""RNN, LSTM, GRU and their cells, composed from ember ops (so every transform applies), with
PyTorch's parameter names (weight_ih_l{k}[_reverse], ...), gate order and initialisation.

The input projection of a whole sequence is one matmul (the LSTM layer primitive, ops/rnn.py, takes a
narrow input's into its step's GEMM instead); only the recurrent part loops over time.
"""
import math

import numpy as np

from .module import Module
from ... import _dispatch as D
from ..parameter import Parameter
from .. import init
from ... import ops as _ops
from ..._creation import empty, zeros
from .. import functional as F
from ...ops.rnn import lstm_layer as _lstm_layer
from ... import _dtype

_bf16 = _dtype.bfloat16

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _lstm_step(xw, h, c, w_hh, b_hh):
    gates = xw + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return h, c


def _lstm_layer_bf16(x, h, c, w_ih, w_hh, b_ih, b_hh, reverse):
    """One bfloat16 LSTM direction as PyTorch's CPU build runs it (its oneDNN layer): the two biases
    summed in bfloat16, the gates (both products and the bias) and the cell update in float32, h and c
    rounded to bfloat16 after every step. In ember ops (the roundings pass gradients through)."""
    f32 = _dtype.float32
    xw = F.linear(x.to(f32), w_ih.to(f32))
    b = None if b_ih is None else (b_ih + b_hh).to(f32)
    w_hh = w_hh.to(f32)
    h, c = h.to(f32), c.to(f32)
    T = x.shape[0]
    seq = [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        h, c = _lstm_step(xw[t], h, c, w_hh, b)
        h, c = h.to(_bf16).to(f32), c.to(_bf16).to(f32)
        seq[t] = h
    return _ops.stack(seq, 0).to(_bf16), h.to(_bf16), c.to(_bf16)


def _gru_step(xw, h, w_hh, b_hh):
    gh = F.linear(h, w_hh, b_hh)
    ir, iz, in_ = xw.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r = (ir + hr).sigmoid()
    z = (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (h - n)  # (PyTorch's order of operations: the same roundings in float16/bfloat16)


def _rnn_step(xw, h, w_hh, b_hh, relu):
    pre = xw + F.linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


class RNNBase(Module):
    """Base class of the multi-layer recurrent modules (RNN, LSTM, GRU): weights named as PyTorch's."""
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if proj_size:
            raise NotImplementedError("ember's LSTM does not support proj_size")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be a positive integer")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be a positive integer")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        ndir = 2 if bidirectional else 1
        gate = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(ndir):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                in_size = input_size if layer == 0 else hidden_size * ndir
                names = ["weight_ih" + sfx, "weight_hh" + sfx]
                setattr(self, names[0], Parameter(empty((gate, in_size), dtype=dtype, device=device)))
                setattr(self, names[1], Parameter(empty((gate, hidden_size), dtype=dtype, device=device)))
                if bias:
                    names += ["bias_ih" + sfx, "bias_hh" + sfx]
                    setattr(self, names[2], Parameter(empty(gate, dtype=dtype, device=device)))
                    setattr(self, names[3], Parameter(empty(gate, dtype=dtype, device=device)))
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    def reset_parameters(self):
        """Draw every weight and bias uniformly in [-1/sqrt(hidden_size), 1/sqrt(hidden_size)]."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in self._flat_weights_names[i:i + (4 if self.bias else 2)]]
                for i in range(0, len(self._flat_weights_names), 4 if self.bias else 2)]

    def flatten_parameters(self):
        """Does nothing (PyTorch compacts cuDNN weights here; the CPU has none to compact)."""
        pass

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        p = self._parameters
        return (p["weight_ih" + sfx], p["weight_hh" + sfx], p.get("bias_ih" + sfx), p.get("bias_hh" + sfx))

    def forward(self, input, hx=None):
        from ..utils.rnn import PackedSequence
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        return self._forward(input, hx)

    def _forward_packed(self, packed, hx):
        """A PackedSequence runs padded, in its sorted batch order, with each sequence's state frozen
        past its length (so h_n is the state at its last step); the output is packed the same way."""
        from ..utils.rnn import PackedSequence, _padded_sorted
        x, lens = _padded_sorted(packed)
        order, unorder = packed.sorted_indices, packed.unsorted_indices
        if hx is not None and order is not None:
            hx = tuple(h.index_select(1, order) for h in hx) if self.mode == "LSTM" else hx.index_select(1, order)
        steps = np.arange(x.shape[0])[:, None, None] < lens[None, :, None]  # (T, B, 1): still running
        out, h = self._forward(x, hx, D._new_tensor(steps), batch_first=False)
        data = _ops.cat([out[t, :int(b)] for t, b in enumerate(packed.batch_sizes._data)], 0)
        if unorder is not None:
            h = tuple(t.index_select(1, unorder) for t in h) if self.mode == "LSTM" else h.index_select(1, unorder)
        return PackedSequence(data, packed.batch_sizes, order, unorder), h

    def _forward(self, input, hx=None, running=None, batch_first=None):
        batch_first = self.batch_first if batch_first is None else batch_first
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        wd = self._weights(0, 0)[0].dtype
        if input.dtype is not wd:  # PyTorch's check (complex input to a real model included)
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({wd}). Convert input: "
                             f"input.to({wd}), or convert model: model.to({input.dtype})")
        x = input if batched else input.unsqueeze(1)
        if batched and batch_first:
            x = x.transpose(0, 1)
        T, B = x.shape[0], x.shape[1]
        if T == 0:  # as PyTorch (an empty batch, B == 0, runs and gives empty outputs)
            raise RuntimeError(f"{type(self).__name__}: Expected sequence length to be larger than 0 in RNN, got "
                               f"input of shape {tuple(input.shape)}")
        ndir = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        if hx is None:  # one (B, H) zero state for every layer and direction (nothing writes to it)
            h0 = None
            z = zeros((B, self.hidden_size), dtype=x.dtype)
        else:
            h0, c0 = hx if lstm else (hx, None)
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            want = (self.num_layers * ndir, B, self.hidden_size)
            for name, t in (("h0", h0), ("c0", c0)):
                if t is not None and tuple(t.shape) != want:
                    raise RuntimeError(f"Expected hidden size {want}, got {list(t.shape)}")
        hs, cs = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(ndir):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                k = layer * ndir + d
                h = z if h0 is None else h0[k]
                c = (z if h0 is None else c0[k]) if lstm else None
                if lstm and running is None and x.dtype is _bf16:
                    o, h, c = _lstm_layer_bf16(layer_in, h, c, w_ih, w_hh, b_ih, b_hh, d == 1)
                    outs.append(o)
                    hs.append(h)
                    cs.append(c)
                    continue
                if lstm and running is None and x.dtype is not _dtype.float16:
                    # the recurrence as one primitive (ops/rnn.py), the input projection and both biases
                    # (summed: two vectors) in its step's GEMM; float16 steps op by op below, each op
                    # rounding as PyTorch's float16 kernels do
                    o, h, c = _lstm_layer(layer_in, h, c, w_ih, w_hh, None if b_ih is None else b_ih + b_hh, d == 1)
                    outs.append(o)
                    hs.append(h)
                    cs.append(c)
                    continue
                xw = F.linear(layer_in, w_ih, b_ih)  # (T, B, gates): the whole sequence at once
                steps = range(T - 1, -1, -1) if d else range(T)
                seq = [None] * T
                for t in steps:
                    hp, cp = h, c
                    if lstm:
                        h, c = _lstm_step(xw[t], h, c, w_hh, b_hh)
                    elif self.mode == "GRU":
                        h = _gru_step(xw[t], h, w_hh, b_hh)
                    else:
                        h = _rnn_step(xw[t], h, w_hh, b_hh, self.mode == "RNN_RELU")
                    if running is not None:  # packed input: finished (or not yet started) sequences keep
                        m = running[t]      # their state and output zeros
                        h = _ops.where(m, h, hp)
                        c = _ops.where(m, c, cp) if lstm else None
                        seq[t] = _ops.where(m, h, 0.0)
                        continue
                    seq[t] = h
                outs.append(_ops.stack(seq, 0) if T else zeros((0, B, self.hidden_size), dtype=x.dtype))
                hs.append(h)
                if lstm:
                    cs.append(c)
            layer_in = outs[0] if ndir == 1 else _ops.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        out = layer_in
        h_n = _ops.stack(hs, 0)
        c_n = _ops.stack(cs, 0) if lstm else None
        if batched and batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        return (out, (h_n, c_n)) if lstm else (out, h_n)


class RNN(RNNBase):
    """Multi-layer Elman RNN (tanh or relu), optionally bidirectional; packed sequences accepted."""
    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size,
                         num_layers, bias, batch_first, dropout, bidirectional, 0, device, dtype)



class LSTM(RNNBase):
    """Multi-layer LSTM, optionally bidirectional, with proj_size; packed sequences accepted.

    bfloat16 runs as PyTorch's CPU build runs it (its oneDNN layer): gates and cell update in float32,
    h and c rounded to bfloat16 after each step; float16 (and packed bfloat16 input) rounds after
    each op, as PyTorch's own kernels do."""
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """Multi-layer GRU, optionally bidirectional; packed sequences accepted."""
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         0, device, dtype)


class RNNCellBase(Module):
    """Base class of the single-step recurrent cells."""
    _gates = 1

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        g = self._gates * hidden_size
        self.weight_ih = Parameter(empty((g, input_size), dtype=dtype, device=device))
        self.weight_hh = Parameter(empty((g, hidden_size), dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(empty(g, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(g, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Draw every weight and bias uniformly in [-1/sqrt(hidden_size), 1/sqrt(hidden_size)]."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.bias is not True:
            s += ", bias={bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _prep(self, input, hx):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            hx = zeros((x.shape[0], self.hidden_size), dtype=x.dtype)
        elif not batched:
            hx = hx.unsqueeze(0)
        return x, hx, batched


class RNNCell(RNNCellBase):
    """One step of an Elman RNN (tanh or relu)."""
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        x, h, batched = self._prep(input, hx)
        h = _rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh,
                      self.nonlinearity == "relu")
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One step of an LSTM: returns (h', c')."""
    _gates = 4

    def forward(self, input, hx=None):
        if hx is None:
            x, h, batched = self._prep(input, None)
            c = h
        else:
            x, h, batched = self._prep(input, hx[0])
            c = hx[1] if batched else hx[1].unsqueeze(0)
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One step of a GRU."""
    _gates = 3

    def forward(self, input, hx=None):
        x, h, batched = self._prep(input, hx)
        h = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)
