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
