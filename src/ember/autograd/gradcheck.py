"""gradcheck / gradgradcheck: analytical derivatives against central finite differences.

Semantics follow PyTorch's (every differentiable (input, output) pair, central differences,
non-tensor arguments passed through, outputs that do not require grad skipped, True or a
``GradcheckError``). The failure report is short and specific: it names the output and input
indices and the worst Jacobian entry (its index, the numerical and analytical values and their
difference) instead of printing whole Jacobians, and for a float32 check that fails it says
whether the same check passes once the inputs are upcast to float64.
"""
import warnings

import numpy as np

from .. import _dispatch as D

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck / gradgradcheck when a check fails (a RuntimeError, as in PyTorch)."""


# ----------------------------------------------------------------------------- helpers


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_diff_input(a):
    return isinstance(a, D.Tensor) and a.requires_grad


def _fmt_index(flat, shape):
    if len(shape) == 0:
        return "[]"
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"


def _fmt(v):
    return f"{v:.6g}"


def _require(module_path, what, flag):
    """Import a transform this check needs, or say clearly which one is missing."""
    import importlib
    try:
        return importlib.import_module(module_path)
    except ImportError as e:
        raise NotImplementedError(
            f"gradcheck({flag}=True) needs {what} ({module_path}), which is not available in this "
            f"build of ember ({e}). Call gradcheck with {flag}=False.") from None


def _grad_outputs_onehot(o, m):
    arr = np.zeros(tuple(o.shape), dtype=o._data.dtype)
    arr.reshape(-1)[m] = 1
    return D._new_tensor(arr)


# ----------------------------------------------------------------------------- Jacobians
# Every Jacobian is a float64 array of shape (output numel, input numel), keyed by
# (output index, input index) in the positions of func's outputs and arguments.


class _Problem:
    """The function, its arguments, and which arguments/outputs are differentiable."""

    def __init__(self, func, inputs):
        self.func = func
        self.inputs = _as_tuple(inputs)
        self.diff_in = [i for i, a in enumerate(self.inputs) if _is_diff_input(a)]
        outs = _as_tuple(func(*self.inputs))
        self.outs = outs
        self.diff_out = [k for k, o in enumerate(outs) if isinstance(o, D.Tensor) and o.requires_grad]
        self.float_out = [k for k, o in enumerate(outs)
                          if isinstance(o, D.Tensor) and o.dtype.is_floating_point]

    def numerical(self, eps, out_idx, in_idx=None):
        """Central differences f(x + eps e_j) - f(x - eps e_j) / 2 eps, one input element at a time.

        Each differentiable input is replaced by a fresh leaf over a private buffer that is
        perturbed in place, so the caller's tensors are never touched."""
        in_idx = self.diff_in if in_idx is None else in_idx
        args = list(self.inputs)
        bufs = {}
        for i in in_idx:
            x = self.inputs[i]
            buf = np.array(x._data, copy=True, order="C")
            leaf = D._new_tensor(buf)
            leaf.requires_grad_(x.requires_grad)
            args[i] = leaf
            bufs[i] = buf

        def evaluate():
            outs = _as_tuple(self.func(*args))
            return [np.array(outs[k]._data, dtype=np.float64).reshape(-1) for k in out_idx]

        J = {}
        for i in in_idx:
            flat = bufs[i].reshape(-1)
            n = flat.size
            for k in out_idx:
                J[k, i] = np.zeros((self.outs[k].numel(), n))
            for j in range(n):
                orig = flat[j].copy()
                flat[j] = orig - eps
                lo = evaluate()
                flat[j] = orig + eps
                hi = evaluate()
                flat[j] = orig
                for k, a, b in zip(out_idx, lo, hi):
                    J[k, i][:, j] = (b - a) / (2 * eps)
        return J

    def analytical_reverse(self, nondet_tol, check_grad_dtypes):
        """One vjp per output element (run twice: the second run checks reentrancy)."""
        from . import grad as _grad
        ins = [self.inputs[i] for i in self.diff_in]
        J = {}
        for k in self.diff_out:
            o = self.outs[k]
            for i in self.diff_in:
                J[k, i] = np.zeros((o.numel(), self.inputs[i].numel()))
            for m in range(o.numel()):
                go = _grad_outputs_onehot(o, m)
                first = _grad(o, ins, go, retain_graph=True, allow_unused=True)
                second = _grad(o, ins, go, retain_graph=True, allow_unused=True)
                for i, g, g2 in zip(self.diff_in, first, second):
                    x = self.inputs[i]
                    if g is None:
                        if g2 is not None:
                            raise GradcheckError(f"Backward is not reentrant: the gradient of output {k} "
                                                 f"with respect to input {i} is undefined in one run and "
                                                 f"defined in another")
                        continue
                    if tuple(g.shape) != tuple(x.shape):
                        raise GradcheckError(f"Analytical gradient has incorrect size: the gradient of "
                                             f"output {k} with respect to input {i} has shape "
                                             f"{list(g.shape)}, expected the input's shape {list(x.shape)}")
                    if check_grad_dtypes and g.dtype is not x.dtype:
                        raise GradcheckError(f"Gradient has dtype mismatch: the gradient of output {k} "
                                             f"with respect to input {i} is {g.dtype}, the input is "
                                             f"{x.dtype}")
                    row = np.asarray(g._data, dtype=np.float64).reshape(-1)
                    row2 = np.zeros_like(row) if g2 is None else \
                        np.asarray(g2._data, dtype=np.float64).reshape(-1)
                    worst = np.max(np.abs(row - row2)) if row.size else 0.0
                    if not worst <= nondet_tol:
                        raise GradcheckError(
                            f"Backward is not reentrant, i.e., running backward with same input and "
                            f"grad_output multiple times gives different values, although analytical "
                            f"gradient matches numerical gradient. The tolerance for nondeterminism was "
                            f"{nondet_tol}. (Output {k}, input {i}: the two runs differ by up to "
                            f"{_fmt(worst)} at element {_fmt_index(int(np.argmax(np.abs(row - row2))), x.shape)}.)")
                    J[k, i][m, :] = row
        return J

    def analytical_forward(self):
        """Forward-mode tangents: one dual evaluation per input element."""
        fwAD = _require("ember.autograd.forward_ad", "forward-mode AD", "check_forward_ad")
        J = {}
        for i in self.diff_in:
            x = self.inputs[i]
            n = x.numel()
            for k in self.diff_out:
                J[k, i] = np.zeros((self.outs[k].numel(), n))
            for j in range(n):
                tangent = _grad_outputs_onehot(x, j)
                with fwAD.dual_level():
                    args = list(self.inputs)
                    args[i] = fwAD.make_dual(x.detach().requires_grad_(x.requires_grad), tangent)
                    outs = _as_tuple(self.func(*args))
                    for k in self.diff_out:
                        t = fwAD.unpack_dual(outs[k]).tangent
                        if t is not None:
                            J[k, i][:, j] = np.asarray(t._data, dtype=np.float64).reshape(-1)
        return J


def _compare(num, ana, atol, rtol):
    """The worst entry of |ana - num| <= atol + rtol |num|, or None when all hold."""
    diff = np.abs(ana - num)
    tol = atol + rtol * np.abs(num)
    ok = diff <= tol  # NaN compares False: a NaN on either side is a mismatch
    if ok.all():
        return None
    excess = np.where(ok, -np.inf, np.where(np.isnan(diff), np.inf, diff - tol))
    flat = int(np.argmax(excess))
    m, j = np.unravel_index(flat, num.shape)
    return dict(m=int(m), j=int(j), num=float(num[m, j]), ana=float(ana[m, j]),
                diff=float(diff[m, j]), tol=float(tol[m, j]), nbad=int((~ok).sum()),
                total=int(ok.size), maxdiff=float(np.nanmax(diff)) if diff.size else 0.0,
                ana_zero=not np.any(ana), num_zero=not np.any(num))


def _mismatch_message(kind, prob, k, i, w, eps, atol, rtol):
    o, x = prob.outs[k], prob.inputs[i]
    lines = [f"{kind} mismatch for output {k} with respect to input {i} "
             f"(output shape {list(o.shape)}, input shape {list(x.shape)}, {x.dtype}; "
             f"eps={eps:g}, atol={atol:g}, rtol={rtol:g}).",
             f"worst element: d output[{k}]{_fmt_index(w['m'], o.shape)} / d input[{i}]"
             f"{_fmt_index(w['j'], x.shape)}: numerical {_fmt(w['num'])}, analytical {_fmt(w['ana'])}, "
             f"difference {_fmt(w['diff'])} (allowed {_fmt(w['tol'])}).",
             f"{w['nbad']} of {w['total']} Jacobian entries are outside the tolerance; the largest "
             f"difference is {_fmt(w['maxdiff'])}."]
    if w["ana_zero"] and not w["num_zero"]:
        lines.append("The analytical Jacobian is zero everywhere: does the input reach the output "
                     "through a path autograd cannot see (detach, .data, a NumPy round trip), or does "
                     "the backward return zeros?")
    elif w["num_zero"] and not w["ana_zero"]:
        lines.append("The numerical Jacobian is zero everywhere: the output does not change when this "
                     "input does (a piecewise-constant function, or eps too small for the dtype?).")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- checks


def _check_no_differentiable_outputs(prob, eps):
    if not prob.diff_in or not prob.float_out:
        return
    J = prob.numerical(eps, prob.float_out)
    for (k, i), num in J.items():
        if np.any(np.abs(num) > 0):
            m, j = np.unravel_index(int(np.argmax(np.abs(num))), num.shape)
            raise GradcheckError(
                f"Numerical gradient for function expected to be zero: no output requires grad, but "
                f"output {k} changes with input {i} (d output[{k}]{_fmt_index(m, prob.outs[k].shape)} / "
                f"d input[{i}]{_fmt_index(j, prob.inputs[i].shape)} = {_fmt(num[m, j])} numerically).")


def _check_undefined_grad(prob):
    """Backward must cope with undefined (None) output gradients: it returns zeros or None."""
    from .grad_mode import no_grad
    from .graph import AccumulateGrad
    seen = set()
    for k in prob.diff_out:
        node = prob.outs[k].grad_fn
        if node is None or type(node) is AccumulateGrad or id(node) in seen:
            continue
        seen.add(id(node))
        try:
            with no_grad():
                res = node.apply([None] * node._nout)
        except Exception as e:
            raise GradcheckError(
                f"Expected backward function to handle undefined output grads: {node.name()} (the "
                f"grad_fn of output {k}) raised {type(e).__name__}: {e} when called with undefined "
                f"gradients. It should return zeros or None.") from e
        for n, g in enumerate(res or ()):
            if g is not None and isinstance(g, D.Tensor) and np.any(g._data != 0):
                raise GradcheckError(
                    f"Expected backward function to handle undefined output grads: {node.name()} (the "
                    f"grad_fn of output {k}) returned a non-zero gradient {n} when all its output "
                    f"gradients were undefined.")


def _check_batched_grad(prob, atol, rtol):
    """vmap over grad_outputs (autograd.grad(is_grads_batched=True)) against a loop of vjps."""
    _require("ember.func", "vmap", "check_batched_grad")
    from . import grad as _grad
    from .._creation import randn
    from ..ops import stack
    ins = [prob.inputs[i] for i in prob.diff_in]
    for k in prob.diff_out:
        o = prob.outs[k]
        gos = [randn(*o.shape, dtype=o.dtype) for _ in range(2)]
        expected = [_grad(o, ins, g, retain_graph=True, allow_unused=True) for g in gos]
        try:
            got = _grad(o, ins, stack(gos), retain_graph=True, allow_unused=True, is_grads_batched=True)
        except Exception as e:
            raise GradcheckError(f"While computing batched gradients of output {k}, got: "
                                 f"{type(e).__name__}: {e}") from e
        for n, i in enumerate(prob.diff_in):
            for b in range(2):
                e_ = expected[b][n]
                g_ = None if got[n] is None else got[n][b]
                ea = 0.0 if e_ is None else np.asarray(e_._data, dtype=np.float64)
                ga = 0.0 if g_ is None else np.asarray(g_._data, dtype=np.float64)
                if not np.allclose(ga, ea, rtol=rtol, atol=atol):
                    d = np.abs(np.broadcast_to(ga, np.shape(ea)) - ea) if np.ndim(ea) else np.abs(ga - ea)
                    raise GradcheckError(
                        f"Batched grad mismatch for output {k} with respect to input {i}: batch entry {b} "
                        f"differs from the unbatched vjp by up to {_fmt(float(np.max(d)))}.")


def _check_batched_forward_grad(prob, atol, rtol):
    """vmap over tangents of a forward-mode evaluation against a loop of jvps."""
    func = _require("ember.func", "vmap", "check_batched_forward_grad")
    fwAD = _require("ember.autograd.forward_ad", "forward-mode AD", "check_batched_forward_grad")
    from .._creation import randn, zeros_like
    from ..ops import stack
    for i in prob.diff_in:
        x = prob.inputs[i]

        def jvp_of(t, i=i, x=x):
            with fwAD.dual_level():
                args = list(prob.inputs)
                args[i] = fwAD.make_dual(x.detach().requires_grad_(x.requires_grad), t)
                outs = _as_tuple(prob.func(*args))
                res = []
                for k in prob.diff_out:
                    primal, tangent = fwAD.unpack_dual(outs[k])
                    res.append(zeros_like(primal) if tangent is None else tangent)
                return tuple(res)

        tangents = [randn(*x.shape, dtype=x.dtype) for _ in range(2)]
        expected = [jvp_of(t) for t in tangents]
        try:
            got = func.vmap(jvp_of)(stack(tangents))
        except Exception as e:
            raise GradcheckError(f"While computing batched forward gradients with respect to input {i}, "
                                 f"got: {type(e).__name__}: {e}") from e
        for n, k in enumerate(prob.diff_out):
            for b in range(2):
                ea = np.asarray(expected[b][n]._data, dtype=np.float64)
                ga = np.asarray(got[n][b]._data, dtype=np.float64)
                if ga.shape != ea.shape or not np.allclose(ga, ea, rtol=rtol, atol=atol):
                    d = float(np.max(np.abs(ga - ea))) if ga.shape == ea.shape else float("nan")
                    raise GradcheckError(
                        f"Batched forward grad mismatch for output {k} with respect to input {i}: batch "
                        f"entry {b} differs from the unbatched jvp by up to {_fmt(d)} (shapes "
                        f"{list(ga.shape)} and {list(ea.shape)}).")


def _run_checks(prob, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                check_batched_grad, check_backward_ad, check_forward_ad, fast_mode,
                check_batched_forward_grad=False):
    if not prob.diff_out:
        _check_no_differentiable_outputs(prob, eps)
        return
    if fast_mode:
        _fast_check(prob, eps, atol, rtol, check_backward_ad, check_forward_ad, nondet_tol,
                    check_grad_dtypes)
    else:
        num = prob.numerical(eps, prob.diff_out)
        if check_backward_ad:
            ana = prob.analytical_reverse(nondet_tol, check_grad_dtypes)
            for key in sorted(num):
                w = _compare(num[key], ana[key], atol, rtol)
                if w is not None:
                    raise GradcheckError(_mismatch_message("Jacobian", prob, *key, w, eps, atol, rtol))
        if check_forward_ad:
            fwd = prob.analytical_forward()
            for key in sorted(num):
                w = _compare(num[key], fwd[key], atol, rtol)
                if w is not None:
                    raise GradcheckError(_mismatch_message(
                        "Forward-mode Jacobian", prob, *key, w, eps, atol, rtol).replace(
                        "analytical", "analytical (forward AD)", 1))
    if check_backward_ad and check_undefined_grad:
        _check_undefined_grad(prob)
    if check_backward_ad and check_batched_grad:
        _check_batched_grad(prob, atol, rtol)
    if check_forward_ad and check_batched_forward_grad:
        _check_batched_forward_grad(prob, atol, rtol)


def _fast_check(prob, eps, atol, rtol, check_backward_ad, check_forward_ad, nondet_tol,
                check_grad_dtypes):
    """v^T J u with random u (per input) and v (per output), numerically and analytically; a
    mismatch is then located with the full check on that (input, output) pair."""
    from . import grad as _grad
    rng = np.random.default_rng(0)
    us = {}
    for i in prob.diff_in:
        u = rng.random(prob.inputs[i].numel()) + 0.1
        us[i] = u / np.linalg.norm(u) if u.size else u
    vs = {k: rng.random(prob.outs[k].numel()) + 0.1 for k in prob.diff_out}
    # numerical directional derivatives, one pair of evaluations per input
    num = {}
    for i in prob.diff_in:
        x = prob.inputs[i]
        args = list(prob.inputs)
        base = np.asarray(x._data, dtype=np.float64)
        res = []
        for sign in (-1, 1):
            arr = (base + sign * eps * us[i].reshape(base.shape)).astype(x._data.dtype)
            leaf = D._new_tensor(arr)
            leaf.requires_grad_(True)
            args[i] = leaf
            outs = _as_tuple(prob.func(*args))
            res.append([np.asarray(outs[k]._data, dtype=np.float64).reshape(-1) for k in prob.diff_out])
        for n, k in enumerate(prob.diff_out):
            num[k, i] = float(vs[k] @ ((res[1][n] - res[0][n]) / (2 * eps)))
    checks = []
    if check_backward_ad:
        ins = [prob.inputs[i] for i in prob.diff_in]
        ana = {}
        for k in prob.diff_out:
            o = prob.outs[k]
            v = D._new_tensor(vs[k].reshape(tuple(o.shape)).astype(o._data.dtype))
            gs = _grad(o, ins, v, retain_graph=True, allow_unused=True)
            for i, g in zip(prob.diff_in, gs):
                ana[k, i] = 0.0 if g is None else float(np.asarray(g._data, np.float64).reshape(-1) @ us[i])
        checks.append(("Jacobian", ana))
    if check_forward_ad:
        fwAD = _require("ember.autograd.forward_ad", "forward-mode AD", "check_forward_ad")
        fwd = {}
        for i in prob.diff_in:
            x = prob.inputs[i]
            t = D._new_tensor(us[i].reshape(tuple(x.shape)).astype(x._data.dtype))
            with fwAD.dual_level():
                args = list(prob.inputs)
                args[i] = fwAD.make_dual(x.detach().requires_grad_(x.requires_grad), t)
                outs = _as_tuple(prob.func(*args))
                for k in prob.diff_out:
                    tt = fwAD.unpack_dual(outs[k]).tangent
                    fwd[k, i] = 0.0 if tt is None else float(vs[k] @ np.asarray(tt._data, np.float64).reshape(-1))
        checks.append(("Forward-mode Jacobian", fwd))
    for kind, ana in checks:
        for key in sorted(num):
            k, i = key
            tol = atol * us[i].sum() * vs[k].sum() + rtol * abs(num[key])
            if not abs(ana[key] - num[key]) <= tol:
                # locate the worst entry with the slow check on this pair
                n_full = prob.numerical(eps, [k], [i])[key]
                if kind == "Jacobian":
                    a_full = prob.analytical_reverse(nondet_tol, check_grad_dtypes)[key]
                else:
                    a_full = prob.analytical_forward()[key]
                w = _compare(n_full, a_full, atol, rtol)
                head = (f"(fast_mode) {kind} mismatch for output {k} with respect to input {i}: "
                        f"v^T J u is {_fmt(num[key])} numerically and {_fmt(ana[key])} analytically "
                        f"(difference {_fmt(abs(ana[key] - num[key]))}, allowed {_fmt(tol)}).")
                if w is None:
                    raise GradcheckError(head + " The element-wise check passes: the difference is "
                                         "accumulated rounding; loosen atol or use fast_mode=False.")
                raise GradcheckError(head + "\n" + _mismatch_message(kind, prob, k, i, w, eps, atol, rtol))


# ----------------------------------------------------------------------------- public API


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    """Check the gradients of ``func`` at ``inputs`` (tensors with requires_grad=True are
    differentiated) against central finite differences. Returns True, or raises GradcheckError
    (returns False when raise_exception=False)."""
    if masked:
        raise NotImplementedError("gradcheck(masked=True) is for sparse tensors, which ember does not have")
    if check_batched_forward_grad and not check_forward_ad:
        raise ValueError("check_batched_forward_grad=True needs check_forward_ad=True")
    if not (check_backward_ad or check_forward_ad):
        raise ValueError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    return _gradcheck(func, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
                      nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                      check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                      check_forward_ad=check_forward_ad, check_backward_ad=check_backward_ad,
                      check_batched_forward_grad=check_batched_forward_grad, fast_mode=fast_mode,
                      _recheck=True, _name="gradcheck")


def _realify(func, tupled):
    """Complex inputs and outputs as pairs of reals, as PyTorch's gradcheck checks them: each complex
    input z that requires grad becomes a real leaf of shape (..., 2) seen by func through
    view_as_complex, and each complex output leaves through view_as_real. The finite differences
    then perturb real and imaginary parts separately, and the analytical side runs backward and
    forward mode through those views, so the check covers PyTorch's convention for complex
    gradients (a real loss L has the gradient dL/dRe z + i dL/dIm z)."""
    from ..ops.complex import view_as_complex, view_as_real
    cx = [i for i, a in enumerate(tupled) if _is_diff_input(a) and a.is_complex()]
    new = list(tupled)
    for i in cx:
        z = tupled[i]._data
        r = D._new_tensor(np.stack([z.real, z.imag], -1).astype(z.real.dtype))
        r.requires_grad_(True)
        new[i] = r

    def real_func(*args):
        args = list(args)
        for i in cx:
            args[i] = view_as_complex(args[i])
        outs = func(*args)
        if isinstance(outs, (tuple, list)):
            return tuple(view_as_real(o) if isinstance(o, D.Tensor) and o.is_complex() else o for o in outs)
        return view_as_real(outs) if isinstance(outs, D.Tensor) and outs.is_complex() else outs
    return real_func, tuple(new)


def _gradcheck(func, inputs, *, eps, atol, rtol, raise_exception, _recheck, _name, **flags):
    tupled = _as_tuple(inputs)
    if any(isinstance(a, D.Tensor) and a.is_complex() for a in tupled) or any(
            isinstance(o, D.Tensor) and o.is_complex() for o in _as_tuple(func(*tupled))):
        func, tupled = _realify(func, tupled)
    diff = [i for i, a in enumerate(tupled) if _is_diff_input(a)]
    if not diff:
        raise ValueError(f"{_name} expects at least one input tensor to require gradient, but none of "
                         f"them have requires_grad=True.")
    low = [i for i in diff if tupled[i].dtype.is_floating_point and tupled[i].dtype.itemsize < 8]
    if _recheck:
        for i in low:
            warnings.warn(
                f"Input #{i} requires gradient and is {tupled[i].dtype}, not float64: central "
                f"differences in {tupled[i].dtype} carry rounding errors of the order of "
                f"machine-epsilon/eps, so this check will likely fail even for a correct backward. "
                f"Use float64 inputs (x.double()) for {_name}.", UserWarning, stacklevel=3)
    try:
        prob = _Problem(func, tupled)
        _run_checks(prob, eps, atol, rtol, **flags)
    except GradcheckError as e:
        if _recheck and low:
            note = _float64_recheck(func, tupled, low, flags, _name)
            e = GradcheckError(f"{e}\n{note}")
        if raise_exception:
            raise e from None
        return False
    return True


def _float64_recheck(func, tupled, low, flags, name):
    """Run the same check with every floating input upcast to float64 (default tolerances)."""
    up = []
    for a in tupled:
        if isinstance(a, D.Tensor) and a.dtype.is_floating_point and a.dtype.itemsize < 8:
            b = D._new_tensor(np.array(a._data, dtype=np.float64))
            b.requires_grad_(a.requires_grad)
            a = b
        up.append(a)
    which = ("Inputs " if len(low) > 1 else "Input ") + ", ".join(f"#{i}" for i in low) + \
        (" are" if len(low) > 1 else " is")
    try:
        ok = _gradcheck(func, tuple(up), eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                        _recheck=False, _name=name, **flags)
    except GradcheckError as e2:
        first = "\n".join(str(e2).splitlines()[:2])
        return (f"{which} low precision; re-checked with float64 inputs (eps=1e-06, "
                f"atol=1e-05, rtol=0.001) the check FAILS too, so the backward itself is wrong: {first}")
    except Exception as e2:  # the function may not accept float64 inputs
        return (f"{which} low precision; a float64 re-check could not run "
                f"({type(e2).__name__}: {e2}).")
    if ok:
        return (f"{which} low precision; re-checked with float64 inputs (eps=1e-06, "
                f"atol=1e-05, rtol=0.001) the check PASSES: the mismatch above is rounding error of "
                f"the low-precision finite differences, not a wrong backward. Use float64 inputs.")
    return ""


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Check second derivatives: gradcheck of (inputs, grad_outputs) -> vjp(func)(grad_outputs)."""
    from . import grad as _grad
    from .._creation import randn
    if masked:
        raise NotImplementedError("gradgradcheck(masked=True) is for sparse tensors, which ember does not have")
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise ValueError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    tupled = _as_tuple(inputs)
    if grad_outputs is None:
        outs = _as_tuple(func(*tupled))
        diff_outs = [o for o in outs if isinstance(o, D.Tensor) and o.requires_grad]
        gos = []
        for o in diff_outs:
            if o.is_complex():  # real and imaginary parts N(0, 1/2), as PyTorch's complex randn
                from ..ops.complex import complex as _complex
                rd = o.dtype.to_real()
                go = _complex(randn(*o.shape, dtype=rd), randn(*o.shape, dtype=rd)) * 0.5 ** 0.5
                gos.append(go.requires_grad_(True))
                continue
            g = randn(*o.shape, dtype=o.dtype)
            if gen_non_contig_grad_outputs and o.dim() > 0:
                g = randn(*(tuple(o.shape) + (2,)), dtype=o.dtype).select(-1, 0)
            gos.append(g.requires_grad_(True))
        grad_outputs = tuple(gos)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(tupled)
    n_go = len(grad_outputs)
    diff_idx = [i for i, a in enumerate(tupled) if _is_diff_input(a)]

    def new_func(*args):
        inp, gos = args[:n_in], args[n_in:]
        outs = _as_tuple(func(*inp))
        diff_outs = [o for o in outs if isinstance(o, D.Tensor) and o.requires_grad]
        diff_in = [inp[i] for i in diff_idx]
        if len(diff_outs) != n_go:
            raise GradcheckError(f"gradgradcheck: func has {len(diff_outs)} differentiable outputs but "
                                 f"{n_go} grad_outputs were given")
        grads = _grad(diff_outs, diff_in, list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return _gradcheck(new_func, tupled + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                      raise_exception=raise_exception, nondet_tol=nondet_tol,
                      check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
                      check_batched_grad=check_batched_grad, check_forward_ad=check_fwd_over_rev,
                      check_backward_ad=check_rev_over_rev, fast_mode=fast_mode, _recheck=True,
                      _name="gradgradcheck")
