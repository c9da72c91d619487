"""Matrix products: matmul (and mm/bmm/mv/dot), linear, einsum, and the composites built on them."""
import string

import numpy as np

from .. import _dispatch as D
from .._dispatch import defop, dispatch
from . import _util as U
from .shape import sum_to
from .elementwise import _cj  # conj of a complex operand (vjp rules: g times the conjugate)

LIN = "linalg"


def _mm_shapes_error(a, b):
    def s(x):
        return "x".join(str(v) for v in x.shape)
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s(a)} and {s(b)})")


def _matmul_impl(xp, a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D "
                           f"and {b.ndim}D")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{U.dt.FROM_NP[a.dtype].name} != {U.dt.FROM_NP[b.dtype].name}")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        if a.ndim <= 2 and b.ndim <= 2:
            if b.ndim == 1 and a.ndim == 2:
                raise RuntimeError(f"size mismatch, got input ({a.shape[0]}x{a.shape[1]}), vec ({b.shape[0]})")
            raise _mm_shapes_error(a if a.ndim == 2 else a.reshape(1, -1), b if b.ndim == 2 else b.reshape(-1, 1))
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{', '.join(map(str, b.shape[:-2]))}, {ka}] but got: "
                           f"[{', '.join(map(str, b.shape[:-1]))}].")
    if a.dtype.itemsize == 2 and U.is_lowp(a) and a.dtype == b.dtype:
        # float16/bfloat16: float32 products and sums (BLAS), rounded once, as PyTorch's CPU kernels
        return U.lowp_f32(_matmul_impl, xp, a, b)
    try:
        if ka == 1 and a.ndim > 1 and b.ndim > 1 and a.dtype.kind in "fiu":
            # one term per entry: the broadcast product, bit for bit (BLAS took 3x longer: 74 against
            # 23 us for 800x1 @ 1x64, a one-output layer's input gradient)
            return xp.multiply(a, b)
        if b.ndim == 2 and a.ndim > 2:
            # (..., k) @ (k, n) as one 2-D product: NumPy's stacked matmul with a broadcast 2-D operand
            # loops outside BLAS (10-40x slower for a GPT block's projections)
            # (an empty k: -1 cannot be inferred from a size of 0, the rows are counted instead)
            return xp.matmul(a.reshape(-1 if ka else _prod(a.shape[:-1]), ka), b).reshape(a.shape[:-1] + (b.shape[1],))
        if a.dtype is U.BF16:  # float32 products and sums (BLAS), rounded once, as PyTorch's CPU kernels
            return U.bf16_f32(xp.matmul, a, b)
        return xp.matmul(a, b)
    except ValueError:
        raise RuntimeError(f"matmul: batch dimensions {list(a.shape[:-2])} and {list(b.shape[:-2])} "
                           f"cannot be broadcast") from None


def _matmul_name(args, params):
    """The PyTorch product the call amounts to: dot, mv, mm or bmm (PyTorch's matmul reshapes
    batched operands around mm/bmm, ember multiplies them in one node)."""
    na, nb = (a._data.ndim if isinstance(a, D.Tensor) else np.ndim(a) for a in args)
    if nb == 1:
        return "DotBackward0" if na == 1 else "MvBackward0"
    if na >= 3 and nb >= 3:
        return "BmmBackward0"
    return "MvBackward0" if na == 1 and nb >= 3 else "MmBackward0"


matmul_op = defop("matmul", _matmul_impl, save=("inputs",), family=LIN, node_name=_matmul_name)


@matmul_op.def_vjp
def _(ctx, g):
    a, b = ctx.inputs
    a, b = _cj(a), _cj(b)
    n = ctx.needs
    da, db = a.dim(), b.dim()
    if db == 1 and da <= 2:
        if da == 1:  # dot: g is 0-dim
            return (g * b if n[0] else None), (g * a if n[1] else None)
        # mv: outer(g, b) and a^T g
        return (g.unsqueeze(-1) * b if n[0] else None), (matmul(a.mT, g) if n[1] else None)
    if da == 1 and db == 2:  # vector @ matrix: b g and outer(a, g)
        return (matmul(b, g) if n[0] else None), (a.unsqueeze(-1) * g if n[1] else None)
    a2 = a.unsqueeze(0) if da == 1 else a
    b2 = b.unsqueeze(-1) if db == 1 else b
    g2 = g
    if da == 1:
        g2 = g2.unsqueeze(-2)
    if db == 1:
        g2 = g2.unsqueeze(-1)
    ga = gb = None
    if n[0]:
        ga = sum_to(matmul(g2, b2.mT), a2.shape)
        if da == 1:
            ga = ga.squeeze(0)
    if n[1]:
        gb = sum_to(matmul(a2.mT, g2), b2.shape)
        if db == 1:
            gb = gb.squeeze(-1)
    return ga, gb


@matmul_op.def_jvp
def _(ctx, ta, tb):
    a, b = ctx.inputs
    r = None if ta is None else matmul(ta, b)
    if tb is not None:
        s = matmul(a, tb)
        r = s if r is None else r + s
    return r


def matmul(input, other, *, out=None):
    return U.write_out(dispatch(matmul_op, (input, other)), out)


def mm(input, mat2):
    if input.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.dim()}D and {mat2.dim()}D")
    return dispatch(matmul_op, (input, mat2))


def bmm(input, mat2):
    if input.dim() != 3 or mat2.dim() != 3:
        raise RuntimeError(f"bmm: batch{1 if input.dim() != 3 else 2} must be a 3D tensor (got "
                           f"{input.dim() if input.dim() != 3 else mat2.dim()}D)")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes differ: {input.shape[0]} and {mat2.shape[0]}")
    return dispatch(matmul_op, (input, mat2))


def mv(input, vec):
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"mv: vector + matrix @ vector expected, got {input.dim()}, {vec.dim()}")
    return dispatch(matmul_op, (input, vec))


def dot(input, other):
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"dot: 1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"dot: inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{other.shape[0]}] to have the same number of elements, but got "
                           f"{input.shape[0]} and {other.shape[0]} elements respectively")
    return dispatch(matmul_op, (input, other))


def inner(input, other):
    """The sum over the last dims of both (a 0-dim operand scales the other), as torch.inner."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.dim() == 1 and other.dim() == 1:
        return dot(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, dims=([input.dim() - 1], [other.dim() - 1]))


def vdot(input, other):
    """dot(conj(input), other): the conjugate of the first vector (plain dot for real ones)."""
    if input._data.dtype.kind == "c":
        from .complex import conj_physical
        input = conj_physical(input)
    return dot(input, other)


def outer(input, vec2):
    return input.unsqueeze(-1) * vec2.unsqueeze(0)


ger = outer


def _addmm_impl(xp, c, a, b, beta=1, alpha=1):
    p = _matmul_impl(xp, a, b)
    if alpha != 1:
        p *= alpha
    if beta != 0:  # (beta 0 ignores input, nan and inf included, as PyTorch)
        p += c if beta == 1 else c * beta
    return p


# beta * input + alpha * (mat1 @ mat2): one node, PyTorch's AddmmBackward0
addmm_op = defop("addmm", _addmm_impl, save=("inputs",), bcast=True, family=LIN)


@addmm_op.def_vjp
def _(ctx, g):
    c, a, b = ctx.inputs
    a, b = _cj(a), _cj(b)
    p = ctx.params
    beta, alpha = p.get("beta", 1), p.get("alpha", 1)
    n = ctx.needs
    ga = gb = None
    gs = g if alpha == 1 else g * _cj(alpha)  # (a complex alpha/beta: its conjugate, PyTorch's convention)
    if n[1]:
        ga = matmul(gs, b.mT)
    if n[2]:
        gb = matmul(a.mT, gs)
    return ((g if beta == 1 else g * _cj(beta)) if n[0] else None), ga, gb


@addmm_op.def_jvp
def _(ctx, tc, ta, tb):
    c, a, b = ctx.inputs
    p = ctx.params
    beta, alpha = p.get("beta", 1), p.get("alpha", 1)
    r = None if ta is None else matmul(ta, b)
    if tb is not None:
        s = matmul(a, tb)
        r = s if r is None else r + s
    if r is not None and alpha != 1:
        r = r * alpha
    if tc is not None and beta != 0:
        tc = tc if beta == 1 else tc * beta
        r = tc if r is None else r + tc
    return r


@addmm_op.def_batch
def _(op, vals, bd, params, size):
    """vmap: the batched product (matmul broadcasts an unbatched operand), then the input."""
    from ._batching import _materialize, _pad_to
    c, a, b = vals
    beta, alpha = params.get("beta", 1), params.get("alpha", 1)
    r = matmul(a, b)
    if alpha != 1:
        r = r * alpha
    if beta != 0:
        if bd[0]:
            c = _pad_to(c, 2)
        r = r + (c if beta == 1 else c * beta)
    elif not (bd[1] or bd[2]):  # only the ignored input was batched
        r = _materialize(r, size)
    return r, True


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    if U.is_tensor(input) and input.dtype != mat1.dtype:
        raise RuntimeError(f"addmm: self and mat1 must have the same dtype, but got {input.dtype} and {mat1.dtype}")
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"addmm: expected 2D tensors for mat1 and mat2, got {mat1.dim()}D and {mat2.dim()}D")
    if not U.is_tensor(input):
        from .._creation import tensor
        input = tensor(input, dtype=mat1.dtype)
    out = (mat1.shape[0], mat2.shape[1])
    try:
        ok = np.broadcast_shapes(tuple(input.shape), out) == out
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"addmm: the input of shape {list(input.shape)} does not broadcast to the "
                           f"product's shape {list(out)} (mat1 {list(mat1.shape)} @ mat2 {list(mat2.shape)})")
    p = {}
    if beta != 1:
        p["beta"] = beta
    if alpha != 1:
        p["alpha"] = alpha
    return dispatch(addmm_op, (input, mat1, mat2), p)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    p = mv(mat, vec)
    if alpha != 1:
        p = p * alpha
    return p + (input if beta == 1 else input * beta) if beta != 0 else p


def _lowp_fused(f, input, batch1, batch2, beta, alpha):
    """float16/bfloat16 products, scaling and sum in float32, rounded once (PyTorch's CPU kernels)."""
    d = batch1.dtype
    up = (lambda t: t.float() if U.is_tensor(t) and t.dtype is d else t)
    return f(up(input), up(batch1), up(batch2), beta=beta, alpha=alpha).to(d)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    if U.is_lowp(batch1._data) and batch2.dtype is batch1.dtype:
        return _lowp_fused(baddbmm, input, batch1, batch2, beta, alpha)
    p = bmm(batch1, batch2)
    if alpha != 1:
        p = p * alpha
    return p + (input if beta == 1 else input * beta) if beta != 0 else p


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    if U.is_lowp(batch1._data) and batch2.dtype is batch1.dtype and U.is_tensor(input) and \
            input.dtype is batch1.dtype and batch1.dim() == 3 and batch2.dim() == 3:
        # PyTorch's CPU kernel: the input scaled, then one float32 product added per batch and
        # rounded to float16/bfloat16 after each
        d = batch1.dtype
        r = input.expand(batch1.shape[1], batch2.shape[2])
        r = r * 0 if beta == 0 else (r * beta if beta != 1 else r)
        for k in range(batch1.shape[0]):
            r = (r.float() + alpha * (batch1[k].float() @ batch2[k].float())).to(d)
        return r if batch1.shape[0] else r.clone()
    p = bmm(batch1, batch2).sum(0)
    if alpha != 1:
        p = p * alpha
    return p + (input if beta == 1 else input * beta) if beta != 0 else p


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    p = outer(vec1, vec2)
    if alpha != 1:
        p = p * alpha
    return p + (input if beta == 1 else input * beta) if beta != 0 else p


# ----------------------------------------------------------------------------- linear


def _linear_impl(xp, x, w, b=None):
    if x.dtype is not w.dtype:
        raise RuntimeError(f"linear: expected input and weight to have the same dtype, but got "
                           f"{U.dt.FROM_NP[x.dtype].name} and {U.dt.FROM_NP[w.dtype].name}")
    if x.ndim == 0 or w.ndim not in (1, 2):
        raise RuntimeError(f"linear: expected an input of at least 1 dimension and a 1-D or 2-D weight, got "
                           f"input {list(x.shape)} and weight {list(w.shape)}")
    if x.shape[-1] != w.shape[-1]:
        lead = int(np.prod(x.shape[:-1])) if x.ndim > 1 else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({lead}x{x.shape[-1]} and "
                           f"{w.shape[1]}x{w.shape[0]})")
    if U.is_lowp(x):  # float32 products, sums and bias, rounded once, as PyTorch's CPU addmm
        return U.lowp_f32(_linear_impl, xp, x, w, b)
    if x.ndim > 2:  # one 2-D GEMM (a strided input is copied once: NumPy would loop over small GEMMs)
        k = x.shape[-1]
        y = xp.matmul(x.reshape(-1 if k else _prod(x.shape[:-1]), k), w.T).reshape(x.shape[:-1] + (w.shape[0],))
    else:
        y = xp.matmul(x, w.T)
    if b is not None:
        y += b
    return y


linear_op = defop("linear", _linear_impl, save=("inputs",), family=LIN,
                  node_name=lambda args, params: "AddmmBackward0" if len(args) == 3 else "MmBackward0")


@linear_op.def_vjp
def _(ctx, g):
    x, w, b = ctx.inputs if len(ctx.inputs) == 3 else (*ctx.inputs, None)
    x, w = _cj(x), _cj(w)
    n = ctx.needs
    gx = gw = gb = None
    if n[0]:
        gx = matmul(g, w)
    if n[1]:
        if x.dim() == 1:
            gw = outer(g, x)
        elif x.dim() == 2:
            gw = matmul(g.mT, x)
        else:
            rows = _prod(tuple(x.shape[:-1]))  # (not -1: a size-0 dim leaves -1 undetermined)
            gw = matmul(g.reshape(rows, g.shape[-1]).mT, x.reshape(rows, x.shape[-1]))
    if len(n) > 2 and n[2]:
        gb = g.sum(tuple(range(g.dim() - 1))) if g.dim() > 1 else g
    return (gx, gw, gb) if len(n) > 2 else (gx, gw)


@linear_op.def_jvp
def _(ctx, tx, tw, tb=None):
    x, w = ctx.inputs[0], ctx.inputs[1]
    r = None
    if tx is not None:
        r = matmul(tx, w.mT)
    if tw is not None:
        s = matmul(x, tw.mT)
        r = s if r is None else r + s
    if tb is not None:
        r = tb.expand(ctx.out.shape) if r is None else r + tb
    return r


def linear(input, weight, bias=None):
    if bias is None:
        return dispatch(linear_op, (input, weight))
    return dispatch(linear_op, (input, weight, bias))


def bilinear(input1, input2, weight, bias=None):
    if U.is_lowp(input1._data):  # PyTorch's two products, the first rounded to float16/bfloat16
        y = einsum("...oj,...j->...o", einsum("...i,oij->...oj", input1, weight), input2)
    else:
        y = einsum("...i,oij,...j->...o", input1, weight, input2)
    return y + bias if bias is not None else y


# ----------------------------------------------------------------------------- einsum


def _parse_einsum(eq, shapes):
    """Explicit form with '...' replaced by letters: (input subscripts, output subscripts)."""
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise RuntimeError(f"einsum(): more operands were provided than specified in the equation"
                           if len(shapes) > len(ins) else
                           "einsum(): fewer operands were provided than specified in the equation")
    used = set(c for c in eq if c.isalpha())
    spare = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in used]
    ell_n = 0
    for s, shp in zip(ins, shapes):
        if "..." in s:
            ell_n = max(ell_n, len(shp) - (len(s) - 3))
    ell = "".join(spare[:ell_n])
    new_ins = []
    for s, shp in zip(ins, shapes):
        if "..." in s:
            k = len(shp) - (len(s) - 3)
            s = s.replace("...", ell[ell_n - k:] if k else "")
        if len(s) != len(shp):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not "
                               f"match the number of dimensions ({len(shp)}) for operand "
                               f"{len(new_ins)}")
        new_ins.append(s)
    if rhs is None:
        counts = {}
        for s in new_ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    return new_ins, rhs


def _einsum_impl(xp, *arrs, eq):
    if arrs and U.is_lowp(arrs[0]):  # float32 products and sums, rounded once (NumPy has no bfloat16 einsum)
        return U.lowp_f32(lambda *a: _einsum_impl(xp, *a, eq=eq), *arrs)
    try:
        return xp.einsum(eq, *arrs, optimize=len(arrs) > 2)
    except ValueError as e:
        raise RuntimeError(f"einsum(): {e}") from None


einsum_op = defop("einsum", _einsum_impl, save=("inputs",), family=LIN)


@einsum_op.def_vjp
def _(ctx, g):
    ops = tuple(_cj(o) for o in ctx.inputs)
    ins, out = ctx.params["eq"].split("->")
    ins = ins.split(",")
    grads = []
    for i, (need, s) in enumerate(zip(ctx.needs, ins)):
        if not need:
            grads.append(None)
            continue
        grads.append(_einsum_grad(g, out, ops, ins, i))
    return tuple(grads)


def _einsum_grad(g, out, ops, ins, i):
    target = ins[i]
    shape = tuple(ops[i].shape)
    uniq = "".join(dict.fromkeys(target))  # a repeated letter (a diagonal) appears once here
    avail = set(out)
    for j, s in enumerate(ins):
        if j != i:
            avail |= set(s)
    kept = "".join(c for c in uniq if c in avail)
    sub_ins = [out] + [s for j, s in enumerate(ins) if j != i]
    args = [g] + [o for j, o in enumerate(ops) if j != i]
    r = einsum(",".join(sub_ins) + "->" + kept, *args)
    usize = tuple(shape[target.index(c)] for c in uniq)
    if kept != uniq:  # letters summed only inside operand i: broadcast back
        for k, c in enumerate(uniq):
            if c not in avail:
                r = r.unsqueeze(k)
        r = r.expand(usize)
    if uniq == target:
        return r
    # scatter onto the diagonal: letter c's stride is the sum of the strides of its positions
    from .shape import as_strided_backward_op
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    ustride = tuple(sum(strides[k] for k, ch in enumerate(target) if ch == c) for c in uniq)
    return dispatch(as_strided_backward_op, (r.contiguous(),),
                    {"shape": shape, "size": usize, "stride": ustride, "offset": 0})


@einsum_op.def_jvp
def _(ctx, *ts):
    ops = ctx.inputs
    eq = ctx.params["eq"]
    r = None
    for i, t in enumerate(ts):
        if t is None:
            continue
        args = list(ops)
        args[i] = t
        s = einsum(eq, *args)
        r = s if r is None else r + s
    return r


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ins, out = _parse_einsum(equation, [o.shape for o in operands])
    dts = {o.dtype for o in operands}
    if len(dts) > 1:
        raise RuntimeError(f"einsum(): operands do not have the same dtype: {sorted(d.name for d in dts)}")
    return dispatch(einsum_op, tuple(operands), {"eq": ",".join(ins) + "->" + out})


def tensordot(a, b, dims=2):
    if isinstance(dims, int):
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError(f"tensordot: both dimension lists should have same length, got {len(da)} and "
                           f"{len(db)}")
    da = [U.wrap_dim(d, a.dim(), "tensordot") for d in da]
    db = [U.wrap_dim(d, b.dim(), "tensordot") for d in db]
    for x, y in zip(da, db):  # a contracted dim of size 1 broadcasts against the other (PyTorch)
        sx, sy = a.shape[x], b.shape[y]
        if sx != sy:
            if sx == 1:
                b = b.sum(y, keepdim=True)
            elif sy == 1:
                a = a.sum(x, keepdim=True)
            else:
                raise RuntimeError(f"tensordot: contracted dimensions need to match, but first has size {sx} "
                                   f"in dim {x} and second has size {sy} in dim {y}")
    letters = iter(string.ascii_lowercase)
    sa = [next(letters) for _ in range(a.dim())]
    sb = [None] * b.dim()
    for x, y in zip(da, db):
        sb[y] = sa[x]
    sb = [c if c is not None else next(letters) for c in sb]
    out = [c for k, c in enumerate(sa) if k not in da] + [c for k, c in enumerate(sb) if k not in db]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


def kron(input, other):
    a = input.reshape(input.shape[0], 1, input.shape[1], 1) if input.dim() == 2 else input
    if input.dim() == 2 and other.dim() == 2:
        r = a * other.reshape(1, other.shape[0], 1, other.shape[1])
        return r.reshape(input.shape[0] * other.shape[0], input.shape[1] * other.shape[1])
    return outer(input.reshape(-1), other.reshape(-1)).reshape(-1)


def cross(input, other, dim=None):
    if input.dim() != other.dim():
        raise RuntimeError(f"cross: inputs must have the same number of dimensions, got {input.dim()} and "
                           f"{other.dim()}")
    if dim is None:
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"cross: no dimension of size 3 in input of shape {list(input.shape)}")
    d = U.wrap_dim(dim, input.dim(), "cross")
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"cross: inputs dimension {dim} must have length 3, got {list(input.shape)} and "
                           f"{list(other.shape)}")
    a0, a1, a2 = input.unbind(dim)
    b0, b1, b2 = other.unbind(dim)
    from .shape import stack
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def trace(input):
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return input.diagonal().sum()


def diag(input, diagonal=0):
    if input.dim() not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D (shape {list(input.shape)})")
    if input.dim() == 1:
        return _diag_embed(input, diagonal)
    return input.diagonal(diagonal).clone()  # a new tensor in PyTorch, unlike diagonal() (a view)


def _diag_embed(v, offset):
    from .shape import diagonal_backward_op
    n = v.shape[0] + abs(offset)
    return dispatch(diagonal_backward_op, (v,), {"shape": (n, n), "offset": offset, "dim1": 0, "dim2": 1})


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    if input.dim() == 1 and offset == 0:
        return _diag_embed(input, 0)
    from .shape import diagonal_backward_op
    n = input.shape[-1] + abs(offset)
    k = input.dim() + 1
    d1, d2 = U.wrap_dim(dim1, k, "diag_embed"), U.wrap_dim(dim2, k, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    # the new (n, n) plane sits at dims d1 and d2; the batch dims keep their order around it
    rest = iter(input.shape[:-1])
    shape = tuple(n if d in (d1, d2) else next(rest) for d in range(k))
    return dispatch(diagonal_backward_op, (input,), {"shape": shape, "offset": offset, "dim1": d1, "dim2": d2})


# ----------------------------------------------------------------------------- batching rules (vmap)

from ._batching import _pad_to, _ln, _prod, elementwise_rule  # noqa: E402


def matmul_rule(op, vals, bd, params, size):
    a, b = vals
    ba, bb = bd
    la, lb = _ln(a, ba), _ln(b, bb)
    if la == 0 or lb == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D")
    if la == 1:
        a = a.unsqueeze(-2)
    if lb == 1:
        b = b.unsqueeze(-1)
    n = max(max(la, 2), max(lb, 2))
    if ba and not bb and lb <= 2:
        # one GEMM: the batch (and a's other leading dims) fold into a's rows
        s = tuple(a.shape)
        r = dispatch(op, (a.reshape(_prod(s[:-1]), s[-1]), b), params)
        r = r.reshape(s[:-1] + (r.shape[-1],))
    else:
        if ba:
            a = _pad_to(a, n)
        if bb:
            b = _pad_to(b, n)
        if a.shape[-1] == 1:  # outer products (per-sample weight gradients): a broadcast multiply
            r = dispatch(D.REGISTRY["mul"], (a, b))
        else:
            r = dispatch(op, (a, b), params)
    if la == 1:
        r = r.squeeze(-2)
    if lb == 1:
        r = r.squeeze(-1)
    return r, True


def linear_rule(op, vals, bd, params, size):
    x, w = vals[0], vals[1]
    bias = vals[2] if len(vals) > 2 else None
    bx, bw = bd[0], bd[1]
    bb = bd[2] if len(bd) > 2 else False
    if not bw and not bb:
        if bx:  # one GEMM over the batch and the leading dims
            s = tuple(x.shape)
            r = dispatch(op, (x.reshape(_prod(s[:-1]), s[-1]),) + tuple(vals[1:]), params)
            return r.reshape(s[:-1] + (r.shape[-1],)), True
    if bw and not bx and w.dim() == 3:
        # the same input to every member (ensembles): one GEMM against all members' rows stacked
        out_f = w.shape[1]
        bf = None
        if bias is not None:
            bf = bias.reshape(-1) if bb else bias.repeat(size)
        r = dispatch(op, (x, w.reshape(size * out_f, w.shape[2])) + ((bf,) if bf is not None else ()), params)
        r = r.reshape(tuple(r.shape[:-1]) + (size, out_f))
        return r.movedim(-2, 0).contiguous(), True  # later GEMMs want each member's rows contiguous
    # batched weight and input: x @ w^T (+ b) through the matmul rule
    wt = w.transpose(-1, -2)
    if bx or bw:
        r, _ = matmul_rule(matmul_op, (x, wt), (bx, bw), {}, size)
    else:
        r = dispatch(matmul_op, (x, wt))
    if bias is not None:
        r, _ = elementwise_rule(D.REGISTRY["add"], (r, bias), (bx or bw, bb), {}, size)
    return r, True


def einsum_rule(op, vals, bd, params, size):
    eq = params["eq"].replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if not arrow:
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    used = set(eq)
    z = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in used)
    ins = [(z + s if b else s) for s, b in zip(ins, bd)]
    return dispatch(op, tuple(vals), dict(params, eq=",".join(ins) + "->" + z + rhs)), True


matmul_op.batch = matmul_rule
linear_op.batch = linear_rule
einsum_op.batch = einsum_rule
