"""Error-handling audit: bad inputs against PyTorch as the oracle.

Each case is one call written once for both libraries (``fn(m)`` with ``m`` = ember or torch).
For every case:

* ember raises exactly when PyTorch raises (no silent answer where PyTorch refuses, no refusal
  where PyTorch computes; when neither raises the results agree in shape, dtype and values);
* the exception type is PyTorch's (RuntimeError / IndexError / TypeError / ValueError);
* ember's message names the op (``op``) and mentions the offending shapes / dtypes / dims
  (``mention``: substrings, matched case-insensitively);
* no NumPy exception leaks: the exception type is not NumPy's, and the innermost traceback frame
  is not inside NumPy.

Add a case by appending one ``C(...)`` line to the table of its area.
"""
import os
import traceback

import numpy as np
import pytest

import ember
import ember.nn  # noqa: F401
import ember.nn.functional  # noqa: F401


class C:
    def __init__(self, id, fn, op=None, mention=(), vals=True, tfn=None, xfail=None):
        self.xfail = xfail    # a known, documented gap (the test is expected to fail)
        self.id = id
        self.fn = fn          # fn(m) for m in (ember, torch)
        self.tfn = tfn        # the PyTorch call where the APIs differ
        self.op = op          # the name ember's message must contain (None: the case's prefix)
        self.mention = mention
        self.vals = vals      # compare values when neither raises (False: random weights)


def _f(m, *shape, dtype=None):
    """Deterministic float tensor 0..n-1 (float32 unless dtype)."""
    n = int(np.prod(shape)) if shape else 1
    return m.arange(n, dtype=dtype or m.float32).reshape(shape)


def _i(m, *vals):
    return m.tensor(list(vals), dtype=m.int64)


def _nc(m):
    return _f(m, 2, 3).t()  # a non-contiguous [3, 2] view


CASES = []


def cases(*cs):
    CASES.extend(cs)


# ----------------------------------------------------------------------------- broadcasting

cases(
    C("add.bcast", lambda m: _f(m, 2, 3) + _f(m, 4), op="add", mention=("3", "4")),
    C("sub.bcast", lambda m: m.sub(_f(m, 2, 3), _f(m, 2, 2)), op="sub", mention=("3", "2")),
    C("mul.bcast", lambda m: _f(m, 5) * _f(m, 3), op="mul", mention=("5", "3")),
    C("div.bcast", lambda m: _f(m, 5) / _f(m, 3), op="div", mention=("5", "3")),
    C("pow.bcast", lambda m: _f(m, 5) ** _f(m, 3), op="pow", mention=("5", "3")),
    C("maximum.bcast", lambda m: m.maximum(_f(m, 5), _f(m, 3)), op="maximum", mention=("5", "3")),
    C("where.bcast", lambda m: m.where(_f(m, 2) > 0, _f(m, 3), _f(m, 2)), op="where", mention=("2", "3")),
    C("eq.bcast", lambda m: _f(m, 4) == _f(m, 3), op="eq", mention=("4", "3")),
    C("lt.bcast", lambda m: _f(m, 4) < _f(m, 3), op="lt", mention=("4", "3")),
    C("atan2.bcast", lambda m: m.atan2(_f(m, 4), _f(m, 3)), op="atan2", mention=("4", "3")),
    C("lerp.bcast", lambda m: m.lerp(_f(m, 4), _f(m, 3), 0.5), op=("lerp", "sub"), mention=("4", "3")),
    C("addcmul.bcast", lambda m: m.addcmul(_f(m, 4), _f(m, 3), _f(m, 4)), op=("addcmul", "mul"), mention=("4", "3")),
    C("clamp.bcast", lambda m: m.clamp(_f(m, 4), _f(m, 3)), op=("clamp", "maximum"), mention=("4", "3")),
    C("masked_fill.bcast", lambda m: _f(m, 4).masked_fill(_f(m, 3) > 0, 1.0), op="masked_fill",
      mention=("4", "3")),
    C("add.ok_bcast", lambda m: _f(m, 2, 1) + _f(m, 3)),
    C("add.scalar", lambda m: _f(m, 2) + 3),
    # in place: the result must have self's shape
    C("add_.grow", lambda m: _f(m, 3).add_(_f(m, 2, 3)), op="add_", mention=("[3]", "[2, 3]")),
    C("mul_.grow", lambda m: _f(m, 1).mul_(_f(m, 3)), op="mul_", mention=("[1]", "[3]")),
    C("iadd.grow", lambda m: _iadd(_f(m, 1, 3), _f(m, 2, 3)), op="add_", mention=("[1, 3]", "[2, 3]")),
    C("add_.ok_bcast", lambda m: _f(m, 2, 3).add_(_f(m, 3))),
    C("copy_.bcast", lambda m: _f(m, 3).copy_(_f(m, 4)), op="copy_", mention=("3", "4")),
    C("copy_.grow", lambda m: _f(m, 3).copy_(_f(m, 2, 3)), op="copy_", mention=("[3]", "[2, 3]")),
    C("clamp_.grow", lambda m: _f(m, 1).clamp_(_f(m, 3)), op="clamp_", mention=("[1]", "[3]")),
    C("masked_fill_.grow", lambda m: _f(m, 3).masked_fill_(_f(m, 2, 3) > 0, 1.0), op="masked_fill",
      mention=("[3]", "[2, 3]")),
)


def _iadd(a, b):
    a += b
    return a


# ----------------------------------------------------------------------------- dtypes

cases(
    C("sub.bool", lambda m: m.ones(2, dtype=m.bool) - m.ones(2, dtype=m.bool), op="sub", mention=("bool",)),
    C("neg.bool", lambda m: -m.ones(2, dtype=m.bool), op="neg", mention=("bool",)),
    C("add.bool", lambda m: m.ones(2, dtype=m.bool) + m.ones(2, dtype=m.bool)),
    C("bitwise_and.float", lambda m: _f(m, 2) & _f(m, 2), op="bitwise_and", mention=("float",)),
    C("bitwise_not.float", lambda m: ~_f(m, 2), op="bitwise_not", mention=("float",)),
    C("add_.float_into_int", lambda m: _i(m, 1, 2).add_(_f(m, 2)), op="add_", mention=("float32", "int64")),
    C("mul_.float_scalar_into_int", lambda m: _i(m, 1, 2).mul_(1.5), op="mul_", mention=("float32", "int64")),
    C("div_.int", lambda m: _i(m, 1, 2).div_(_i(m, 1, 2)), op="div_", mention=("float32", "int64")),
    C("add_.int_into_bool", lambda m: m.ones(2, dtype=m.bool).add_(_i(m, 1, 2)), op="add_",
      mention=("int64", "bool")),
    C("add_.int_into_float", lambda m: _f(m, 2).add_(_i(m, 1, 2))),
    C("mean.int", lambda m: _i(m, 1, 2).mean(), op="mean", mention=("int64",)),
    C("std.int", lambda m: _i(m, 1, 2).std(), op=("std", "var"), mention=("floating point",)),
    C("softmax.int", lambda m: m.softmax(_i(m, 1, 2), 0)),
    C("matmul.int_float", lambda m: _i(m, 1, 2) @ _f(m, 2), op="matmul", mention=("int64", "float32")),
    C("matmul.dtype_mismatch", lambda m: _f(m, 2, 2) @ _f(m, 2, 2, dtype=m.float64), op="matmul",
      mention=("float32", "float64")),
    C("linear.dtype_mismatch", lambda m: m.nn.functional.linear(_f(m, 2, 3), _f(m, 4, 3, dtype=m.float64)),
      op="linear", mention=("float32", "float64")),
    C("conv2d.dtype_mismatch", lambda m: m.nn.functional.conv2d(_f(m, 1, 1, 4, 4), _f(m, 1, 1, 3, 3, dtype=m.float64)),
      op="conv2d", mention=("float32", "float64")),
    C("conv2d.int", lambda m: m.nn.functional.conv2d(_i(m, *range(16)).reshape(1, 1, 4, 4),
                                                      _i(m, *range(9)).reshape(1, 1, 3, 3)),
      xfail="ember's conv kernels are floating point only (PyTorch's CPU conv2d accepts int64)"),
    C("requires_grad.int", lambda m: _i(m, 1, 2).requires_grad_(), op="floating point",
      mention=("int64",)),
    C("requires_grad.tensor_int", lambda m: m.tensor([1, 2], requires_grad=True), op="floating point",
      mention=("int64",)),
    C("requires_grad.ones_int", lambda m: m.ones(2, dtype=m.int64, requires_grad=True), op="floating point",
      mention=("int64",)),
    C("gather.float_index", lambda m: m.gather(_f(m, 3), 0, _f(m, 2)), op="gather", mention=("int64", "float")),
    C("index_select.float_index", lambda m: m.index_select(_f(m, 3), 0, _f(m, 2)), op="index_select",
      mention=("float",)),
    C("getitem.float_index", lambda m: _f(m, 3)[_f(m, 2)], op="index", mention=("float",)),
    C("embedding.float_index", lambda m: m.nn.functional.embedding(_f(m, 2), _f(m, 4, 3)), op="embedding",
      mention=("float",)),
    C("cross_entropy.float_target_shape", lambda m: m.nn.functional.cross_entropy(_f(m, 2, 3), _f(m, 2)),
      op="cross_entropy", mention=("[2]",)),
    C("nll_loss.float_target", lambda m: m.nn.functional.nll_loss(_f(m, 2, 3), _f(m, 2)), op="nll_loss",
      mention=("float",)),
    C("scatter.float_index", lambda m: m.zeros(3).scatter(0, _f(m, 2), _f(m, 2)), op="scatter",
      mention=("int64", "float")),
    C("masked_fill.float_mask", lambda m: _f(m, 3).masked_fill(_f(m, 3), 1.0), op="masked_fill",
      mention=("bool", "float")),
    C("where.float_cond", lambda m: m.where(_f(m, 3), _f(m, 3), _f(m, 3)), op="where", mention=("bool", "float")),
    C("sqrt.int_ok", lambda m: m.sqrt(_i(m, 1, 4))),
    C("floor_divide.zero_int", lambda m: _i(m, 1, 2) // 0, op="div", mention=("zero",)),
    C("remainder.zero_int", lambda m: _i(m, 1, 2) % 0, op="remainder", mention=("zero",)),
)

# ----------------------------------------------------------------------------- linear algebra

cases(
    C("matmul.2d", lambda m: _f(m, 2, 3) @ _f(m, 4, 5), op="matmul", mention=("2x3", "4x5")),
    C("matmul.1d", lambda m: _f(m, 3) @ _f(m, 4), op=("dot", "matmul"), mention=("3", "4")),
    C("matmul.2d_1d", lambda m: _f(m, 2, 3) @ _f(m, 4), op=("mv", "matmul"), mention=("2x3", "4")),
    C("matmul.batch", lambda m: _f(m, 2, 2, 3) @ _f(m, 3, 3, 4), op="matmul", mention=("2", "3")),
    C("matmul.0d", lambda m: _f(m) @ _f(m, 2), op="matmul", mention=("0",)),
    C("mm.shape", lambda m: m.mm(_f(m, 2, 3), _f(m, 2, 3)), op=("mm", "matmul"), mention=("2x3",)),
    C("mm.3d", lambda m: m.mm(_f(m, 2, 2, 3), _f(m, 3, 3)), op="mm", mention=("2",)),
    C("bmm.shape", lambda m: m.bmm(_f(m, 2, 2, 3), _f(m, 2, 4, 5)), op=("bmm", "matmul"), mention=("3", "4")),
    C("bmm.batch", lambda m: m.bmm(_f(m, 2, 2, 3), _f(m, 3, 3, 5)), op="bmm", mention=("2", "3")),
    C("bmm.2d", lambda m: m.bmm(_f(m, 2, 3), _f(m, 3, 5)), op="bmm", mention=("3",)),
    C("mv.shape", lambda m: m.mv(_f(m, 2, 3), _f(m, 4)), op=("mv", "matmul"), mention=("3", "4")),
    C("dot.shape", lambda m: m.dot(_f(m, 3), _f(m, 4)), op="dot", mention=("3", "4")),
    C("dot.2d", lambda m: m.dot(_f(m, 2, 2), _f(m, 2, 2)), op="dot", mention=("2",)),
    C("outer.ok", lambda m: m.outer(_f(m, 3), _f(m, 4))),
    C("addmm.shape", lambda m: m.addmm(_f(m, 2, 2), _f(m, 2, 3), _f(m, 4, 2)), op=("addmm", "matmul"), mention=("2x3", "4x2")),
    C("linear.in_features", lambda m: m.nn.functional.linear(_f(m, 2, 3), _f(m, 4, 5)), op="linear",
      mention=("2x3", "5x4")),
    C("linear.bias", lambda m: m.nn.functional.linear(_f(m, 2, 3), _f(m, 4, 3), _f(m, 5)), op="linear",
      mention=("4", "5")),
    C("Linear.forward", lambda m: m.nn.Linear(3, 4)(_f(m, 2, 5)), op="linear", mention=("2x5", "3x4")),
    C("Bilinear.forward", lambda m: m.nn.Bilinear(3, 4, 2)(_f(m, 2, 3), _f(m, 2, 5)), op=("bilinear", "einsum"),
      mention=("5",)),
    C("trace.1d", lambda m: m.trace(_f(m, 3)), op="trace", mention=("1",)),
    C("cross.dim3", lambda m: m.cross(_f(m, 2, 2), _f(m, 2, 2), dim=1), op="cross", mention=("3",)),
)

# ----------------------------------------------------------------------------- shapes

cases(
    C("cat.shape", lambda m: m.cat([_f(m, 2, 3), _f(m, 2, 4)]), op="cat", mention=("3", "4")),
    C("cat.ndim", lambda m: m.cat([_f(m, 2, 3), _f(m, 3)]), op="cat", mention=("2", "1")),
    C("cat.dim", lambda m: m.cat([_f(m, 2, 3), _f(m, 2, 3)], dim=2), op="cat", mention=("2",)),
    C("cat.empty_list", lambda m: m.cat([]), op="cat", mention=("non-empty",)),
    C("cat.not_tensor", lambda m: m.cat([_f(m, 2), [1.0, 2.0]]), op="cat", mention=("list",)),
    C("cat.legacy_empty", lambda m: m.cat([_f(m, 2, 3), m.zeros(0)])),
    C("cat.mixed_dtype", lambda m: m.cat([_f(m, 2), _i(m, 1, 2)])),
    C("stack.shape", lambda m: m.stack([_f(m, 2, 3), _f(m, 3, 2)]), op="stack", mention=("[2, 3]", "[3, 2]")),
    C("stack.dim", lambda m: m.stack([_f(m, 2), _f(m, 2)], dim=3), op="stack", mention=("3",)),
    C("stack.empty_list", lambda m: m.stack([]), op="stack", mention=("non-empty",)),
    C("view.numel", lambda m: _f(m, 2, 3).view(4), op="view", mention=("[4]", "6")),
    C("view.noncontig", lambda m: _nc(m).view(6), op="view", mention=("stride", "reshape")),
    C("view.two_minus_one", lambda m: _f(m, 2, 3).view(-1, -1), op="view", mention=("-1",)),
    C("view.noncontig_ok", lambda m: _nc(m).view(3, 2)),
    C("reshape.numel", lambda m: _f(m, 2, 3).reshape(4, 2), op="reshape", mention=("[4, 2]", "6")),
    C("reshape.negative", lambda m: _f(m, 2, 3).reshape(-2, 3), op="reshape", mention=("-2",)),
    C("reshape.noncontig_ok", lambda m: _nc(m).reshape(6)),
    C("expand.shape", lambda m: _f(m, 2, 3).expand(2, 4), op="expand", mention=("3", "4")),
    C("expand.fewer", lambda m: _f(m, 2, 3).expand(3), op="expand", mention=("2",)),
    C("expand.minus_one_new", lambda m: _f(m, 3).expand(-1, 3), op="expand", mention=("-1",)),
    C("permute.len", lambda m: _f(m, 2, 3).permute(0), op="permute", mention=("2", "1")),
    C("permute.repeat", lambda m: _f(m, 2, 3).permute(0, 0), op="permute", mention=("repeat",)),
    C("permute.range", lambda m: _f(m, 2, 3).permute(0, 2), op="permute", mention=("2",)),
    C("transpose.range", lambda m: _f(m, 2, 3).transpose(0, 2), op="transpose", mention=("2",)),
    C("squeeze.range", lambda m: _f(m, 2, 1).squeeze(2), op="squeeze", mention=("2",)),
    C("unsqueeze.range", lambda m: _f(m, 2, 3).unsqueeze(4), op="unsqueeze", mention=("4",)),
    C("unsqueeze.range_neg", lambda m: _f(m, 2, 3).unsqueeze(-4), op="unsqueeze", mention=("-4",)),
    C("unsqueeze.last_ok", lambda m: _f(m, 2, 3).unsqueeze(2)),
    C("flatten.range", lambda m: _f(m, 2, 3).flatten(0, 2), op="flatten", mention=("2",)),
    C("flatten.order", lambda m: _f(m, 2, 3, 4).flatten(2, 1), op="flatten", mention=("start_dim",)),
    C("unflatten.size", lambda m: _f(m, 2, 6).unflatten(1, (4, 2)), op="unflatten", mention=("6",)),
    C("select.index", lambda m: _f(m, 2, 3).select(1, 3), op="select", mention=("3",)),
    C("select.neg_index", lambda m: _f(m, 2, 3).select(1, -4), op="select", mention=("-4",)),
    C("narrow.length", lambda m: _f(m, 5).narrow(0, 3, 3), op="narrow", mention=("3", "5")),
    C("narrow.start", lambda m: _f(m, 5).narrow(0, 6, 0), op="narrow", mention=("6",)),
    C("split.dim", lambda m: _f(m, 4).split(2, dim=1), op="split", mention=("1",)),
    C("split.sections", lambda m: _f(m, 4).split([1, 2]), op="split", mention=("4",)),
    C("chunk.zero", lambda m: _f(m, 4).chunk(0), op="chunk", mention=("0",)),
    C("diagonal.dims", lambda m: _f(m, 2, 3).diagonal(0, 0, 0), op="diagonal", mention=("0",)),
    C("repeat.fewer", lambda m: _f(m, 2, 3).repeat(2), op="repeat", mention=("2",)),
    C("repeat.negative", lambda m: _f(m, 2).repeat(-1), op="repeat", mention=("-1",)),
    C("roll.shifts_dims", lambda m: _f(m, 2, 3).roll((1, 2), (0,)), op="roll", mention=("2", "1")),
    C("flip.dup", lambda m: _f(m, 2, 3).flip((0, 0)), op="flip", mention=("0",)),
    C("movedim.range", lambda m: _f(m, 2, 3).movedim(0, 2), op="movedim", mention=("2",)),
    C("tril.1d", lambda m: m.tril(_f(m, 3)), op="tril", mention=("2",)),
    C("broadcast_to.shape", lambda m: m.broadcast_to(_f(m, 3), (2, 4)), op=("broadcast_to", "expand"), mention=("3", "4")),
    C("zeros.negative", lambda m: m.zeros(2, -1), op="zeros", mention=("-1",)),
    C("ones.negative", lambda m: m.ones(-3), op="ones", mention=("-3",)),
    C("arange.step0", lambda m: m.arange(0, 5, 0), op="arange", mention=("step",)),
    C("arange.wrong_sign", lambda m: m.arange(0, 5, -1), op="arange", mention=("sign",)),
    C("sum_to_size.shape", lambda m: _f(m, 2, 3).sum_to_size(4), op="sum_to_size", mention=("4",)),
)

# ----------------------------------------------------------------------------- dims of reductions

cases(
    C("sum.dim", lambda m: _f(m, 2, 3).sum(2), op="sum", mention=("2",)),
    C("sum.dim_neg", lambda m: _f(m, 2, 3).sum(-3), op="sum", mention=("-3",)),
    C("sum.dim_dup", lambda m: _f(m, 2, 3).sum((0, 0)), op="sum", mention=("0",)),
    C("sum.dim_float", lambda m: _f(m, 2, 3).sum(1.0), op="sum", mention=("float",)),
    C("mean.dim", lambda m: _f(m, 2, 3).mean(2), op="mean", mention=("2",)),
    C("prod.dim", lambda m: _f(m, 2, 3).prod(2), op="prod", mention=("2",)),
    C("amax.dim", lambda m: _f(m, 2, 3).amax(2), op="amax", mention=("2",)),
    C("max.dim", lambda m: _f(m, 2, 3).max(2), op="max", mention=("2",)),
    C("argmax.dim", lambda m: _f(m, 2, 3).argmax(2), op="argmax", mention=("2",)),
    C("var.dim", lambda m: _f(m, 2, 3).var(2), op="var", mention=("2",)),
    C("logsumexp.dim", lambda m: _f(m, 2, 3).logsumexp(2), op="logsumexp", mention=("2",)),
    C("softmax.dim", lambda m: _f(m, 2, 3).softmax(2), op="softmax", mention=("2",)),
    C("log_softmax.dim", lambda m: _f(m, 2, 3).log_softmax(-3), op="log_softmax", mention=("-3",)),
    C("cumsum.dim", lambda m: _f(m, 2, 3).cumsum(2), op="cumsum", mention=("2",)),
    C("cumprod.dim", lambda m: _f(m, 2, 3).cumprod(-3), op="cumprod", mention=("-3",)),
    C("norm.dim", lambda m: _f(m, 2, 3).norm(dim=2), op="norm", mention=("2",)),
    C("all.dim", lambda m: (_f(m, 2, 3) > 0).all(2), op="all", mention=("2",)),
    C("sort.dim", lambda m: _f(m, 2, 3).sort(2), op="sort", mention=("2",)),
    C("topk.k", lambda m: _f(m, 2, 3).topk(4), op="topk", mention=("4",)),
    C("topk.dim", lambda m: _f(m, 2, 3).topk(1, dim=2), op="topk", mention=("2",)),
    C("kthvalue.k", lambda m: _f(m, 3).kthvalue(4), op="kthvalue", mention=("4",)),
    C("sum.scalar_dim0_ok", lambda m: _f(m).sum(0)),
    C("sum.scalar_dim_neg1_ok", lambda m: _f(m).sum(-1)),
    C("sum.scalar_dim1", lambda m: _f(m).sum(1), op="sum", mention=("1",)),
    # empty inputs
    C("max.empty", lambda m: m.zeros(0).max(), op="max", mention=("numel() == 0",)),
    C("amax.empty", lambda m: m.zeros(0, 3).amax(0), op="amax", mention=("0",)),
    C("argmax.empty", lambda m: m.zeros(0).argmax(), op="argmax", mention=("empty",)),
    C("min.empty_dim", lambda m: m.zeros(2, 0).min(1), op="min", mention=("non-zero size",)),
    C("amax.empty_other_dim_ok", lambda m: m.zeros(0, 3).amax(1)),
    C("sum.empty_ok", lambda m: m.zeros(0, 3).sum(0)),
    C("prod.empty_ok", lambda m: m.zeros(0, 3).prod(0)),
    C("mean.empty_ok", lambda m: m.zeros(0, 3).mean(1)),
    C("logsumexp.empty_ok", lambda m: m.zeros(0, 3).logsumexp(0)),
    C("kthvalue.empty", lambda m: m.zeros(0).kthvalue(1), op="kthvalue", mention=("[0]",)),
    C("median.empty_dim", lambda m: m.zeros(2, 0).median(1), op="median", mention=("0",)),
)

# ----------------------------------------------------------------------------- indices

cases(
    C("getitem.int", lambda m: _f(m, 3)[3], op="index", mention=("3",)),
    C("getitem.int_neg", lambda m: _f(m, 3)[-4], op="index", mention=("-4",)),
    C("getitem.int_2d", lambda m: _f(m, 2, 3)[0, 5], op="index", mention=("5",)),
    C("getitem.too_many", lambda m: _f(m, 2, 3)[0, 0, 0], op="index", mention=("3", "2")),
    C("getitem.tensor", lambda m: _f(m, 3)[_i(m, 0, 3)], op="index", mention=("3",)),
    C("getitem.tensor_neg", lambda m: _f(m, 3)[_i(m, 0, -4)], op="index", mention=("-4",)),
    C("getitem.tensor_neg_ok", lambda m: _f(m, 3)[_i(m, 0, -3)]),
    C("getitem.list", lambda m: _f(m, 3)[[0, 5]], op="index", mention=("5",)),
    C("getitem.bool_shape", lambda m: _f(m, 3)[m.tensor([True, False])], op="index", mention=("2", "3")),
    C("getitem.slice_ok", lambda m: _f(m, 3)[1:10]),
    C("getitem.step0", lambda m: _f(m, 3)[::0], op="step", mention=("step",)),
    C("getitem.neg_step", lambda m: _f(m, 3)[::-1], op="step", mention=("step",)),
    C("getitem.str", lambda m: _f(m, 3)["a"], op="index", mention=("str",)),
    C("getitem.float", lambda m: _f(m, 3)[1.0], op="index", mention=("float",)),
    C("getitem.bcast_idx", lambda m: _f(m, 3, 3)[_i(m, 0, 1), _i(m, 0, 1, 2)], op="index", mention=("2", "3")),
    C("setitem.int", lambda m: _setitem(_f(m, 3), 3, 1.0), op="index", mention=("3",)),
    C("setitem.tensor", lambda m: _setitem(_f(m, 3), _i(m, 0, -4), 1.0), op="index", mention=("-4",)),
    C("setitem.shape", lambda m: _setitem(_f(m, 2, 3), 0, _f(m, 4)), op=("setitem", "index_put"), mention=("3", "4")),
    C("gather.index", lambda m: m.gather(_f(m, 3), 0, _i(m, 0, 3)), op="gather", mention=("3",)),
    C("gather.index_neg", lambda m: m.gather(_f(m, 3), 0, _i(m, -1)), op="gather", mention=("-1",)),
    C("gather.ndim", lambda m: m.gather(_f(m, 2, 3), 1, _i(m, 0, 1)), op="gather", mention=("[2]", "[2, 3]")),
    C("gather.size", lambda m: m.gather(_f(m, 2, 3), 1, _i(m, 0, 1, 1, 0, 1, 1).reshape(3, 2)), op="gather",
      mention=("3", "2")),
    C("gather.dim", lambda m: m.gather(_f(m, 3), 1, _i(m, 0)), op="gather", mention=("1",)),
    C("scatter.index", lambda m: m.zeros(3).scatter(0, _i(m, 0, 3), _f(m, 2)), op="scatter", mention=("3",)),
    C("scatter.index_neg", lambda m: m.zeros(3).scatter(0, _i(m, -1), _f(m, 1)), op="scatter", mention=("-1",)),
    C("scatter_add.index", lambda m: m.zeros(3).scatter_add(0, _i(m, 5), _f(m, 1)), op="scatter_add",
      mention=("5",)),
    C("index_select.index", lambda m: m.index_select(_f(m, 3), 0, _i(m, 0, 3)), op="index_select",
      mention=("3",)),
    C("index_select.index_neg", lambda m: m.index_select(_f(m, 3), 0, _i(m, -1)), op="index_select",
      mention=("-1",)),
    C("index_select.2d_index", lambda m: m.index_select(_f(m, 3), 0, _i(m, 0, 1).reshape(1, 2)),
      op="index_select", mention=("2",)),
    C("index_select.dim", lambda m: m.index_select(_f(m, 3), 1, _i(m, 0)), op="index_select", mention=("1",)),
    C("index_add.index", lambda m: m.zeros(3).index_add(0, _i(m, 3), _f(m, 1)), op="index_add", mention=("3",)),
    C("index_fill.index", lambda m: m.zeros(3).index_fill(0, _i(m, 3), 1.0), op="index_fill", mention=("3",)),
    C("take.index", lambda m: m.take(_f(m, 2, 3), _i(m, 6)), op="take", mention=("6",)),
    C("take.index_neg_ok", lambda m: m.take(_f(m, 2, 3), _i(m, -6))),
    C("take.index_neg", lambda m: m.take(_f(m, 2, 3), _i(m, -7)), op="take", mention=("-7",)),
    C("embedding.index", lambda m: m.nn.functional.embedding(_i(m, 0, 4), _f(m, 4, 3)), op="embedding",
      mention=("4",)),
    C("embedding.index_neg", lambda m: m.nn.functional.embedding(_i(m, -1), _f(m, 4, 3)), op="embedding",
      mention=("-1",)),
    C("Embedding.forward", lambda m: m.nn.Embedding(4, 3)(_i(m, 1, 7)), op="embedding", mention=("7",),
      vals=False),
    C("one_hot.index", lambda m: m.nn.functional.one_hot(_i(m, 0, 3), 3), op="one_hot", mention=("3",)),
    C("one_hot.neg", lambda m: m.nn.functional.one_hot(_i(m, 0, -1), 3), op="one_hot", mention=("negative",)),
    C("cross_entropy.target", lambda m: m.nn.functional.cross_entropy(_f(m, 2, 3), _i(m, 0, 3)),
      op="cross_entropy", mention=("3",)),
    C("cross_entropy.target_neg", lambda m: m.nn.functional.cross_entropy(_f(m, 2, 3), _i(m, 0, -1)),
      op="cross_entropy", mention=("-1",)),
    C("cross_entropy.ignore_ok", lambda m: m.nn.functional.cross_entropy(_f(m, 2, 3), _i(m, 0, -100))),
    C("cross_entropy.batch", lambda m: m.nn.functional.cross_entropy(_f(m, 2, 3), _i(m, 0, 1, 2)),
      op="cross_entropy", mention=("2", "3")),
    C("nll_loss.target", lambda m: m.nn.functional.nll_loss(_f(m, 2, 3), _i(m, 0, 5)), op="nll_loss",
      mention=("5",)),
    C("nll_loss.target_neg", lambda m: m.nn.functional.nll_loss(_f(m, 2, 3), _i(m, 0, -2)), op="nll_loss",
      mention=("-2",)),
    C("CrossEntropyLoss.forward", lambda m: m.nn.CrossEntropyLoss()(_f(m, 2, 3), _i(m, 0, 3)),
      op="cross_entropy", mention=("3",)),
    C("bincount.neg", lambda m: m.bincount(_i(m, 0, -1)), op="bincount", mention=("negative",)),
    C("index_put.index", lambda m: _f(m, 3).index_put_((_i(m, 3),), m.tensor(1.0)), op="index", mention=("3",)),
)


def _setitem(x, k, v):
    x[k] = v
    return x


# ----------------------------------------------------------------------------- nn shapes

cases(
    C("conv2d.channels", lambda m: m.nn.functional.conv2d(_f(m, 1, 2, 5, 5), _f(m, 4, 3, 3, 3)), op="conv2d",
      mention=("3", "2")),
    C("conv2d.kernel_too_big", lambda m: m.nn.functional.conv2d(_f(m, 1, 1, 2, 2), _f(m, 1, 1, 3, 3)),
      op="conv2d", mention=("3",)),
    C("conv2d.ndim", lambda m: m.nn.functional.conv2d(_f(m, 5, 5), _f(m, 1, 1, 3, 3)), op="conv2d",
      mention=("2",)),
    C("conv2d.groups", lambda m: m.nn.functional.conv2d(_f(m, 1, 4, 5, 5), _f(m, 3, 2, 3, 3), groups=2),
      op="conv2d", mention=("3", "2")),
    C("conv2d.bias", lambda m: m.nn.functional.conv2d(_f(m, 1, 1, 5, 5), _f(m, 2, 1, 3, 3), _f(m, 3)),
      op="conv2d", mention=("3", "2")),
    C("conv2d.stride0", lambda m: m.nn.functional.conv2d(_f(m, 1, 1, 5, 5), _f(m, 1, 1, 3, 3), stride=0),
      op="conv2d", mention=("stride",)),
    C("conv2d.neg_padding", lambda m: m.nn.functional.conv2d(_f(m, 1, 1, 5, 5), _f(m, 1, 1, 3, 3), padding=-1),
      op="conv2d", mention=("padding",)),
    C("conv2d.unbatched_ok", lambda m: m.nn.functional.conv2d(_f(m, 1, 5, 5), _f(m, 1, 1, 3, 3))),
    C("Conv2d.forward", lambda m: m.nn.Conv2d(3, 4, 3)(_f(m, 1, 2, 5, 5)), op="conv2d", mention=("3", "2")),
    C("conv1d.channels", lambda m: m.nn.functional.conv1d(_f(m, 1, 2, 5), _f(m, 4, 3, 3)), op="conv1d",
      mention=("3", "2")),
    C("conv_transpose2d.channels", lambda m: m.nn.functional.conv_transpose2d(_f(m, 1, 2, 5, 5),
                                                                              _f(m, 3, 4, 3, 3)),
      op="conv_transpose2d", mention=("3", "2")),
    C("max_pool2d.kernel", lambda m: m.nn.functional.max_pool2d(_f(m, 1, 1, 2, 2), 3), op="max_pool2d",
      mention=("3",)),
    C("max_pool2d.padding", lambda m: m.nn.functional.max_pool2d(_f(m, 1, 1, 4, 4), 2, padding=2),
      op="max_pool2d", mention=("pad",)),
    C("avg_pool2d.kernel", lambda m: m.nn.functional.avg_pool2d(_f(m, 1, 1, 2, 2), 3), op="avg_pool2d",
      mention=("3",)),
    C("batch_norm.features", lambda m: m.nn.functional.batch_norm(_f(m, 2, 3), m.zeros(4), m.ones(4)),
      op="batch_norm", mention=("3", "4")),
    C("BatchNorm2d.forward", lambda m: m.nn.BatchNorm2d(3)(_f(m, 2, 4, 2, 2)), op="batch_norm",
      mention=("3", "4")),
    C("BatchNorm2d.ndim", lambda m: m.nn.BatchNorm2d(3)(_f(m, 2, 3)), op="BatchNorm2d", mention=("4D", "2D")),
    C("BatchNorm1d.one_value", lambda m: m.nn.BatchNorm1d(3)(_f(m, 1, 3)), op="batch_norm",
      mention=("1", "3")),
    C("layer_norm.shape", lambda m: m.nn.functional.layer_norm(_f(m, 2, 3), (4,)), op="layer_norm",
      mention=("[4]", "[2, 3]")),
    C("LayerNorm.forward", lambda m: m.nn.LayerNorm(4)(_f(m, 2, 3)), op="layer_norm", mention=("[4]", "[2, 3]")),
    C("group_norm.groups", lambda m: m.nn.functional.group_norm(_f(m, 2, 6, 2), 4), op="group_norm",
      mention=("6", "4")),
    C("mse_loss.bcast", lambda m: m.nn.functional.mse_loss(_f(m, 2, 3), _f(m, 2, 4)), op="mse_loss",
      mention=("3", "4")),
    C("l1_loss.bcast", lambda m: m.nn.functional.l1_loss(_f(m, 2, 3), _f(m, 4)), op="l1_loss",
      mention=("3", "4")),
    C("bce.shape", lambda m: m.nn.functional.binary_cross_entropy(m.full((2, 3), 0.5), m.full((2, 4), 0.5)),
      op="binary_cross_entropy", mention=("[2, 4]", "[2, 3]")),
    C("bce.range", lambda m: m.nn.functional.binary_cross_entropy(m.full((2,), 1.5), m.full((2,), 0.5)),
      op="binary_cross_entropy", mention=("between 0 and 1",)),
    C("bce_logits.shape", lambda m: m.nn.functional.binary_cross_entropy_with_logits(_f(m, 2, 3), _f(m, 2, 4)),
      op="binary_cross_entropy_with_logits", mention=("[2, 4]", "[2, 3]")),
    C("softmax.no_dim_ok", lambda m: m.nn.functional.softmax(_f(m, 2, 3), dim=1)),
    C("dropout.p", lambda m: m.nn.functional.dropout(_f(m, 3), p=1.5), op="dropout", mention=("1.5",)),
    C("Dropout.p", lambda m: m.nn.Dropout(p=-0.1), op="dropout", mention=("-0.1",)),
    C("pad.too_long", lambda m: m.nn.functional.pad(_f(m, 2), (1, 1, 1, 1)), op="pad", mention=("4", "1")),
    C("pad.odd", lambda m: m.nn.functional.pad(_f(m, 2), (1,)), op="pad", mention=("2",)),
    C("interpolate.no_size", lambda m: m.nn.functional.interpolate(_f(m, 1, 1, 2, 2)), op="interpolate",
      mention=("size",)),
    C("Sequential.chain", lambda m: m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Linear(5, 2))(_f(m, 1, 3)),
      op="linear", mention=("1x4", "5x2")),
)

# ----------------------------------------------------------------------------- non-tensor arguments

cases(
    C("add.str", lambda m: _f(m, 2) + "a", op="add", mention=("str",)),
    C("add.none", lambda m: m.add(_f(m, 2), None), op="add", mention=("None",)),
    C("mul.list", lambda m: m.mul(_f(m, 2), [1.0, 2.0]), op="mul", mention=("list",)),
    C("exp.list", lambda m: m.exp([1.0, 2.0]), op="exp", mention=("list",)),
    C("sum.ndarray", lambda m: m.sum(np.ones(2)), op="sum", mention=("ndarray",),
      xfail="registry ops accept NumPy arrays as inputs (PyTorch refuses them)"),
    C("matmul.list", lambda m: m.matmul(_f(m, 2), [1.0, 2.0]), op="matmul", mention=("list",)),
    C("cat.tensor_not_seq", lambda m: m.cat(_f(m, 2)), op="cat", mention=("tensor",)),
    C("reshape.float", lambda m: _f(m, 2, 3).reshape(2.0, 3), op="reshape", mention=("float",)),
    C("view.str", lambda m: _f(m, 6).view("a"), op="view", mention=("str",)),
    C("zeros.float", lambda m: m.zeros(2.5), op="zeros", mention=("float",)),
    C("tensor.ragged", lambda m: m.tensor([[1.0, 2.0], [3.0]]), op="tensor", mention=("sequence",)),
    C("tensor.str", lambda m: m.tensor("abc"), op="tensor", mention=("str",)),
    C("linear.list", lambda m: m.nn.functional.linear([1.0, 2.0], _f(m, 3, 2)), op="linear", mention=("list",)),
    C("Linear.list", lambda m: m.nn.Linear(2, 3)([1.0, 2.0]), op="linear", mention=("list",)),
    C("relu.list", lambda m: m.nn.functional.relu([1.0, -1.0]), op="relu", mention=("list",)),
    C("softmax.list", lambda m: m.softmax([1.0], 0), op="softmax", mention=("list",),
      xfail="public functions that read input.dim()/._data before dispatch raise AttributeError"),
    C("where.scalar_ok", lambda m: m.where(_f(m, 3) > 0, 1.0, 0.0)),
    C("item.multi", lambda m: _f(m, 2).item(), op="item", mention=("2",)),
    C("float.multi", lambda m: float(_f(m, 2)), op="scalar", mention=("2",)),
    C("bool.multi", lambda m: bool(_f(m, 2)), op="Boolean", mention=("ambiguous",)),
    C("int.multi", lambda m: int(_f(m, 2)), op="scalar", mention=("2",)),
    C("to.bad_dtype", lambda m: _f(m, 2).to("float33"), op="device", mention=("float33",)),
    C("numpy.requires_grad", lambda m: m.ones(2, requires_grad=True).numpy(), op="numpy",
      mention=("requires grad",)),
    C("backward.non_scalar", lambda m: (m.ones(2, requires_grad=True) * 2).backward(), op="grad",
      mention=("scalar",)),
    C("backward.no_grad", lambda m: m.ones(2).sum().backward(), op="grad", mention=("grad_fn",)),
)


# ----------------------------------------------------------------------------- silent-answer probes

def _backward_twice(m):
    x = m.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()
    return x.grad


def _grad_unused(m):
    x = m.ones(2, requires_grad=True)
    z = m.ones(2, requires_grad=True)
    return m.autograd.grad((x * 2).sum(), z)


def _leaf_inplace(m):
    return m.ones(2, requires_grad=True).add_(1)


cases(
    C("sub.int_minus_bool", lambda m: 1 - m.ones(2, dtype=m.bool), op="sub", mention=("bool",)),
    C("sub.bool_minus_int", lambda m: m.ones(2, dtype=m.bool) - 1, op="sub", mention=("bool",)),
    C("pow.int_neg_scalar", lambda m: _i(m, 2, 3) ** -1, op="pow", mention=("negative",)),
    C("pow.int_neg_tensor", lambda m: m.pow(_i(m, 2, 3), _i(m, 1, -1)), op="pow", mention=("negative",)),
    C("pow.int_pos_ok", lambda m: _i(m, 2, 3) ** 2),
    C("mean.empty_all_ok", lambda m: m.zeros(0).mean()),
    C("prod.empty_all_ok", lambda m: m.zeros(0).prod()),
    C("logsumexp.empty_all_ok", lambda m: m.zeros(0).logsumexp(0)),
    C("softmax.empty_ok", lambda m: m.zeros(0).softmax(0)),
    C("cumsum.empty_ok", lambda m: m.zeros(0, 2).cumsum(0)),
    C("median.empty_all_ok", lambda m: m.zeros(0).median()),
    C("topk.empty_k0_ok", lambda m: m.zeros(0).topk(0)),
    C("reshape.empty_ambiguous", lambda m: m.zeros(0, 2).reshape(-1, 0), op="reshape", mention=("-1",)),
    C("view.empty_ok", lambda m: m.zeros(0, 2).view(-1)),
    C("index_add.index_neg", lambda m: m.zeros(3).index_add(0, _i(m, -1), _f(m, 1)), op="index_add",
      mention=("-1",)),
    C("scatter_add.index_neg", lambda m: m.zeros(3).scatter_add(0, _i(m, -1), _f(m, 1)), op="scatter_add",
      mention=("-1",)),
    C("index_put.neg_ok", lambda m: _f(m, 3).index_put_((_i(m, -1),), m.tensor(9.0))),
    C("setitem.neg_int_ok", lambda m: _setitem(_f(m, 3), -1, 9.0)),
    C("gather.dim_neg", lambda m: m.gather(_f(m, 2, 3), -3, _i(m, 0).reshape(1, 1)), op="gather", mention=("-3",)),
    C("cat.dim_neg", lambda m: m.cat([_f(m, 2, 3), _f(m, 2, 3)], dim=-3), op="cat", mention=("-3",)),
    C("select.0d", lambda m: _f(m).select(0, 0), op="select", mention=("0-dim",)),
    C("unbind.dim", lambda m: _f(m, 2, 3).unbind(2), op="unbind", mention=("2",)),
    C("diag.3d", lambda m: m.diag(_f(m, 2, 2, 2)), op="diag", mention=("3",)),
    C("t.3d", lambda m: _f(m, 2, 2, 2).t(), op="t()", mention=("3",)),
    C("expand.neg2", lambda m: _f(m, 1).expand(-2), op="expand", mention=("-2",)),
    C("split.size0", lambda m: _f(m, 4).split(0), op="split", mention=("0",)),
    C("repeat_interleave.neg", lambda m: _f(m, 2).repeat_interleave(-1), op="repeat", mention=("-1",)),
    C("full.float_into_int", lambda m: m.full((2,), 1.5, dtype=m.int64)),
    C("masked_select.bcast", lambda m: m.masked_select(_f(m, 3), _f(m, 2) > 0), op="masked_select",
      mention=("3", "2")),
    # an integer mask once indexed by position (x[[1, 0, 1]]): a silent wrong answer
    C("masked_select.int_mask", lambda m: m.masked_select(_f(m, 3), _i(m, 1, 0, 1)), op="masked_select",
      mention=("int64",)),
    C("masked_scatter.int_mask", lambda m: _f(m, 3).masked_scatter(_i(m, 0, 1, 2), _f(m, 3)),
      op="masked_scatter", mention=("int64",)),
    C("cross_entropy.weight_size", lambda m: m.nn.functional.cross_entropy(_f(m, 2, 3), _i(m, 0, 1),
                                                                            weight=m.ones(4)),
      op=("cross_entropy", "nll_loss"), mention=("4", "3")),
    C("nll_loss.target_shape_3d", lambda m: m.nn.functional.nll_loss(_f(m, 2, 3, 4), _i(m, 0, 1)),
      op="nll_loss", mention=("[2]",)),
    C("linear.int_input", lambda m: m.nn.Linear(3, 2)(_i(m, 1, 2, 3)), op="linear", mention=("int64", "float32")),
    C("MaxPool2d.2d_input", lambda m: m.nn.MaxPool2d(2)(_f(m, 4, 4)), op="max_pool2d", mention=("2",)),
    C("requires_grad.bool", lambda m: m.ones(2, dtype=m.bool).requires_grad_(), op="floating point",
      mention=("bool",)),
    C("inplace.leaf", _leaf_inplace, op="leaf", mention=("in-place",)),
    C("backward.twice", _backward_twice, op="backward", mention=("retain_graph",)),
    C("grad.unused", _grad_unused, op="graph", mention=("not have been used",)),
    C("bitwise_and.float_scalar", lambda m: _i(m, 1, 2) & 1.5, op="bitwise_and", mention=("float",)),
    C("remainder.float_zero_ok", lambda m: _f(m, 2) % 0),
    C("floor_divide.float_zero_ok", lambda m: _f(m, 2) // 0),
    C("div.int_zero_ok", lambda m: _i(m, 1, 2) / 0),
    C("div.floor_int_zero", lambda m: m.div(_i(m, 1, 2), 0, rounding_mode="floor"), op="div", mention=("zero",)),
)


cases(
    C("sub_.bool", lambda m: m.ones(2, dtype=m.bool).sub_(m.ones(2, dtype=m.bool)), op="sub", mention=("bool",)),
    C("isub.bool_int", lambda m: _isub(m.ones(2, dtype=m.bool), 1), op="sub", mention=("bool",)),
    C("add_.view_bcast_ok", lambda m: _f(m, 2, 3)[0].add_(_f(m, 3))),
    C("add_.expanded_self", lambda m: _f(m, 1).expand(3).add_(1.0), op="add_", mention=("memory",)),
    C("view.expanded", lambda m: _f(m, 3, 1).expand(3, 2).view(6), op="view", mention=("stride",)),
    C("Conv1d.forward", lambda m: m.nn.Conv1d(2, 4, 3)(_f(m, 1, 3, 5)), op="conv1d", mention=("2", "3")),
    C("LSTM.input_size", lambda m: m.nn.LSTM(3, 4)(_f(m, 5, 1, 2)), op="input", mention=("3", "2")),
    C("GRU.input_size", lambda m: m.nn.GRU(3, 4)(_f(m, 5, 1, 2)), op="input", mention=("3", "2")),
    C("Embedding.float", lambda m: m.nn.Embedding(4, 3)(_f(m, 2)), op="embedding", mention=("float",)),
    C("GroupNorm.forward", lambda m: m.nn.GroupNorm(2, 4)(_f(m, 2, 6, 3)), op="group_norm", mention=("6",)),
    C("MultiheadAttention.embed", lambda m: m.nn.MultiheadAttention(4, 2)(_f(m, 3, 1, 5), _f(m, 3, 1, 5),
                                                                            _f(m, 3, 1, 5)),
      op="embed_dim", mention=("4", "5")),
    C("Unflatten.forward", lambda m: m.nn.Unflatten(1, (2, 2))(_f(m, 2, 6)), op="unflatten", mention=("6",)),
    C("LayerNorm.ok", lambda m: m.nn.LayerNorm(3)(_f(m, 2, 3)), vals=False),
    C("chunk.empty_ok", lambda m: m.zeros(0, 2).chunk(3)),
    C("split.empty_ok", lambda m: m.zeros(0, 2).split(2)),
    C("as_strided.oob", lambda m: _f(m, 4).as_strided((3, 3), (1, 1)), op="as_strided", mention=("[3, 3]", "[1, 1]")),
    C("as_strided.ok", lambda m: _f(m, 5).as_strided((3, 3), (1, 1))),
    C("scatter.mixed_dtype", lambda m: m.zeros(3).scatter(0, _i(m, 0), _f(m, 1, dtype=m.float64)), op="scatter",
      mention=("float32", "float64")),
    C("index_put_.mixed_dtype", lambda m: m.zeros(3).index_put_((_i(m, 0),), _f(m, 1, dtype=m.float64)),
      op="index_put", mention=("float32", "float64")),
    C("setitem.mixed_dtype", lambda m: _setitem(m.zeros(3), _i(m, 0), _f(m, 1, dtype=m.float64)),
      op="index_put", mention=("float32", "float64")),
    C("setitem.slice_mixed_dtype_ok", lambda m: _setitem(m.zeros(3), slice(0, 2), _f(m, 2, dtype=m.float64))),
    C("setitem.mask_scalar_mixed_ok", lambda m: _setitem(m.zeros(3), _f(m, 3) > 0, m.tensor(2.0, dtype=m.float64))),
    C("conv2d.zero_out_channels", lambda m: m.nn.functional.conv2d(_f(m, 1, 1, 4, 4), m.zeros(0, 1, 3, 3)),
      op="conv2d", mention=("[0, 1, 3, 3]",)),
    C("Linear.int_weight_ok", lambda m: m.nn.Linear(3, 2)(_f(m, 4, 3)), vals=False),
)


def _isub(a, b):
    a -= b
    return a


cases(
    C("std.empty_ok", lambda m: m.zeros(0).std()),
    C("var.empty_dim_ok", lambda m: m.zeros(0, 3).var(0)),
    C("argmax.empty_dim", lambda m: m.zeros(0, 2).argmax(0), op="argmax", mention=("0",)),
    C("logsumexp.empty_dim_ok", lambda m: m.zeros(2, 0).logsumexp(1)),
    C("softmax.empty_dim_ok", lambda m: m.zeros(2, 0).softmax(1)),
    C("matmul.empty_inner_ok", lambda m: m.zeros(2, 0) @ m.zeros(0, 3)),
    C("matmul.empty_outer_ok", lambda m: m.zeros(0, 2) @ m.zeros(2, 3)),
    C("sort.empty_ok", lambda m: m.zeros(0).sort()),
    C("norm.empty_ok", lambda m: m.zeros(0).norm()),
    C("cumprod.empty_ok", lambda m: m.zeros(0).cumprod(0)),
    C("topk.empty", lambda m: m.zeros(0).topk(1), op="topk", mention=("1",)),
    C("cat.empty_mismatch", lambda m: m.cat([m.zeros(0, 2), m.zeros(0, 3)]), op="cat", mention=("2", "3")),
    C("cross_entropy.empty_ok", lambda m: m.nn.functional.cross_entropy(m.zeros(0, 3), _i(m, 0)[:0])),
    C("layer_norm.empty_ok", lambda m: m.nn.functional.layer_norm(m.zeros(0, 3), (3,))),
    C("mean.empty_dim_keep_ok", lambda m: m.zeros(2, 0).mean(1, keepdim=True)),
    C("prod.int_empty_ok", lambda m: _i(m, 1)[:0].prod()),
    C("sum.bool_ok", lambda m: (_f(m, 3) > 0).sum()),
)


def _leaf_view_inplace(m):
    x = m.ones(2, requires_grad=True)
    return x[0].add_(1)


def _saved_modified(m):
    x = m.ones(2, requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.sum().backward()
    return x.grad


def _saved_modified_ok(m):
    x = m.ones(2, requires_grad=True)
    y = x * 2  # mul by a constant saves nothing of y
    y.add_(1)
    y.sum().backward()
    return x.grad


cases(
    C("inplace.leaf_view", _leaf_view_inplace, op="leaf", mention=("in-place",)),
    C("inplace.saved_modified", _saved_modified, op="inplace", mention=("version",)),
    C("inplace.unsaved_ok", _saved_modified_ok),
    C("sigmoid_.int", lambda m: _i(m, 1, 2).sigmoid_(), op="sigmoid_", mention=("float32", "int64")),
    C("sqrt_.int", lambda m: _i(m, 1, 4).sqrt_(), op="sqrt_", mention=("float32", "int64")),
    C("abs_.int_ok", lambda m: _i(m, -1, 4).abs_()),
    C("relu_.int_ok", lambda m: _i(m, -1, 4).relu_()),
    C("clamp_.float_into_int", lambda m: _i(m, -1, 4).clamp_(0.5), op="clamp_", mention=("float32", "int64")),
    C("fill_.nonscalar", lambda m: _f(m, 3).fill_(_f(m, 2)), op="fill_", mention=("1",)),
    C("zero_.ok", lambda m: _f(m, 3).zero_()),
)


cases(
    C("tensor.overflow_int64", lambda m: m.tensor([2 ** 63]), op="tensor", mention=("overflow",)),
    C("tensor.uint8_neg", lambda m: m.tensor([-1], dtype=m.uint8), op="tensor", mention=("uint8",)),
    C("full.uint8_overflow", lambda m: m.full((2,), 300, dtype=m.uint8), op="full", mention=("300",)),
    C("fill_.int8_overflow", lambda m: m.zeros(2, dtype=m.int8).fill_(300), op=("fill_", "fill"), mention=("300",)),
    C("add.uint8_wrap_ok", lambda m: m.zeros(2, dtype=m.uint8) - 1),
    C("to.uint8_wrap_ok", lambda m: _i(m, 300, 5).to(m.uint8)),
    C("add.int_scalar_overflow", lambda m: _i(m, 1) + 2 ** 63, op="add", mention=("overflow",)),
    C("mul.int8_scalar_overflow", lambda m: m.ones(2, dtype=m.int8) * 1000, op="mul", mention=("1000",)),
    C("tensor.bool_mix_ok", lambda m: m.tensor([True, 2])),
    C("add_.int8_scalar_wrap_ok", lambda m: m.ones(2, dtype=m.int8).add_(1000)),
    C("mul_.int64_scalar_wrap_ok", lambda m: _i(m, 1, 2).mul_(2 ** 63)),
    C("sub.uint8_scalar_wrap_ok", lambda m: m.ones(2, dtype=m.uint8) - 300),
)


# ----------------------------------------------------------------------------- layers, optimizers, data


def _params(m):
    return [m.nn.Parameter(m.ones(2))]


cases(
    C("Parameter.int", lambda m: m.nn.Parameter(_i(m, 1, 2)), op="floating point", mention=("int64",)),
    C("Conv2d.5d", lambda m: m.nn.Conv2d(1, 1, 3)(_f(m, 1, 1, 1, 4, 4)), op="conv2d", mention=("[1, 1, 1, 4, 4]",)),
    C("Linear.0d", lambda m: m.nn.Linear(1, 2)(_f(m)), op="linear", mention=("input []",)),
    C("CrossEntropyLoss.target_2d", lambda m: m.nn.CrossEntropyLoss()(_f(m, 2, 3), _i(m, 0, 1, 1, 0).reshape(2, 2)),
      op="cross_entropy", mention=("[2, 2]",)),
    C("MSELoss.reduction", lambda m: m.nn.MSELoss(reduction="avg")(_f(m, 2), _f(m, 2)), op="reduction",
      mention=("avg",)),
    C("SGD.lr", lambda m: m.optim.SGD(_params(m), lr=-1.0), op="learning rate", mention=("-1.0",)),
    C("SGD.momentum", lambda m: m.optim.SGD(_params(m), lr=0.1, momentum=-0.5), op="momentum", mention=("-0.5",)),
    C("SGD.empty", lambda m: m.optim.SGD([], lr=0.1), op="parameter list", mention=("empty",)),
    C("SGD.nesterov", lambda m: m.optim.SGD(_params(m), lr=0.1, nesterov=True), op="nesterov",
      mention=("momentum",)),
    C("Adam.betas", lambda m: m.optim.Adam(_params(m), betas=(1.5, 0.9)), op="beta", mention=("1.5",)),
    C("Adam.eps", lambda m: m.optim.Adam(_params(m), eps=-1.0), op="epsilon", mention=("-1.0",)),
    C("Adam.weight_decay", lambda m: m.optim.Adam(_params(m), weight_decay=-1.0), op="weight_decay",
      mention=("-1.0",)),
    C("SGD.tensor_params", lambda m: m.optim.SGD(m.ones(2, requires_grad=True), lr=0.1), op="iterable",
      mention=("Tensor",)),
    C("DataLoader.batch_size0", lambda m: m.utils.data.DataLoader(list(range(4)), batch_size=0), op="batch_size",
      mention=("0",)),
    C("TensorDataset.sizes", lambda m: m.utils.data.TensorDataset(m.zeros(3), m.zeros(4)), op="size",
      mention=("mismatch",), xfail="PyTorch asserts (AssertionError); ember raises ValueError naming the sizes"),
)


# ----------------------------------------------------------------------------- generated from the op_db


_TIES = {"topk", "sort", "argsort", "max_dim", "min_dim", "kthvalue", "argmax", "argmin", "median"}
_KNOWN_INT = {  # integer inputs PyTorch accepts and ember refuses / types differently (documented gaps)
    "conv2d": "ember's conv kernels are floating point only",
    "conv_transpose2d": "ember's conv kernels are floating point only",
    "avg_pool2d": "ember's pooling kernels are floating point only",
    "addmm": "addmm with float alpha/beta on integer matrices: ember promotes to float, PyTorch keeps int64",
}


_KNOWN_EMPTY = {  # PyTorch's type here is incidental (an internal select() on the empty weight)
    "batch_norm": "empty batch_norm parameters: ember's RuntimeError names the size; PyTorch fails in select()",
    "batch_norm_eval": "empty batch_norm parameters: ember's RuntimeError names the size; PyTorch fails in select()",
    "multi_margin_loss": "the mean over no sample: PyTorch returns uninitialised memory, ember nan",
    "multilabel_margin_loss": "the mean over no sample: PyTorch returns uninitialised memory, ember nan",
}


def _op_db_cases():
    """Bad-input variants of every op_db sample that has a PyTorch twin: a dim out of range, a
    non-broadcastable second operand (elementwise ops), integer inputs where the sample has floats."""
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    import op_db
    from ember import _dispatch as D

    def make(entry, sample, args, kwargs):
        def run(m, torch_side=False):
            ins = [m.from_numpy(np.array(a, copy=True)) if isinstance(a, np.ndarray) else a for a in args]
            f = entry.torch_call() if torch_side else entry.fn
            return f(m, *ins, **kwargs)
        return (lambda m: run(m)), (lambda m: run(m, True))

    out = []
    for e in op_db.ENTRIES:
        if not e.oracle or e.op not in D.REGISTRY:
            continue
        smp = op_db.sample_list(e)
        if not smp:
            continue
        sm = smp[0]
        arrs = [i for i, a in enumerate(sm.args) if isinstance(a, np.ndarray)]
        names = (e.op, e.name.split("_")[0], e.name) + (("index",) if e.name.startswith("getitem") else ())
        if isinstance(sm.kwargs.get("dim"), int) and arrs:
            kw = dict(sm.kwargs, dim=sm.args[arrs[0]].ndim + 2)
            fn, tfn = make(e, sm, sm.args, kw)
            out.append(C(f"db.{e.name}.dim_oob", fn, tfn=tfn, op=names + ("dim",), mention=(str(kw["dim"]),)))
        fam = D.REGISTRY[e.op].family
        if fam == "elementwise" and len(arrs) >= 2 and sm.args[arrs[1]].ndim >= 1:
            args = list(sm.args)
            b = args[arrs[1]]
            args[arrs[1]] = np.ones(b.shape[:-1] + (b.shape[-1] + 5,), b.dtype)
            fn, tfn = make(e, sm, args, sm.kwargs)
            out.append(C(f"db.{e.name}.bcast", fn, tfn=tfn, op=names, mention=(str(b.shape[-1] + 5),)))
        fl = [i for i in arrs if sm.args[i].dtype.kind == "f"]
        if fl:
            args = [np.array(np.round(np.nan_to_num(a, nan=0.0, posinf=3.0, neginf=-3.0)), dtype=np.int64) if i in fl else a for i, a in enumerate(sm.args)]
            fn, tfn = make(e, sm, args, sm.kwargs)
            out.append(C(f"db.{e.name}.int", fn, tfn=tfn, op=names, mention=("int",),
                         vals=e.op not in _TIES, xfail=_KNOWN_INT.get(e.name)))
        if arrs and all(sm.args[i].ndim >= 1 for i in arrs):
            args = [np.zeros((0,) + a.shape[1:], a.dtype) if i in arrs else a for i, a in enumerate(sm.args)]
            fn, tfn = make(e, sm, args, sm.kwargs)
            out.append(C(f"db.{e.name}.empty", fn, tfn=tfn, op=names, vals=e.op not in _TIES,
                         xfail=_KNOWN_EMPTY.get(e.name)))
        if len(fl) >= 2:
            args = [a.astype(np.float32 if i == fl[0] else np.float64) if i in fl else a
                    for i, a in enumerate(sm.args)]
            fn, tfn = make(e, sm, args, sm.kwargs)
            out.append(C(f"db.{e.name}.mixed_float", fn, tfn=tfn, op=names, mention=("float32", "float64"),
                         vals=False))
    return out


cases(*_op_db_cases())


# ----------------------------------------------------------------------------- the checks

def _run(fn, m):
    try:
        return fn(m), None
    except Exception as e:  # noqa: BLE001 - the audit classifies every exception
        return None, e


_NP_DIR = os.path.dirname(np.__file__)


def _leak(e):
    """Why ``e`` looks like a bare NumPy error (or '' when it does not)."""
    if type(e).__module__.startswith("numpy"):
        return f"NumPy exception type {type(e).__module__}.{type(e).__name__}"
    tb = traceback.extract_tb(e.__traceback__)
    if tb and tb[-1].filename.startswith(_NP_DIR):
        return f"innermost frame inside NumPy ({tb[-1].filename}:{tb[-1].lineno})"
    return ""


def _flat(out):
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r.extend(_flat(o))
        return r
    return [out]


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(reason=c.xfail, strict=True))
                                  if c.xfail else c for c in CASES], ids=[c.id for c in CASES])
def test_error_audit(case, torch):
    tout, terr = _run(case.tfn or case.fn, torch)
    eout, eerr = _run(case.fn, ember)
    if terr is None:
        assert eerr is None, (f"ember raised where PyTorch computes: {type(eerr).__name__}: {eerr}\n"
                              + "".join(traceback.format_exception(eerr)))
        for o, t in zip(_flat(eout), _flat(tout), strict=True):
            if isinstance(t, torch.Tensor):
                assert isinstance(o, ember.Tensor), type(o)
                assert tuple(o.shape) == tuple(t.shape)
                assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
                if case.vals:
                    np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6)
            elif case.vals:
                assert o == t
        return
    assert eerr is not None, (f"silent answer where PyTorch raises {type(terr).__name__}: {terr}\n"
                              f"ember returned {eout!r}")
    leak = _leak(eerr)
    assert not leak, f"{leak}: {type(eerr).__name__}: {eerr}"
    # PyTorch's NotImplementedError for a dtype without a kernel is a RuntimeError subclass
    want = RuntimeError if isinstance(terr, NotImplementedError) else type(terr)
    if type(terr).__name__ == "LinAlgError":
        want = RuntimeError
    assert isinstance(eerr, want), (f"exception type {type(eerr).__name__} where PyTorch raises "
                                    f"{type(terr).__name__}\nember: {eerr}\ntorch: {terr}")
    msg = str(eerr).lower()
    names = case.op or case.id.split(".")[0]
    names = (names,) if isinstance(names, str) else names
    assert any(n.lower() in msg for n in names), f"message does not name {names}: {eerr}\n(torch: {terr})"
    missing = [s for s in case.mention if s.lower() not in msg]
    assert not missing, f"message misses {missing}: {eerr}\n(torch: {terr})"


def test_audit_size():
    assert len(CASES) >= 300
    assert len({c.id for c in CASES}) == len(CASES)


# ----------------------------------------------------------------------------- the shared mechanism


def _probe(impl):
    from ember import _dispatch as D
    return D.Op("audit_probe", impl)  # not registered: a throwaway primitive


def _raise_own(xp, a):
    raise RuntimeError("something is off")


@pytest.mark.parametrize("slow", [False, True])
def test_dispatch_wraps_numpy_errors(slow):
    from ember import _dispatch as D
    cases_ = [
        (lambda xp, a: np.broadcast_to(a, (5,)), RuntimeError, ValueError),      # NumPy shape error
        (lambda xp, a: np.sum(a, axis=3), IndexError, np.exceptions.AxisError),  # NumPy axis error
        (lambda xp, a: a[7], IndexError, IndexError),                            # NumPy index error
    ]

    class _Listener:  # forces the slow path
        def on_op(self, op, args, params):
            return None

        def on_node(self, node):
            return None

    lis = _Listener()
    if slow:
        D.add_listener(lis)
    try:
        for impl, cls, cause in cases_:
            with pytest.raises(cls) as info:
                D.dispatch(_probe(impl), (ember.ones(3),))
            msg = str(info.value)
            assert msg.startswith("audit_probe: ") and "Tensor[3] float32" in msg, msg
            assert isinstance(info.value.__cause__, cause)  # NumPy's original stays for debugging
            assert not _leak(info.value)
        with pytest.raises(RuntimeError, match="^audit_probe: something is off$") as info:
            D.dispatch(_probe(_raise_own), (ember.ones(3),))
        assert info.value.__cause__ is None
    finally:
        if slow:
            D.remove_listener(lis)
