"""op_db entries of the fused backward kernels added for speed (issue 22): each runs only where
nothing observes the backward (grad mode off, no transform) and must equal the composite rule."""
import op_db
from op_db import add, fixed, S, U

_reg = op_db._reg

add("gelu_backward", fn=_reg("gelu_backward"), oracle=False, grad=False,
    samples=fixed(lambda r: S((U(r, (3, 4)), U(r, (3, 4))), {}),
                  lambda r: S((U(r, (2, 5)), U(r, (2, 5))), {"approximate": "tanh"})))
op_db.NON_DIFFERENTIABLE.append("gelu_backward")
op_db.INTERNAL.append("gelu_backward")

add("softmax_backward", fn=_reg("softmax_backward"), oracle=False, grad=False,
    samples=fixed(lambda r: S((U(r, (3, 4)), U(r, (3, 4), 0.1, 1.0)), {"dim": 1}),
                  lambda r: S((U(r, (2, 3, 5)), U(r, (2, 3, 5), 0.1, 1.0)), {"dim": 0})))
op_db.NON_DIFFERENTIABLE.append("softmax_backward")
op_db.INTERNAL.append("softmax_backward")


def _sdpa(m, q, k, v, **kw):
    return op_db.F(m).scaled_dot_product_attention(q, k, v, **kw)


# the primitive (no mask tensor, no dropout): plain, causal (square and L != S), a scale, broadcast batch dims
add("scaled_dot_product_attention", fn=_sdpa,
    samples=fixed(lambda r: S((U(r, (2, 3, 5, 4)), U(r, (2, 3, 5, 4)), U(r, (2, 3, 5, 4)))),
                  lambda r: S((U(r, (2, 3, 5, 4)), U(r, (2, 3, 5, 4)), U(r, (2, 3, 5, 4))), {"is_causal": True}),
                  lambda r: S((U(r, (2, 6, 3)), U(r, (2, 4, 3)), U(r, (2, 4, 5))), {"is_causal": True, "scale": 0.7}),
                  lambda r: S((U(r, (2, 1, 5, 4)), U(r, (3, 6, 4)), U(r, (1, 6, 2))), desc="broadcast batch dims"),
                  lambda r: S((U(r, (5, 4)), U(r, (6, 4)), U(r, (6, 4))), {"is_causal": True})),
    fd_tol=1e-4)
add("scaled_dot_product_attention_backward", fn=_reg("scaled_dot_product_attention_backward"), oracle=False,
    grad=False,
    samples=fixed(lambda r: S((U(r, (2, 5, 3)), U(r, (2, 5, 4)), U(r, (2, 6, 4)), U(r, (2, 6, 3))),
                              {"scale": 0.5, "is_causal": True}),
                  lambda r: S((U(r, (2, 5, 3)), U(r, (5, 4)), U(r, (2, 6, 4)), U(r, (6, 3))),
                              {"scale": 0.5, "is_causal": False})))
op_db.NON_DIFFERENTIABLE.append("scaled_dot_product_attention_backward")
op_db.INTERNAL.append("scaled_dot_product_attention_backward")
