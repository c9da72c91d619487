"""Triage tool (not collected by pytest): PyTorch's op_db on complex inputs, ember against torch.

    PYTHONPATH=src python tests/complex_opdb_sweep.py [forward|backward|forward_ad] [--dtype complex64] [OP_ID ...]

For every OpInfo with an ember counterpart (tests/test_torch_op_db.py's mapping and sample caps; the
EMBER_OPDB_FULL=1 switch applies), the samples in a complex dtype are run in both libraries:
forward: values and dtypes, or the same exception type where torch refuses (a RuntimeError stands for
any RuntimeError); backward: gradients of a real loss of the outputs (complex128, where torch
differentiates); forward_ad: jvp tangents of the input. Prints one block per op that differs."""
import sys
import warnings

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
warnings.simplefilter("ignore")
import test_torch_op_db as H  # noqa: E402
import torch  # noqa: E402

import ember  # noqa: E402

_to_ember = H.to_ember


def to_ember(x, grad=True):
    """The harness's conversion, with complex tensors let through."""
    if isinstance(x, torch.Tensor) and x.is_complex() and x.layout == torch.strided and x.dtype != torch.complex32:
        arr = x.detach().resolve_conj().resolve_neg().numpy().copy()
        t = ember.from_numpy(arr) if arr.ndim else ember.tensor(arr[()], dtype=H._ember_dtype(x.dtype))
        return t.requires_grad_(True) if grad and x.requires_grad else t
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        out = [to_ember(v, grad) for v in x]
        return type(x)(out) if type(x) in (list, tuple) else tuple(out)
    if isinstance(x, dict):
        return {k: to_ember(v, grad) for k, v in x.items()}
    return _to_ember(x, grad)


H.to_ember = to_ember


def _forward(op, fn, dtype):
    fails, n = [], 0
    for i, s in H._samples(op, dtype):
        try:
            s_e = H._convert(s)
        except H.Unsupported:
            continue
        where = f"sample {i} {H._describe(s)}"
        try:
            want, terr = H._call_torch(op, s), None
        except Exception as e:  # noqa: BLE001 - the oracle decides what is an error
            terr = e
        n += 1
        try:
            with ember.no_grad():
                got, eerr = H._call_ember(fn, s_e), None
        except Exception as e:  # noqa: BLE001
            eerr = e
        if terr is not None:
            same = isinstance(eerr, type(terr)) or isinstance(terr, RuntimeError) and isinstance(eerr, RuntimeError)
            if eerr is None:
                fails.append(f"{where}: ember computes, torch raises {type(terr).__name__}: {str(terr)[:120]}")
            elif not same:
                fails.append(f"{where}: ember raises {type(eerr).__name__}, torch {type(terr).__name__}: "
                             f"{str(terr)[:120]}")
        elif eerr is not None:
            fails.append(f"{where}: ember raises {type(eerr).__name__}: {str(eerr)[:150]}")
        else:
            r = H.compare(want, got, "out")
            if r:
                fails.append(f"{where}: {r[:200]}")
    return fails, n


def _real_loss(lib, outs, ws):
    return sum(((lib.view_as_real(t.resolve_conj()) if t.is_complex() else t) * lib.from_numpy(w)).sum()
               for t, w in zip(outs, ws))


def _backward(op, fn, dtype):
    fails, n = [], 0
    if not op.supports_autograd or dtype not in op.supported_backward_dtypes("cpu"):
        return fails, n
    for i, s in H._samples(op, dtype, requires_grad=True):
        try:
            s_e = H._convert(s)
        except H.Unsupported:
            continue
        where = f"sample {i} {H._describe(s)}"
        tl = [t for t in H._tensors((s.input, s.args, s.kwargs)) if t.requires_grad]
        el = [t for t in H._tensors(s_e) if t.requires_grad]
        if not tl or len(tl) != len(el):
            continue
        try:
            touts = [t for t in H._tensors(H._process(s, H._call_torch(op, s), "torch")) if t.requires_grad]
            if not touts:
                continue
            rng = np.random.default_rng(0)
            ws = [rng.standard_normal(tuple(t.shape) + ((2,) if t.is_complex() else ())) for t in touts]
            tg = torch.autograd.grad(_real_loss(torch, touts, ws), tl, allow_unused=True)
        except Exception:  # noqa: BLE001 - torch refuses this sample's gradient: nothing to compare
            continue
        n += 1
        try:
            eouts = [t for t in H._tensors(H._process(s, H._call_ember(fn, s_e), "ember")) if t.requires_grad]
            eg = ember.autograd.grad(_real_loss(ember, eouts, ws), el, allow_unused=True)
        except Exception as e:  # noqa: BLE001
            fails.append(f"{where}: ember raises {type(e).__name__}: {str(e)[:150]}")
            continue
        for k, (a, b) in enumerate(zip(eg, tg)):
            if b is None:
                continue
            r = H.compare(b, a if a is not None else ember.zeros(tuple(b.shape), dtype=H._ember_dtype(b.dtype)),
                          f"grad[{k}]")
            if r:
                fails.append(f"{where}: {r[:200]}")
                break
    return fails, n


def _forward_ad(op, fn, dtype):
    fails, n = [], 0
    if not getattr(op, "supports_forward_ad", False) or dtype not in op.supported_backward_dtypes("cpu"):
        return fails, n
    for i, s in H._samples(op, dtype):
        if not (isinstance(s.input, torch.Tensor) and s.input.is_complex()):
            continue
        try:
            s_e = H._convert(s, grad=False)
        except H.Unsupported:
            continue
        where = f"sample {i} {H._describe(s)}"
        rng = np.random.default_rng(i)
        shape = tuple(s.input.shape)
        tan = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        try:
            _, want = torch.func.jvp(lambda x: op.op(x, *s.args, **s.kwargs), (s.input.detach(),),
                                     (torch.from_numpy(tan).to(s.input.dtype),))
        except Exception:  # noqa: BLE001
            continue
        n += 1
        try:
            _, got = ember.func.jvp(lambda x: fn(x, *s_e[1], **s_e[2]), (s_e[0].detach(),),
                                    (ember.from_numpy(tan).to(s_e[0].dtype),))
        except Exception as e:  # noqa: BLE001
            fails.append(f"{where}: ember raises {type(e).__name__}: {str(e)[:150]}")
            continue
        r = H.compare(want, got, "tangent")
        if r:
            fails.append(f"{where}: {r[:200]}")
    return fails, n


def main(argv):
    mode = argv[0] if argv and argv[0] in ("forward", "backward", "forward_ad") else "forward"
    argv = argv[1:] if argv and argv[0] == mode else argv
    dtype = torch.complex128
    if "--dtype" in argv:
        k = argv.index("--dtype")
        dtype = getattr(torch, argv[k + 1])
        argv = argv[:k] + argv[k + 2:]
    check = {"forward": _forward, "backward": _backward, "forward_ad": _forward_ad}[mode]
    for op in H.OPS:
        oid = H._op_id(op)
        if (argv and oid not in argv) or oid in H.RANDOM:
            continue
        try:
            fails, n = check(op, H.counterpart(op), dtype)
        except Exception as e:  # noqa: BLE001 - a sample generator that fails in this dtype
            print(f"## {oid}: samples could not be made ({type(e).__name__}: {str(e)[:100]})")
            continue
        if fails:
            print(f"## {oid} ({mode}, {str(dtype)[6:]}): {len(fails)} of {n} samples differ")
            for f in fails[:3]:
                print("   ", f)
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
