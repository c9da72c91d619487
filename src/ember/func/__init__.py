"""ember.func: composable function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap) and
functional_call, as torch.func."""
from ._grad import grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian  # noqa: F401
from ._vmap import vmap  # noqa: F401
from ._functional_call import functional_call, stack_module_state  # noqa: F401
from ._ensemble import Ensemble  # noqa: F401

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call", "stack_module_state", "Ensemble"]
