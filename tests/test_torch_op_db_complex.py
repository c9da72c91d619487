"""PyTorch's op_db as the oracle in complex64 and complex128 (issue 18).

The main harness (tests/test_torch_op_db.py) checks float64 and float32 and skips complex samples;
this module reuses its machinery (the ember counterparts, conversions, comparisons, sample handling,
the forward-AD and vmap checks) for the complex dtypes. For every OpInfo ember covers:

* ``test_forward``      where ``op.supported_dtypes('cpu')`` holds the dtype: PyTorch's sample inputs
                        through both; the results' dtypes and values must match; where torch refuses
                        a sample, ember must raise an exception of the same type;
* ``test_backward``     complex128, where ``op.supported_backward_dtypes('cpu')`` holds it: gradients
                        of a real loss of the outputs (<w, view_as_real(out)> for a complex output,
                        <w, out> for a real one) against torch's, so both follow PyTorch's
                        conjugate-Wirtinger convention;
* ``test_forward_ad``   complex128, OpInfos with forward AD: ``ember.func.jvp`` against
                        ``torch.func.jvp`` (complex tangents for the complex primals);
* ``test_vmap``         ``ember.func.vmap`` over a stacked batch of two against the per-sample loop;
* ``test_unsupported``  where PyTorch's CPU build has no complex kernel (complex not in
                        ``supported_dtypes``): float32 samples cast to the dtype; where torch raises,
                        ember must raise an exception of the same type (PyTorch's NotImplementedError
                        naming its kernel, not a RuntimeError of ember's own).

The default run caps the samples per op and dtype (``CAP``; complex64's forward ``CAP64``, the
refusals one dtype); ``EMBER_OPDB_FULL=1`` (or ``--opdb-full``) runs every sample and every reference
input in both dtypes (``FULL_XFAIL`` holds what only it reaches). ``EMBER_OPDB_STRICT=1`` ignores the
XFAIL tables, ``EMBER_OPDB_LOG=file`` logs each failure (tests/test_torch_op_db.py's ``report``); to
triage one op: ``pytest tests/test_torch_op_db_complex.py -k 'linalg.qr-'``.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")

import ember  # noqa: E402
import test_torch_op_db as H  # noqa: E402

FULL = H.FULL
CAP = None if FULL else 2          # samples per op and dtype in the default run
CAP64 = None if FULL else 1        # complex64's forward samples in the default run (complex128 runs every check)
STRICT = H.STRICT
DTYPES = (torch.complex64, torch.complex128)
GRAD_DTYPE = torch.complex128      # backward, forward AD and vmap run in one dtype


# ----------------------------------------------------------------------------- conversions


def to_ember(x, grad=True):
    """The harness's conversion, with complex64/complex128 tensors let through."""
    if isinstance(x, torch.Tensor) and x.dtype in DTYPES and x.layout == torch.strided:
        arr = x.detach().resolve_conj().resolve_neg().numpy().copy()
        t = ember.from_numpy(arr) if arr.ndim else ember.tensor(arr[()], dtype=H._ember_dtype(x.dtype))
        return t.requires_grad_(True) if grad and x.requires_grad else t
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        out = [to_ember(v, grad) for v in x]
        return type(x)(out) if type(x) in (list, tuple) else tuple(out)
    if isinstance(x, dict):
        return {k: to_ember(v, grad) for k, v in x.items()}
    return H.to_ember(x, grad)


def _convert(s, grad=True):
    return H._convert(s, grad, conv=to_ember)


def _diff_outs(out):
    """The floating and complex tensors of an output structure (the ones a gradient can flow through)."""
    return [t for t in H._tensors(out) if t.dtype.is_floating_point or t.dtype.is_complex]


# ----------------------------------------------------------------------------- known failures

# (op id, check) or (op id, dtype name, check) -> why it fails today; check is "forward", "backward",
# "forward_ad", "vmap", "unsupported" or "*". Each entry is a harness limit, PyTorch's own deviation or
# a known gap, never a wrong answer accepted as right.
_FLOAT = "(as in the float runs: tests/test_torch_op_db.py's XFAIL)"
XFAIL = {
    # --- the float runs' harness limits and PyTorch deviations, which the complex samples meet too
    **H._each_check("harness limit: the samples are views into a larger storage that the NumPy copy cannot "
                    "reproduce " + _FLOAT, "as_strided.partial_views", "forward backward forward_ad"),
    **{(o, c): H.XFAIL[(o, c)] + " " + _FLOAT for o, c in (
        ("cholesky_inverse", "backward"), ("cholesky_solve", "backward"), ("cholesky_inverse", "forward_ad"),
        ("cholesky_solve", "forward_ad"), ("triangular_solve", "forward_ad"), ("as_strided_scatter", "backward"),
        ("nn.functional.linear_cross_entropy.chunked", "forward"),
        ("nn.functional.linear_cross_entropy.chunked_none", "forward"))},
    **H._each_check("harness limit: the sample passes PyTorch's LinearCrossEntropyOptions object; ember takes its "
                    "own class " + _FLOAT, "nn.functional.linear_cross_entropy.chunked "
                    "nn.functional.linear_cross_entropy.chunked_none", "unsupported"),
    **H._each_check("eigen/singular vectors are unique only up to a phase: the harness compares them entry by "
                    "entry (values and reconstructions agree; tests/test_linalg.py compares phase-fixed vectors)",
                    "linalg.eigh linalg.eig svd linalg.svd", "forward"),
    # --- PyTorch's own complex results that ember does not reproduce
    ("matrix_exp", "complex64", "forward"): "PyTorch's complex64 result is the less accurate one: on op_db's sample "
                                            "1 it is 9e-7 of the norm from the exact value (SciPy's expm in "
                                            "complex128), ember's 4e-8 (computed in complex128, rounded once)",
    ("logcumsumexp", "forward_ad"): "PyTorch's complex forward-AD formula gives NaN tangents on op_db's sample; "
                                    "ember's match central differences",
    **H._each_check("PyTorch's masked softmax fills the masked-out entries through torch.iinfo, which raises "
                    "TypeError for a complex dtype before its kernel's NotImplementedError; ember raises the "
                    "kernel's NotImplementedError", "masked.softmax masked.log_softmax masked.softmin",
                    "unsupported"),
}

# failures only the full sweep reaches (samples past the default cap, reference inputs): op_db's
# extremal-value reference samples put complex infinities and NaNs (inf+nanj, nan+infj, 0j divisors,
# 1e20-sized parts) through the ops, where PyTorch's complex kernels and NumPy's follow different
# conventions; the finite samples of the same ops match
_EXTREMAL = ("complex infinities and NaNs in op_db's extremal reference samples: PyTorch's kernels and NumPy's "
             "(C99's) disagree there, e.g. log1p(inf+nanj) is nan+nanj in PyTorch, inf+nanj in ember; 0j ** 0j "
             "is nan in PyTorch, 1 in ember (C99's cpow); 1 / 0j is inf+nanj in PyTorch, nan+nanj in ember; finite "
             "values match")
FULL_XFAIL = {
    **H._each_check("PyTorch's complex add/sub multiply the other operand by alpha even when alpha is 1, so an "
                    "infinite part times alpha's zero imaginary part gives NaN ((inf+infj) + (inf+infj) is nan+nanj "
                    "in PyTorch, inf+infj in ember and NumPy); finite values match",
                    "add sub __radd__ __rsub__ rsub", "forward"),
    **H._each_check(_EXTREMAL, "log1p ldexp logaddexp pow float_power __rpow__ reciprocal",
                    "forward backward forward_ad"),
    **H._each_check(_EXTREMAL + " (the derivative 1 / (1 + z^2) at z = +-i)", "atan", "backward forward_ad"),
    **H._each_check(_EXTREMAL + " (tangents at infinite operands)", "mul __rmul__", "forward_ad"),
    **H._each_check("complex64 products whose real part overflows to inf: the cancelling imaginary part is 0 in "
                    "PyTorch and float32 rounding residue (3e14 beside the inf) in NumPy's kernel; finite products "
                    "match", "mul __rmul__", "forward"),
    ("square", "complex64", "forward"): "complex64 squares of 1e20-sized values overflow: PyTorch's real part is "
                                        "-inf, ember's (z * z in NumPy: inf - inf) NaN; finite squares match",
    **{(o, c): H.FULL_XFAIL[(o, c)] + " (as in the float runs)" for o, c in (
        ("cov", "backward"), ("cov", "forward_ad"), ("index_copy", "backward"), ("half", "backward"),
        ("cat", "forward_ad"), ("logsumexp", "forward_ad"))},
    **H._each_check("PyTorch refuses a complex attn_mask with an AssertionError ('only bool and floating types of "
                    "attn_mask are supported') before its kernel's NotImplementedError; ember raises the kernel's "
                    "NotImplementedError", "nn.functional.multi_head_attention_forward", "unsupported"),
    **H._each_check("GAP: a 0-dim complex input with ord=-inf and a mask: PyTorch's masked.norm refuses it with an "
                    "AssertionError (input must be floating point), ember computes", "masked.norm", "unsupported"),
}


def _finish(op, dtype, check, failures, ran, skipped):
    key, dn = H._op_id(op), str(dtype).split(".")[-1]
    tables = (XFAIL, FULL_XFAIL) if FULL else (XFAIL,)
    reason = None if STRICT else next((t[k] for t in tables for k in ((key, dn, check), (key, check), (key, "*"))
                                       if k in t), None)
    H.report((key, dn, check), reason, failures, ran, skipped)


def _params(check):
    out = []
    for op in H.OPS:
        oid = H._op_id(op)
        sup = op.supported_dtypes("cpu")
        if check == "forward":
            dtypes = [d for d in DTYPES if d in sup]
        elif check == "unsupported":  # (the default run: one dtype, the refusal is the same)
            dtypes = [d for d in (DTYPES if FULL else DTYPES[:1]) if d not in sup and torch.float32 in sup]
        elif oid in H.RANDOM:
            dtypes = []
        elif check == "backward":
            dtypes = [GRAD_DTYPE] if op.supports_autograd and GRAD_DTYPE in op.supported_backward_dtypes("cpu") \
                else []
        elif check == "forward_ad":
            dtypes = [GRAD_DTYPE] if op.supports_forward_ad and GRAD_DTYPE in op.supported_backward_dtypes("cpu") \
                else []
        else:  # vmap
            dtypes = [d for d in (torch.complex128, torch.complex64) if d in sup][:1]
        out += [pytest.param(op, d, id=f"{oid}-{str(d)[6:]}") for d in dtypes]
    return out


def _samples(op, dtype, requires_grad=False, cap=CAP):
    """The op's samples in ``dtype``, an error making them a skip (torch's generator fails in this dtype)."""
    try:
        return list(H._samples(op, dtype, requires_grad, cap=cap))
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"op.sample_inputs fails in {dtype} in torch: {type(e).__name__}: {str(e)[:150]}")


# ----------------------------------------------------------------------------- the checks


@pytest.mark.parametrize("op, dtype", _params("forward"))
def test_forward(op, dtype):
    if H._op_id(op) == "bfloat16":  # (tests/test_bfloat16.py compares Tensor.bfloat16 with PyTorch)
        pytest.skip("harness limit: PyTorch cannot hand a bfloat16 result to NumPy for the comparison")
    fn = H.counterpart(op)
    random = H._op_id(op) in H.RANDOM
    failures, skipped, ran = [], [], 0
    for i, s in _samples(op, dtype, cap=CAP64 if dtype == torch.complex64 else CAP):
        try:
            s_e = _convert(s)
        except H.Unsupported as e:
            skipped.append(str(e))
            continue
        try:
            expected, t_exc = H._call_torch(op, s), None
        except Exception as e:  # noqa: BLE001 - the oracle decides what is an error
            t_exc = e
        ran += 1
        where = f"sample {i} {H._describe(s)}"
        try:
            with ember.no_grad():
                actual = H._call_ember(fn, s_e)
        except Exception as e:  # noqa: BLE001 - any exception here is the finding, unless torch raises too
            if t_exc is None:
                failures.append(f"{where}: raised {type(e).__name__}: {str(e)[:200]}")
            elif not isinstance(e, type(t_exc)):
                failures.append(f"{where}: raised {type(e).__name__}: {str(e)[:150]}; torch "
                                f"{type(t_exc).__name__}: {str(t_exc)[:150]}")
            continue
        if t_exc is not None:
            failures.append(f"{where}: ember computes; torch raises {type(t_exc).__name__}: {str(t_exc)[:200]}")
            continue
        r = H.compare_meta(expected, actual, "out") if random else H.compare(expected, actual, "out")
        if r:
            failures.append(f"{where}: {r}")
    _finish(op, dtype, "forward", failures, ran, skipped)


def _real_loss(lib, outs, ws):
    """sum <w, out> over the outputs, a complex output read as its (re, im) pairs: a real number."""
    return sum(((lib.view_as_real(t.resolve_conj()) if t.is_complex() else t) * lib.from_numpy(w)).sum()
               for t, w in zip(outs, ws))


@pytest.mark.parametrize("op, dtype", _params("backward"))
def test_backward(op, dtype):
    fn = H.counterpart(op)
    rng = np.random.default_rng(0)
    failures, skipped, ran = [], [], 0
    for i, s in _samples(op, dtype, requires_grad=True):
        try:
            s_e = _convert(s)
        except H.Unsupported as e:
            skipped.append(str(e))
            continue
        # torch's differentiable tensors as fresh leaves (a sample's input may be a view marked as a leaf)
        flat, spec = H._tree((s.input, s.args, s.kwargs))
        flat = [v.detach().clone().requires_grad_(True) if isinstance(v, torch.Tensor) and v.requires_grad
                else v for v in flat]
        s.input, s.args, s.kwargs = H._untree(flat, spec)
        t_in, e_in = H._diff_leaves((s.input, s.args, s.kwargs)), H._diff_leaves(s_e)
        if not t_in:
            continue
        try:
            t_all = _diff_outs(H._process(s, H._call_torch(op, s), "torch"))
            pos = [k for k, t in enumerate(t_all) if t.requires_grad]
            if not pos:
                continue
            t_out = [t_all[k] for k in pos]
            ws = [rng.standard_normal(tuple(t.shape) + ((2,) if t.is_complex() else ())) for t in t_out]
            t_grads = torch.autograd.grad(_real_loss(torch, t_out, ws), t_in, allow_unused=True)
        except Exception:  # noqa: BLE001 - torch does not differentiate this sample: nothing to compare
            continue
        ran += 1
        where = f"sample {i} {H._describe(s)}"
        try:
            e_all = _diff_outs(H._process(s, H._call_ember(fn, s_e), "ember"))
            if len(e_all) != len(t_all):
                failures.append(f"{where}: {len(e_all)} floating/complex outputs, torch {len(t_all)}")
                continue
            e_out = [e_all[k] for k in pos]
            if not all(o.requires_grad for o in e_out):
                failures.append(f"{where}: an output torch differentiates does not require grad")
                continue
            e_grads = ember.autograd.grad(_real_loss(ember, e_out, ws), e_in, allow_unused=True)
        except Exception as e:  # noqa: BLE001
            failures.append(f"{where}: raised {type(e).__name__}: {str(e)[:200]}")
            continue
        for k, (tg, eg, x) in enumerate(zip(t_grads, e_grads, t_in)):
            tg = torch.zeros_like(x) if tg is None or tg._is_zerotensor() else tg
            eg = ember.zeros(tuple(x.shape), dtype=H._ember_dtype(x.dtype)) if eg is None else eg
            r = H.compare(tg, eg, f"grad[{k}]", tol=(1e-6, 1e-7))
            if r:
                failures.append(f"{where}: {r}")
                break
    _finish(op, dtype, "backward", failures, ran, skipped)


@pytest.mark.parametrize("op, dtype", _params("forward_ad"))
def test_forward_ad(op, dtype):
    try:
        res = H.forward_ad_check(op, dtype, convert=_convert, outs=_diff_outs, cap=CAP)
    except Exception as e:  # noqa: BLE001 - torch's sample generator fails in this dtype
        pytest.skip(f"op.sample_inputs fails in {dtype} in torch: {type(e).__name__}: {str(e)[:150]}")
    _finish(op, dtype, "forward_ad", *res)


@pytest.mark.parametrize("op, dtype", _params("vmap"))
def test_vmap(op, dtype):
    try:
        res = H.vmap_check(op, [dtype], convert=_convert, cap=CAP)
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"op.sample_inputs fails in {dtype} in torch: {type(e).__name__}: {str(e)[:150]}")
    _finish(op, dtype, "vmap", *res)


def _cast(x, dtype):
    """float32 tensors of a sample as ``dtype`` (through any nesting)."""
    if isinstance(x, torch.Tensor) and x.dtype == torch.float32:
        return x.detach().to(dtype)
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        out = [_cast(v, dtype) for v in x]
        return type(x)(out) if type(x) in (list, tuple) else tuple(out)
    if isinstance(x, dict):
        return {k: _cast(v, dtype) for k, v in x.items()}
    return x


@pytest.mark.parametrize("op, dtype", _params("unsupported"))
def test_unsupported(op, dtype):
    """Where PyTorch's CPU build has no complex kernel, ember refuses too, with the same exception type."""
    fn = H.counterpart(op)
    failures, ran = [], 0
    torch.manual_seed(0)
    for i, s in enumerate(op.sample_inputs("cpu", torch.float32)):   # (lazily: the first few do)
        if CAP is not None and (ran >= CAP or i >= 4 * CAP):
            break
        s = H._Frozen(s)
        s.input, s.args, s.kwargs = _cast(s.input, dtype), _cast(s.args, dtype), _cast(s.kwargs, dtype)
        try:
            s_e = _convert(s, grad=False)
        except H.Unsupported:
            continue
        try:
            H._call_torch(op, s)
            continue            # op_db's list is conservative here: torch computes, nothing to hold ember to
        except Exception as e:  # noqa: BLE001
            t_exc = e
        ran += 1
        where = f"sample {i} {H._describe(s)}"
        try:
            with ember.no_grad():
                H._call_ember(fn, s_e)
        except Exception as e:  # noqa: BLE001
            if not isinstance(e, type(t_exc)):
                failures.append(f"{where}: raised {type(e).__name__}: {str(e)[:150]}; torch "
                                f"{type(t_exc).__name__}: {str(t_exc)[:150]}")
            continue
        failures.append(f"{where}: ember computes; torch raises {type(t_exc).__name__}: {str(t_exc)[:200]}")
    _finish(op, dtype, "unsupported", failures, ran, [])
