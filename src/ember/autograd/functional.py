"""ember.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp over the autograd engine.

Output structure follows PyTorch's: a Tensor argument (or result) stays a Tensor, a tuple stays
a tuple; jacobian of a tuple of outputs w.r.t. a tuple of inputs is a tuple (per output) of
tuples (per input), each of shape ``output.shape + input.shape``. Forward products (jvp, hvp)
use the double-backward trick, as PyTorch's do. The vectorized jacobian and the forward-mode
strategy use ember.func's vmap and ember.autograd.forward_ad.
"""
from .. import _dispatch as D
from .grad_mode import enable_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# ----------------------------------------------------------------------------- structure helpers


def _as_tuple(inp, arg_name, fn_name):
    """(whether inp was a tuple, inp as a tuple of Tensors)."""
    is_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, D.Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                                f"Tensors but the value at index {i} has type {type(el).__name__}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                            f"Tensors but the given {arg_name} has type {type(el).__name__}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh leaves (or, under create_graph, differentiable aliases) of the user's inputs."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], D.Tensor):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        return inputs
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {tuple(el_other.shape)} but got "
                               f"{tuple(el_v.shape)}.")


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    if input_type not in ("outputs", "grad_inputs", "jacobian", "hessian"):
        raise RuntimeError(f"Invalid input_type to _check_requires_grad: {input_type}")
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. "
                               f"This is not allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(f"The hessian of the user-provided function with respect to input {i} "
                                   f"is independent of the input. This is not allowed in strict mode. You "
                                   f"should ensure that your function is thrice differentiable and that "
                                   f"the hessian depends on the inputs.")
            if input_type == "jacobian":
                raise RuntimeError(f"While computing the hessian, found that the jacobian of the "
                                   f"user-provided function with respect to input {i} is independent of "
                                   f"the input. This is not allowed in strict mode. You should ensure that "
                                   f"your function is twice differentiable and that the jacobian depends "
                                   f"on the inputs (this would be violated by a linear function for "
                                   f"example).")
            if input_type == "grad_inputs":
                raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs "
                                   f"of the user-provided function. This is not allowed in strict mode.")
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. "
                               f"The outputs must be computed in a differentiable manner from the input "
                               f"when running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
                   is_grads_batched=False):
    """autograd.grad over the outputs that require grad; None for inputs nothing reaches."""
    from . import grad
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(g)
    if not new_outputs:
        return (None,) * len(inputs)
    return grad(new_outputs, inputs, new_grad_outputs, allow_unused=True, create_graph=create_graph,
                retain_graph=retain_graph, is_grads_batched=is_grads_batched)


_STRICT_MSGS = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed "
            "in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs "
                  "when using the double backward trick to compute forward mode gradients. This is not "
                  "allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not "
                   "allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the "
                         "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    from .._creation import zeros_like
    res = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_MSGS[stage].format(i=i))
            g = zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            if "double" not in stage:
                raise RuntimeError(f"The jacobian of the user-provided function is independent of input "
                                   f"{i}. This is not allowed in strict mode when create_graph=True.")
            raise RuntimeError(f"The hessian of the user-provided function is independent of input {i}. "
                               f"This is not allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _need_func(what):
    try:
        from ..func import vmap
    except ImportError as e:
        raise NotImplementedError(f"{what} needs ember.func.vmap, which is not available in this build of "
                                  f"ember ({e}); use vectorize=False.") from None
    return vmap


def _need_forward_ad(what):
    try:
        from . import forward_ad
    except ImportError as e:
        raise NotImplementedError(f"{what} needs ember.autograd.forward_ad, which is not available in this "
                                  f"build of ember ({e}); use strategy='reverse-mode'.") from None
    return forward_ad


# ----------------------------------------------------------------------------- products


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        else:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function returns a "
                                   "single Tensor with a single element.")
    grad_enabled = True if create_graph else D.grad_mode.enabled
    with set_grad_enabled(grad_enabled):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick."""
    from .._creation import zeros_like
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        else:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the user-provided "
                                   "function is a single Tensor with a single element.")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # vjp with a dummy cotangent u, then differentiate the (linear in u) result w.r.t. u along v
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    if create_graph:
        with enable_grad():
            grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
            result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    else:
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_outputs_tuple)


def _single_scalar_output(outputs, is_outputs_tuple, name):
    if is_outputs_tuple or not isinstance(outputs[0], D.Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single "
                           f"element")


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar function."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "vhp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        else:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the user-provided "
                                   "function is a single Tensor with a single element.")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vhp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _single_scalar_output(outputs, is_outputs_tuple, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    grad_enabled = True if create_graph else D.grad_mode.enabled
    with set_grad_enabled(grad_enabled):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar function, by the double-backward trick."""
    from .._creation import zeros_like
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "hvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        else:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the user-provided "
                                   "function is a single Tensor with a single element.")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "hvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _single_scalar_output(outputs, is_outputs_tuple, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    grad_enabled = True if create_graph else D.grad_mode.enabled
    with set_grad_enabled(grad_enabled):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


# ----------------------------------------------------------------------------- jacobian / hessian


def _onehot(out, m):
    import numpy as np
    arr = np.zeros(tuple(out.shape), dtype=out._data.dtype)
    arr.reshape(-1)[m] = 1
    return D._new_tensor(arr)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: d output / d input of shape output.shape + input.shape."""
    from .._creation import zeros, zeros_like
    from ..ops import stack
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more '
                         'performant. Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please '
                                      'either set `create_graph=False` or `strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)

        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` "
                                   "are not supported together. Please either set `strict=False` or "
                                   "`vectorize=False`.")
            jac = _jacrev_vectorized(outputs, inputs, create_graph)
        else:
            jac = []
            for i, out in enumerate(outputs):
                rows = tuple([] for _ in inputs)
                for m in range(out.numel()):
                    vj = _autograd_grad((out,), inputs, (_onehot(out, m),), retain_graph=True,
                                        create_graph=create_graph)
                    for el, (rows_el, vj_el, inp_el) in enumerate(zip(rows, vj, inputs)):
                        if vj_el is not None:
                            if strict and create_graph and not vj_el.requires_grad:
                                raise RuntimeError(f"The jacobian of the user-provided function is "
                                                   f"independent of input {i}. This is not allowed in "
                                                   f"strict mode when create_graph=True.")
                            rows_el.append(vj_el)
                        else:
                            if strict:
                                raise RuntimeError(f"Output {i} of the user-provided function is "
                                                   f"independent of input {el}. This is not allowed in "
                                                   f"strict mode.")
                            rows_el.append(zeros_like(inp_el))
                jac.append(tuple(
                    stack(rows_el, 0).reshape(tuple(out.shape) + tuple(inputs[el].shape)) if rows_el
                    else zeros(tuple(out.shape) + tuple(inputs[el].shape), dtype=inputs[el].dtype)
                    for el, rows_el in enumerate(rows)))
            jac = tuple(jac)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacrev_vectorized(outputs, inputs, create_graph):
    """All rows at once: autograd.grad with a batch of one-hot cotangents (vmap over the vjp)."""
    _need_func("jacobian(vectorize=True)")
    import numpy as np
    from .._creation import zeros
    sizes = [o.numel() for o in outputs]
    total = sum(sizes)
    dtype = np.result_type(*[o._data.dtype for o in outputs])
    eye = np.eye(total, dtype=dtype)
    grad_outputs, start = [], 0
    for o, n in zip(outputs, sizes):
        block = eye[:, start:start + n].astype(o._data.dtype).reshape((total,) + tuple(o.shape))
        grad_outputs.append(D._new_tensor(np.ascontiguousarray(block)))
        start += n
    grads = _autograd_grad(outputs, inputs, grad_outputs, create_graph=create_graph,
                           retain_graph=True, is_grads_batched=True)
    jac = []
    start = 0
    for o, n in zip(outputs, sizes):
        row = []
        for g, inp in zip(grads, inputs):
            shape = tuple(o.shape) + tuple(inp.shape)
            if g is None:
                row.append(zeros(shape, dtype=inp.dtype))
            else:
                row.append(g[start:start + n].reshape(shape))
        jac.append(tuple(row))
        start += n
    return tuple(jac)


def _jacfwd(func, inputs, strict, vectorize):
    """Forward-mode Jacobian: vmap over one-hot tangents of a dual-number evaluation."""
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
                           'are not supported together (yet). Please either set `strict=False` or '
                           '`strategy="reverse-mode"`.')
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is "
                                  "only implemented for `vectorize=True`.")
    import numpy as np
    from .._creation import zeros_like
    vmap = _need_func('jacobian(strategy="forward-mode")')
    fwAD = _need_forward_ad('jacobian(strategy="forward-mode")')
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    sizes = [x.numel() for x in inputs]
    total = sum(sizes)
    tangents, start = [], 0
    for x, n in zip(inputs, sizes):
        block = np.zeros((total, n), dtype=x._data.dtype)
        block[start:start + n] = np.eye(n, dtype=x._data.dtype)
        tangents.append(D._new_tensor(block.reshape((total,) + tuple(x.shape))))
        start += n
    shapes = {}

    def jvp_one(*ts):
        with fwAD.dual_level():
            duals = tuple(fwAD.make_dual(x.detach(), t) for x, t in zip(inputs, ts))
            outs = func(*duals)
            is_out_tuple, outs = _as_tuple(outs, "outputs of the user-provided function", "jacobian")
            shapes["is_tuple"] = is_out_tuple
            res = []
            for o in outs:
                primal, tangent = fwAD.unpack_dual(o)
                res.append(zeros_like(primal) if tangent is None else tangent)
            return tuple(res)

    out_tangents = vmap(jvp_one)(*tangents)
    is_outputs_tuple = shapes["is_tuple"]
    jac = []
    for jt in out_tangents:  # (total,) + out.shape
        out_shape = tuple(jt.shape[1:])
        n_out = int(np.prod(out_shape)) if out_shape else 1
        row, start = [], 0
        for x, n in zip(inputs, sizes):
            part = jt[start:start + n].reshape(n, n_out).t()
            row.append(part.reshape(out_shape + tuple(x.shape)))
            start += n
        jac.append(tuple(row))
    return _tuple_postprocess(tuple(jac), (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: the jacobian of its (differentiable) jacobian."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, D.Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a "
                               "single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))
