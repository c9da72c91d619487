"""Sample database for the op registry: every primitive in ``ember._dispatch.REGISTRY`` has one or
more entries here, each saying how to call it through the public API and how to produce inputs.

An :class:`OpEntry` is written once for both libraries: ``fn(m, *tensors, **kwargs)`` receives the
module (``ember`` or ``torch``) as ``m`` and the tensor inputs, so the same lambda is the ember call
and the PyTorch oracle call (``torch_fn`` overrides it where the APIs differ, ``torch_fn=None`` with
``oracle=False`` where PyTorch has no public twin, e.g. the registry's private backward ops).

``entry.samples(rng)`` returns :class:`Sample` objects: ``args`` are NumPy arrays (they become
tensors, float ones differentiable unless their position is in ``nondiff``) or plain Python values
passed through unchanged; ``kwargs`` are passed to ``fn``. Inputs are kept away from the points
where an op is not differentiable (kinks, jumps, domain edges) so that finite differences are
meaningful.

Consumers (reverse mode here, forward mode and vmap elsewhere) use:

* ``ENTRIES``                         every entry
* ``entries_for(op_name)``            the entries of one registry op
* ``Sample.tensors(lib, dtype=None, requires_grad=False)``  the inputs as ember/torch tensors
* ``call(entry, lib, inputs, sample)``                       run the entry's function
* ``diff_outputs(out)``               the floating outputs of a call, flattened
* ``NON_DIFFERENTIABLE`` / ``INTERNAL`` classify the registry ops that are not checked by gradients
  through the public API.

``tests/test_ops_registry.py`` checks that every registry op has an entry and that each entry
really dispatches the op it claims (a dispatch listener records the ops run), so a new op cannot
skip testing.
"""
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np


# ----------------------------------------------------------------------------- the records


@dataclass
class Sample:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    nondiff: tuple = ()          # positions of float array args that must not require grad
    desc: str = ""
    grad: bool = True            # False: forward-only sample (e.g. nan/inf inputs)

    def diff_positions(self):
        return [i for i, a in enumerate(self.args)
                if isinstance(a, np.ndarray) and a.dtype.kind == "f" and i not in self.nondiff]

    def tensors(self, lib, dtype=None, requires_grad=False):
        """The args with arrays turned into ``lib`` tensors (copies). ``dtype`` recasts float
        arrays; ``requires_grad`` marks the differentiable ones."""
        diff = set(self.diff_positions())
        out = []
        for i, a in enumerate(self.args):
            if isinstance(a, np.ndarray):
                arr = a
                if dtype is not None and a.dtype.kind == "f":
                    arr = a.astype(dtype)
                t = lib.from_numpy(np.array(arr, copy=True))
                if requires_grad and i in diff:
                    t.requires_grad_(True)
                out.append(t)
            else:
                out.append(a)
        return out

    def __repr__(self):
        shapes = [list(a.shape) if isinstance(a, np.ndarray) else a for a in self.args]
        return f"Sample({self.desc or shapes}, {self.kwargs})"


@dataclass
class OpEntry:
    op: str                                   # registry name of the primitive under test
    name: str                                 # unique id of this entry
    fn: Callable                              # fn(m, *inputs, **kwargs), m = ember or torch
    samples: Callable                         # samples(rng) -> list[Sample]
    torch_fn: Optional[Callable] = None       # the oracle call when it differs from fn
    oracle: bool = True                       # False: no PyTorch twin to compare with
    grad: bool = True                         # gradient checks apply (differentiable op)
    gradgrad: bool = True                     # second-order check applies
    rtol: float = 1e-7                        # float64 comparisons against PyTorch
    atol: float = 1e-7
    fd_tol: float = 1e-5                      # finite-difference tolerance (float64)
    float32: bool = True                      # also compare in float32 against PyTorch
    notes: str = ""

    def torch_call(self):
        return self.torch_fn or self.fn


def call(entry, lib, inputs, sample, torch_side=False):
    f = entry.torch_call() if torch_side else entry.fn
    return f(lib, *inputs, **sample.kwargs)


def flat_outputs(out):
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(flat_outputs(o))
        return res
    return [out]


def diff_outputs(out):
    """Outputs of a call that carry gradient (floating tensors), flattened."""
    return [o for o in flat_outputs(out) if hasattr(o, "dtype") and o.dtype.is_floating_point]


# ----------------------------------------------------------------------------- input makers


def U(rng, shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape)


def away(rng, shape, lo=-2.0, hi=2.0, bad=(0.0,), margin=0.1):
    """Uniform values kept ``margin`` away from each point in ``bad``."""
    x = rng.uniform(lo, hi, shape)
    for _ in range(100):
        near = np.zeros(x.shape, bool)
        for b in bad:
            near |= np.abs(x - b) < margin
        if not near.any():
            return x
        x[near] = rng.uniform(lo, hi, int(near.sum()))
    return x


def away_int(rng, shape, lo=-3.0, hi=3.0, margin=0.1, half=False):
    """Values away from the integers (and from the half-integers when ``half``)."""
    bad = [float(k) for k in range(int(lo) - 1, int(hi) + 2)]
    if half:
        bad += [k + 0.5 for k in bad]
    return away(rng, shape, lo, hi, bad, margin)


def distinct(rng, shape, lo=-2.0, hi=2.0):
    """Values with no ties (max/min/sort/topk need a unique winner)."""
    n = int(np.prod(shape)) if len(shape) else 1
    v = np.linspace(lo, hi, max(n, 1))[:n] + rng.uniform(0, 1e-3, n)
    rng.shuffle(v)
    return v.reshape(shape)


def ints(rng, shape, lo=-5, hi=5, dtype=np.int64):
    return rng.integers(lo, hi, shape).astype(dtype)


def bools(rng, shape):
    return rng.random(shape) < 0.5


UNARY_SHAPES = [(), (5,), (2, 3), (0, 3), (2, 1, 3)]
BINARY_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)), ((3,), ()),
                 ((0, 3), (3,)), ((2, 1, 3), (4, 1))]


def unary(gen=U, shapes=UNARY_SHAPES, **kw):
    def samples(rng):
        return [Sample((gen(rng, s),), dict(kw), desc=str(s)) for s in shapes]
    return samples


def binary(gen_a=U, gen_b=None, shapes=BINARY_SHAPES, scalars=(), **kw):
    gen_b = gen_b or gen_a

    def samples(rng):
        out = [Sample((gen_a(rng, sa), gen_b(rng, sb)), dict(kw), desc=f"{sa} {sb}")
               for sa, sb in shapes]
        for s in scalars:
            out.append(Sample((gen_a(rng, (2, 3)), s), dict(kw), desc=f"(2, 3) scalar {s}"))
            out.append(Sample((s, gen_b(rng, (3,))), dict(kw), desc=f"scalar {s} (3,)"))
        return out
    return samples


def fixed(*samples_fns):
    """samples(rng) from a list of lambdas rng -> Sample."""
    def samples(rng):
        return [f(rng) for f in samples_fns]
    return samples


ENTRIES = []


def _reg_late(name):
    def f(m, *args, **params):
        from ember import _dispatch as D
        return D.REGISTRY[name](*args, **params)
    return f


def F(m):
    """torch.nn.functional, or ember's (the ops' own functions until ember.nn lands)."""
    if m.__name__ == "torch":
        return m.nn.functional
    try:
        import importlib
        return importlib.import_module(m.__name__ + ".nn.functional")
    except ImportError:
        return m


def add(op, name=None, fn=None, samples=None, **kw):
    e = OpEntry(op=op, name=name or op, fn=fn, samples=samples, **kw)
    if any(x.name == e.name for x in ENTRIES):
        raise RuntimeError(f"duplicate op_db entry {e.name}")
    ENTRIES.append(e)
    return e


def entries_for(op):
    return [e for e in ENTRIES if e.op == op]


S = Sample

# ----------------------------------------------------------------------------- arithmetic

add("add", fn=lambda m, a, b: m.add(a, b), samples=binary(scalars=(2.5, 3)))
add("add", "add_alpha", fn=lambda m, a, b: m.add(a, b, alpha=-1.5), samples=binary(shapes=BINARY_SHAPES[:3]))
add("add", "add_operator", fn=lambda m, a, b: a + b, samples=binary(shapes=BINARY_SHAPES[:2], scalars=(1.5,)))
add("sub", fn=lambda m, a, b: m.sub(a, b), samples=binary(scalars=(2.5,)))
add("sub", "rsub_operator", fn=lambda m, a, b: a - b, samples=binary(shapes=BINARY_SHAPES[:2], scalars=(2,)))
add("mul", fn=lambda m, a, b: m.mul(a, b), samples=binary(scalars=(2.5, -2)))
add("div", fn=lambda m, a, b: m.div(a, b),
    samples=binary(gen_b=lambda r, s: away(r, s, bad=(0.0,), margin=0.3), scalars=(2.5,)),
    fd_tol=1e-4)
add("reciprocal", "div_scalar_numerator", fn=lambda m, b: 3.0 / b,  # (reciprocal(b) * 3.0, as PyTorch)
    samples=unary(lambda r, s: away(r, s, margin=0.3)), fd_tol=1e-4)
add("div", "div_floor", fn=lambda m, a, b: m.div(a, b, rounding_mode="floor"),
    samples=fixed(lambda r: S((away_int(r, (2, 3), -6, 6), np.full((3,), 2.0)))))
add("div", "div_trunc", fn=lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
    samples=fixed(lambda r: S((away_int(r, (2, 3), -6, 6), np.full((3,), 2.0)))))
add("div", "div_int", fn=lambda m, a, b: m.div(a, b), grad=False,
    samples=fixed(lambda r: S((ints(r, (2, 3)), ints(r, (3,), 1, 4)))))
add("pow", fn=lambda m, a, b: m.pow(a, b),
    samples=binary(gen_a=lambda r, s: U(r, s, 0.5, 2.0), gen_b=lambda r, s: U(r, s, -2, 2),
                   scalars=()))
add("pow", "pow_scalar_exp", fn=lambda m, a, p: a ** p,
    samples=fixed(lambda r: S((U(r, (2, 3)), 2)), lambda r: S((U(r, (2, 3), 0.5, 2), -1.5)),
                  lambda r: S((U(r, (4,)), 3.0)), lambda r: S((U(r, (0, 2)), 2)),
                  lambda r: S((U(r, (3,)), 0)), lambda r: S((U(r, (2,), 0.5, 2), 0.5))))
add("pow", "pow_scalar_base", fn=lambda m, p, a: p ** a,
    samples=fixed(lambda r: S((2.0, U(r, (2, 3)))), lambda r: S((0.5, U(r, (3,))))))
add("pow", "pow_int", fn=lambda m, a, b: m.pow(a, b), grad=False,
    samples=fixed(lambda r: S((ints(r, (2, 3)), ints(r, (3,), 0, 4)))))
add("maximum", fn=lambda m, a, b: m.maximum(a, b), samples=binary(gen_a=distinct))
add("minimum", fn=lambda m, a, b: m.minimum(a, b), samples=binary(gen_a=distinct))
add("atan2", fn=lambda m, a, b: m.atan2(a, b),
    samples=binary(gen_b=lambda r, s: away(r, s, margin=0.3)), fd_tol=1e-4)
add("remainder", fn=lambda m, a, b: m.remainder(a, b),
    samples=fixed(lambda r: S((away_int(r, (2, 3), -5, 5), np.full((3,), 1.0))),
                  lambda r: S((away_int(r, (4,), -5, 5) * 0.5, np.array(0.5))),
                  lambda r: S((away_int(r, (2, 3), -5, 5), 1.0))))
add("remainder", "remainder_int", fn=lambda m, a, b: a % b, grad=False,
    samples=fixed(lambda r: S((ints(r, (2, 3)), ints(r, (3,), 1, 4)))))
add("fmod", fn=lambda m, a, b: m.fmod(a, b),
    samples=fixed(lambda r: S((away_int(r, (2, 3), -5, 5), np.full((3,), 1.0))),
                  lambda r: S((away_int(r, (2, 3), -5, 5), 1.0))))
add("floor_divide", fn=lambda m, a, b: a // b, grad=False,
    samples=fixed(lambda r: S((ints(r, (2, 3)), ints(r, (3,), 1, 4))),
                  lambda r: S((U(r, (2, 3), -5, 5), U(r, (3,), 0.5, 2)))))

# ----------------------------------------------------------------------------- unary maths

_pos = lambda r, s: U(r, s, 0.5, 2.0)  # noqa: E731
_unit = lambda r, s: U(r, s, -0.9, 0.9)  # noqa: E731
_nz = lambda r, s: away(r, s, margin=0.1)  # noqa: E731
UNARY = {
    "neg": U, "exp": U, "exp2": U, "log": _pos, "log2": _pos, "log10": _pos,
    "log1p": lambda r, s: U(r, s, -0.5, 2.0), "expm1": U, "sqrt": _pos, "rsqrt": _pos,
    "sin": U, "cos": U, "tan": lambda r, s: U(r, s, -1.2, 1.2), "asin": _unit, "acos": _unit,
    "atan": U, "sinh": U, "cosh": U, "tanh": U, "asinh": U, "atanh": _unit,
    "reciprocal": lambda r, s: away(r, s, margin=0.3), "sigmoid": U, "erf": U, "erfinv": _unit,
    "abs": _nz, "sign": _nz, "floor": away_int, "ceil": away_int, "trunc": away_int,
    "round": lambda r, s: away_int(r, s, half=True), "frac": away_int, "relu": _nz,
}
for _n, _g in UNARY.items():
    add(_n, fn=(lambda n: lambda m, x: getattr(m, n)(x))(_n), samples=unary(_g),
        fd_tol=1e-4 if _n in ("rsqrt", "reciprocal", "erfinv", "tan") else 1e-5)
add("neg", "neg_operator", fn=lambda m, x: -x, samples=unary(shapes=[(3,)]))
add("abs", "abs_int", fn=lambda m, x: m.abs(x), grad=False, samples=fixed(lambda r: S((ints(r, (5,)),))))
add("exp", "exp_int", fn=lambda m, x: m.exp(x), grad=False, samples=fixed(lambda r: S((ints(r, (5,)),))))
add("sqrt", "sqrt_method", fn=lambda m, x: x.sqrt(), samples=unary(_pos, shapes=[(3,)]))
add("round", "round_decimals", fn=lambda m, x: m.round(x, decimals=1),
    samples=fixed(lambda r: S((away_int(r, (5,), half=True) / 10 + 0.013,))))
add("sigmoid", "sigmoid_method", fn=lambda m, x: x.sigmoid(), samples=unary(shapes=[(4,)]))

add("leaky_relu", fn=lambda m, x: F(m).leaky_relu(x, 0.2), samples=unary(_nz))
add("elu", fn=lambda m, x: F(m).elu(x, 1.3), samples=unary(_nz))
add("elu", "selu", fn=lambda m, x: F(m).selu(x), samples=unary(_nz))
add("hardtanh", fn=lambda m, x: F(m).hardtanh(x, -1.0, 1.0),
    samples=unary(lambda r, s: away(r, s, bad=(-1.0, 1.0))))
add("gelu", fn=lambda m, x: F(m).gelu(x), samples=unary())
add("gelu", "gelu_tanh", fn=lambda m, x: F(m).gelu(x, approximate="tanh"), samples=unary())
add("silu", fn=lambda m, x: F(m).silu(x), samples=unary())
add("softplus", fn=lambda m, x: F(m).softplus(x), samples=unary())
add("log_sigmoid", fn=lambda m, x: F(m).logsigmoid(x), samples=unary())
add("mish", fn=lambda m, x: F(m).mish(x), samples=unary())
add("hardswish", fn=lambda m, x: F(m).hardswish(x), samples=unary(lambda r, s: away(r, s, -5.0, 5.0, bad=(-3.0, 3.0))))
add("hardsigmoid", fn=lambda m, x: F(m).hardsigmoid(x), samples=unary(lambda r, s: away(r, s, -5.0, 5.0, bad=(-3.0, 3.0))))
add("softplus", "softplus_beta", fn=lambda m, x: F(m).softplus(x, beta=2.0, threshold=3.0),
    samples=fixed(lambda r: S((away(r, (3, 4), -3, 3, bad=(1.5,)),))))
add("clamp", fn=lambda m, x: m.clamp(x, -0.5, 0.7),
    samples=unary(lambda r, s: away(r, s, bad=(-0.5, 0.7))))
add("clamp", "clamp_min", fn=lambda m, x: m.clamp(x, min=0.3), samples=unary(lambda r, s: away(r, s, bad=(0.3,))))
add("clamp", "clamp_max", fn=lambda m, x: x.clamp(max=0.3), samples=unary(lambda r, s: away(r, s, bad=(0.3,))))
add("clamp_tensor", fn=lambda m, x, lo, hi: m.clamp(x, lo, hi),
    samples=fixed(lambda r: S((distinct(r, (2, 3)), U(r, (3,), -1.5, -0.5), U(r, (2, 1), 0.5, 1.5)))))
add("clamp_tensor", "clamp_tensor_min", fn=lambda m, x, lo: m.clamp(x, min=lo),
    samples=fixed(lambda r: S((distinct(r, (2, 3)), U(r, (3,), -1.5, -0.5)))))
add("clamp_tensor", "clamp_tensor_max", fn=lambda m, x, hi: m.clamp(x, max=hi),
    samples=fixed(lambda r: S((distinct(r, (2, 3)), U(r, (2, 1), 0.5, 1.5)))))
add("nan_to_num", fn=lambda m, x: m.nan_to_num(x), samples=unary())
add("nan_to_num", "nan_to_num_special", fn=lambda m, x: m.nan_to_num(x, nan=1.0, posinf=9.0, neginf=-9.0),
    grad=False, samples=fixed(lambda r: S((np.array([np.nan, np.inf, -np.inf, 1.5]),))))

# ----------------------------------------------------------------------------- comparisons, logic

for _n in ("eq", "ne", "lt", "le", "gt", "ge"):
    add(_n, fn=(lambda n: lambda m, a, b: getattr(m, n)(a, b))(_n), grad=False,
        samples=fixed(lambda r: S((ints(r, (2, 3), -2, 2).astype(float), ints(r, (3,), -2, 2).astype(float))),
                      lambda r: S((ints(r, (2, 3), -2, 2), 1)),
                      lambda r: S((ints(r, (0, 3), -2, 2), ints(r, (3,), -2, 2)))))
for _n in ("logical_and", "logical_or", "logical_xor"):
    add(_n, fn=(lambda n: lambda m, a, b: getattr(m, n)(a, b))(_n), grad=False,
        samples=fixed(lambda r: S((bools(r, (2, 3)), bools(r, (3,)))),
                      lambda r: S((U(r, (2, 3)).round(), ints(r, (2, 3), -1, 2)))))
add("logical_not", fn=lambda m, a: m.logical_not(a), grad=False,
    samples=fixed(lambda r: S((bools(r, (2, 3)),)), lambda r: S((U(r, (4,)).round(),))))
for _n in ("isnan", "isinf", "isfinite"):
    add(_n, fn=(lambda n: lambda m, a: getattr(m, n)(a))(_n), grad=False,
        samples=fixed(lambda r: S((np.array([np.nan, np.inf, -np.inf, 1.5, 0.0]),)),
                      lambda r: S((ints(r, (3,)),))))
for _n, _o in (("bitwise_and", "__and__"), ("bitwise_or", "__or__"), ("bitwise_xor", "__xor__")):
    add(_n, fn=(lambda o: lambda m, a, b: getattr(a, o)(b))(_o), grad=False,
        samples=fixed(lambda r: S((ints(r, (2, 3), 0, 16), ints(r, (3,), 0, 16))),
                      lambda r: S((bools(r, (4,)), bools(r, (4,))))))
for _n, _o in (("bitwise_left_shift", "__lshift__"), ("bitwise_right_shift", "__rshift__")):
    add(_n, fn=(lambda o: lambda m, a, b: getattr(a, o)(b))(_o), grad=False,
        samples=fixed(lambda r: S((ints(r, (2, 3), -16, 16), ints(r, (3,), 0, 4))),
                      lambda r: S((ints(r, (4,), 0, 100, np.uint8), ints(r, (4,), 0, 3, np.uint8)))))
add("bitwise_not", fn=lambda m, a: ~a, grad=False,
    samples=fixed(lambda r: S((ints(r, (2, 3), 0, 16),)), lambda r: S((ints(r, (3,), 0, 100, np.uint8),))))
add("logical_not", "invert_bool", fn=lambda m, a: ~a, grad=False, samples=fixed(lambda r: S((bools(r, (5,)),))))
add("where", fn=lambda m, c, a, b: m.where(c, a, b),
    samples=fixed(lambda r: S((bools(r, (2, 3)), U(r, (2, 3)), U(r, (2, 3)))),
                  lambda r: S((bools(r, (2, 1)), U(r, (3,)), U(r, (2, 3)))),
                  lambda r: S((bools(r, (3,)), U(r, (2, 3)), 0.0)),
                  lambda r: S((bools(r, (0, 3)), U(r, (0, 3)), U(r, (3,))))))

# ----------------------------------------------------------------------------- reductions

_RED_SAMPLES = [
    lambda r: S((U(r, (2, 3, 4)),), {}, desc="all"),
    lambda r: S((U(r, (2, 3, 4)),), {"dim": 1}),
    lambda r: S((U(r, (2, 3, 4)),), {"dim": -1, "keepdim": True}),
    lambda r: S((U(r, (2, 3, 4)),), {"dim": (0, 2)}),
    lambda r: S((U(r, ()),), {}),
    lambda r: S((U(r, (0, 3)),), {"dim": 1}),
]
add("sum", fn=lambda m, x, **k: m.sum(x, **k), samples=fixed(*_RED_SAMPLES, lambda r: S((U(r, (0, 3)),))))
add("sum", "sum_method", fn=lambda m, x, **k: x.sum(**k),
    samples=fixed(lambda r: S((U(r, (2, 3)),), {"dim": 0})))
add("sum", "sum_int", fn=lambda m, x: m.sum(x), grad=False, samples=fixed(lambda r: S((ints(r, (3, 4)),))))
add("mean", fn=lambda m, x, **k: m.mean(x, **k), samples=fixed(*_RED_SAMPLES[:5]))
add("prod", fn=lambda m, x, **k: m.prod(x, **k),
    samples=fixed(lambda r: S((U(r, (2, 3)),)), lambda r: S((U(r, (2, 3)),), {"dim": 1}),
                  lambda r: S((U(r, (2, 3)),), {"dim": 0, "keepdim": True}),
                  lambda r: S((np.array([[1.5, 0.0, 2.0], [0.5, 0.7, 0.0]]),), {"dim": 1}),
                  lambda r: S((np.array([1.5, 0.0, 2.0, -0.5]),)),
                  lambda r: S((U(r, (0, 3)),), {"dim": 1})))
_RED_DISTINCT = [
    lambda r: S((distinct(r, (2, 3, 4)),)),
    lambda r: S((distinct(r, (2, 3, 4)),), {"dim": 1}),
    lambda r: S((distinct(r, (2, 3, 4)),), {"dim": (0, 2), "keepdim": True}),
    lambda r: S((distinct(r, ()),)),
]
add("amax", fn=lambda m, x, **k: m.amax(x, **k), samples=fixed(*_RED_DISTINCT))
add("amin", fn=lambda m, x, **k: m.amin(x, **k), samples=fixed(*_RED_DISTINCT))
add("amax", "amax_ties", fn=lambda m, x: m.amax(x, 1),
    samples=fixed(lambda r: S((np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]),))), gradgrad=False,
    notes="ties share the gradient equally (PyTorch's amax rule); FD is not defined at ties",
    fd_tol=None)
add("amax", "max_all", fn=lambda m, x: m.max(x), samples=fixed(*_RED_DISTINCT[:1]))
add("amin", "min_all", fn=lambda m, x: x.min(), samples=fixed(*_RED_DISTINCT[:1]))
add("max_dim", fn=lambda m, x, **k: m.max(x, **k),
    samples=fixed(lambda r: S((distinct(r, (2, 3, 4)),), {"dim": 1}),
                  lambda r: S((distinct(r, (2, 3)),), {"dim": -1, "keepdim": True}),
                  lambda r: S((distinct(r, (5,)),), {"dim": 0})))
add("min_dim", fn=lambda m, x, **k: m.min(x, **k),
    samples=fixed(lambda r: S((distinct(r, (2, 3, 4)),), {"dim": 1}),
                  lambda r: S((distinct(r, (2, 3)),), {"dim": 0, "keepdim": True})))
add("argmax", fn=lambda m, x, **k: m.argmax(x, **k), grad=False,
    samples=fixed(lambda r: S((distinct(r, (2, 3, 4)),)), lambda r: S((distinct(r, (2, 3, 4)),), {"dim": 1}),
                  lambda r: S((distinct(r, (2, 3)),), {"dim": 0, "keepdim": True})))
add("argmin", fn=lambda m, x, **k: m.argmin(x, **k), grad=False,
    samples=fixed(lambda r: S((distinct(r, (2, 3, 4)),)), lambda r: S((distinct(r, (2, 3, 4)),), {"dim": -1})))
for _n in ("all", "any"):
    add(_n, fn=(lambda n: lambda m, x, **k: getattr(m, n)(x, **k))(_n), grad=False,
        samples=fixed(lambda r: S((bools(r, (2, 3)),)), lambda r: S((bools(r, (2, 3)),), {"dim": 1}),
                      lambda r: S((ints(r, (2, 3), 0, 2),), {"dim": 0, "keepdim": True}),
                      lambda r: S((bools(r, (0, 3)),))))
add("count_nonzero", fn=lambda m, x, **k: m.count_nonzero(x, **k), grad=False,
    samples=fixed(lambda r: S((ints(r, (3, 4), 0, 2),)), lambda r: S((ints(r, (3, 4), 0, 2),), {"dim": 1})))
add("var", fn=lambda m, x, **k: m.var(x, **k),
    samples=fixed(lambda r: S((U(r, (3, 4)),)), lambda r: S((U(r, (3, 4)),), {"dim": 1}),
                  lambda r: S((U(r, (3, 4)),), {"dim": 0, "correction": 0, "keepdim": True}),
                  lambda r: S((U(r, (2, 3, 4)),), {"dim": (0, 2), "unbiased": False})))
add("std", fn=lambda m, x, **k: m.std(x, **k),
    samples=fixed(lambda r: S((U(r, (3, 4)),)), lambda r: S((U(r, (3, 4)),), {"dim": 1, "correction": 2}),
                  lambda r: S((U(r, (2, 3, 4)),), {"dim": (0, 2), "unbiased": False, "keepdim": True})))
add("logsumexp", fn=lambda m, x, **k: m.logsumexp(x, **k),
    samples=fixed(lambda r: S((U(r, (3, 4)),), {"dim": 1}), lambda r: S((U(r, (2, 3, 4)),), {"dim": (0, 2)}),
                  lambda r: S((U(r, (3, 4)) * 300,), {"dim": 0, "keepdim": True}, desc="large")))
add("softmax", fn=lambda m, x, d: m.softmax(x, d),
    samples=fixed(lambda r: S((U(r, (3, 4)), 1)), lambda r: S((U(r, (2, 3, 4)), 0)),
                  lambda r: S((U(r, (5,)), -1))))
add("log_softmax", fn=lambda m, x, d: m.log_softmax(x, d),
    samples=fixed(lambda r: S((U(r, (3, 4)), 1)), lambda r: S((U(r, (2, 3, 4)), 0))))
add("cumsum", fn=lambda m, x, d: m.cumsum(x, d),
    samples=fixed(lambda r: S((U(r, (3, 4)), 1)), lambda r: S((U(r, (3, 4)), 0)), lambda r: S((U(r, (5,)), 0)),
                  lambda r: S((U(r, (0, 4)), 1))))
add("cumprod", fn=lambda m, x, d: m.cumprod(x, d),
    samples=fixed(lambda r: S((U(r, (3, 4)), 1)), lambda r: S((U(r, (5,)), 0))))
add("linalg_vector_norm", "norm", fn=lambda m, x, **k: m.norm(x, **k),
    samples=fixed(lambda r: S((U(r, (3, 4)),)), lambda r: S((U(r, (3, 4)),), {"dim": 1}),
                  lambda r: S((U(r, (3, 4)),), {"dim": 0, "keepdim": True})))
add("linalg_vector_norm", "norm_p1", fn=lambda m, x, **k: m.norm(x, p=1, **k),
    samples=fixed(lambda r: S((_nz(r, (3, 4)),)), lambda r: S((_nz(r, (3, 4)),), {"dim": 1})))
add("linalg_vector_norm", "norm_p3", fn=lambda m, x, **k: m.norm(x, p=3, **k),
    samples=fixed(lambda r: S((_nz(r, (3, 4)),)), lambda r: S((_nz(r, (2, 3, 4)),), {"dim": (0, 2), "keepdim": True})))
add("linalg_vector_norm", "vector_norm", fn=lambda m, x, **k: m.linalg.vector_norm(x, **k),
    samples=fixed(lambda r: S((U(r, (3, 4)),), {"ord": 1.5, "dim": -1}), lambda r: S((U(r, (0, 4)),))))

# ----------------------------------------------------------------------------- views and shapes

add("view", fn=lambda m, x: x.view(3, 4), samples=fixed(lambda r: S((U(r, (2, 6)),)), lambda r: S((U(r, (12,)),))))
add("view", "view_infer", fn=lambda m, x: x.view(-1), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("view", "reshape_contig", fn=lambda m, x: m.reshape(x, (4, -1)), samples=fixed(lambda r: S((U(r, (2, 6)),))))
add("_unsafe_view", "reshape_noncontig", fn=lambda m, x: x.t().reshape(-1),
    samples=fixed(lambda r: S((U(r, (3, 4)),))))
add("view", "flatten", fn=lambda m, x: m.flatten(x, 1), samples=fixed(lambda r: S((U(r, (2, 3, 4)),))))
add("view", "unflatten", fn=lambda m, x: x.unflatten(1, (2, 3)), samples=fixed(lambda r: S((U(r, (2, 6)),))))
add("upsample_nearest", fn=lambda m, x, **k: F(m).interpolate(x, **k),
    samples=fixed(lambda r: S((U(r, (1, 2, 3)),), {"scale_factor": 2}),
                  lambda r: S((U(r, (1, 2, 3, 2)),), {"size": (5, 3)}),
                  lambda r: S((U(r, (1, 1, 2, 2, 3)),), {"scale_factor": 1.5})))
add("constant_pad_nd", fn=lambda m, x, p, **k: F(m).pad(x, p, **k),
    samples=fixed(lambda r: S((U(r, (2, 3, 4)), (1, 2))), lambda r: S((U(r, (2, 3, 4)), (1, 0, 2, 1)), {"value": 0.5}),
                  lambda r: S((U(r, (2, 5)), (-1, 2))), lambda r: S((U(r, (3,)), (0, 0)))))
add("permute", fn=lambda m, x: x.permute(2, 0, 1), samples=fixed(lambda r: S((U(r, (2, 3, 4)),))))
add("transpose", fn=lambda m, x: x.transpose(0, -1), samples=fixed(lambda r: S((U(r, (2, 3, 4)),))))
add("t", fn=lambda m, x: m.t(x), samples=fixed(lambda r: S((U(r, (2, 3)),)), lambda r: S((U(r, (3,)),))))
add("permute", "movedim", fn=lambda m, x: m.movedim(x, 0, 2), samples=fixed(lambda r: S((U(r, (2, 3, 4)),))))
add("transpose", "mT", fn=lambda m, x: x.mT, samples=fixed(lambda r: S((U(r, (2, 3, 4)),))))
add("expand", fn=lambda m, x: x.expand(2, 3, 4), samples=fixed(lambda r: S((U(r, (3, 1)),)), lambda r: S((U(r, (1, 4)),))))
add("expand", "expand_neg", fn=lambda m, x: x.expand(-1, 4), samples=fixed(lambda r: S((U(r, (3, 1)),))))
add("squeeze", fn=lambda m, x: x.squeeze(), samples=fixed(lambda r: S((U(r, (1, 3, 1)),))))
add("squeeze_dim", fn=lambda m, x: x.squeeze(2), samples=fixed(lambda r: S((U(r, (1, 3, 1)),))))
add("squeeze_dims", fn=lambda m, x: x.squeeze((0, 2)), samples=fixed(lambda r: S((U(r, (1, 3, 1)),))))
add("unsqueeze", fn=lambda m, x, d: x.unsqueeze(d),
    samples=fixed(lambda r: S((U(r, (2, 3)), 1)), lambda r: S((U(r, (2, 3)), 2)), lambda r: S((U(r, ()), 0))))
add("unsqueeze", "unsqueeze_neg", fn=lambda m, x: m.unsqueeze(x, -1), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("select", fn=lambda m, x: x.select(1, -1), samples=fixed(lambda r: S((U(r, (2, 3, 4)),))))
add("select", "getitem_int", fn=lambda m, x: x[1], samples=fixed(lambda r: S((U(r, (3, 4)),))))
add("select", "unbind", fn=lambda m, x: m.unbind(x, 1), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("slice", "narrow", fn=lambda m, x: x.narrow(1, 1, 2), samples=fixed(lambda r: S((U(r, (3, 4)),))))
add("slice", "getitem_slice", fn=lambda m, x: x[1:, ::2], samples=fixed(lambda r: S((U(r, (3, 5)),))))
add("slice", "split", fn=lambda m, x: m.split(x, 2, 1), samples=fixed(lambda r: S((U(r, (2, 5)),))))
add("slice", "chunk", fn=lambda m, x: x.chunk(3, 0), samples=fixed(lambda r: S((U(r, (7, 2)),))))
add("diagonal", fn=lambda m, x, **k: m.diagonal(x, **k),
    samples=fixed(lambda r: S((U(r, (3, 4)),)), lambda r: S((U(r, (3, 4)),), {"offset": 1}),
                  lambda r: S((U(r, (2, 3, 4)),), {"offset": -1, "dim1": 2, "dim2": 1})))
add("as_strided", fn=lambda m, x: m.as_strided(x, (2, 2), (1, 2)),
    samples=fixed(lambda r: S((U(r, (6,)),))), notes="overlapping windows accumulate in backward")
add("as_strided", "as_strided_overlap", fn=lambda m, x: m.as_strided(x, (3, 3), (1, 1), 1),
    samples=fixed(lambda r: S((U(r, (6,)),))))
add("cat", fn=lambda m, *xs, dim=0: m.cat(xs, dim),
    samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (1, 3))), {"dim": 0}),
                  lambda r: S((U(r, (2, 3)), U(r, (2, 1)), U(r, (2, 2))), {"dim": -1}),
                  lambda r: S((U(r, (2, 3)), U(r, (0, 3))), {"dim": 0}),
                  lambda r: S((U(r, (2, 3)), U(r, (0,))), {"dim": 0}, desc="legacy 1-d empty")))
add("stack", fn=lambda m, *xs, dim=0: m.stack(xs, dim),
    samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (2, 3))), {"dim": 0}),
                  lambda r: S((U(r, (2, 3)), U(r, (2, 3)), U(r, (2, 3))), {"dim": 2})))
add("repeat", fn=lambda m, x: x.repeat(2, 1, 3), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("repeat", "tile", fn=lambda m, x: m.tile(x, (2,)), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("flip", fn=lambda m, x: m.flip(x, (0, 2)), samples=fixed(lambda r: S((U(r, (2, 3, 4)),))))
add("roll", fn=lambda m, x: m.roll(x, 1, 1), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("roll", "roll_flat", fn=lambda m, x: m.roll(x, -2), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("roll", "roll_multi", fn=lambda m, x: m.roll(x, (1, 2), (0, 1)), samples=fixed(lambda r: S((U(r, (3, 4)),))))
add("tril", fn=lambda m, x, k=0: m.tril(x, k),
    samples=fixed(lambda r: S((U(r, (3, 4)),)), lambda r: S((U(r, (2, 3, 3)), -1))))
add("triu", fn=lambda m, x, k=0: m.triu(x, k),
    samples=fixed(lambda r: S((U(r, (3, 4)),)), lambda r: S((U(r, (2, 3, 3)), 1))))
add("clone", fn=lambda m, x: x.clone(), samples=unary(shapes=[(2, 3), ()]))
add("clone", "contiguous", fn=lambda m, x: x.t().contiguous(), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("_to_copy", fn=lambda m, x: x.to(m.float64, copy=True), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("_to_copy", "to_float32", fn=lambda m, x: x.float(), grad=False,
    samples=fixed(lambda r: S((U(r, (2, 3)),)), lambda r: S((ints(r, (3,)),))))
add("_to_copy", "to_int", fn=lambda m, x: x.to(m.int32), grad=False, samples=fixed(lambda r: S((U(r, (2, 3)) * 3,))))
add("_to_copy", "to_bool", fn=lambda m, x: x.bool(), grad=False, samples=fixed(lambda r: S((ints(r, (4,), -1, 2),))))

# ----------------------------------------------------------------------------- indexing

_IDX = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
add("index", "getitem_list", fn=lambda m, x: x[[0, 2, 2]], samples=fixed(lambda r: S((U(r, (3, 4)),))))
add("index", "getitem_tensor", fn=lambda m, x, i: x[:, i],
    samples=fixed(lambda r: S((U(r, (3, 4)), _IDX(3, 0, 0))), lambda r: S((U(r, (3, 4)), _IDX(-1)))))
add("index", "getitem_mask", fn=lambda m, x, k: x[k],
    samples=fixed(lambda r: S((U(r, (3, 4)), bools(r, (3, 4)))), lambda r: S((U(r, (3, 4)), bools(r, (3,))))))
add("index", "getitem_two_arrays", fn=lambda m, x: x[[0, 2], [1, 3]], samples=fixed(lambda r: S((U(r, (3, 4)),))))
add("index", "getitem_mixed", fn=lambda m, x: x[1:, None, [0, 3]], samples=fixed(lambda r: S((U(r, (3, 4)),))))
add("index_put", fn=lambda m, x, v: x.index_put((m.tensor([0, 2]),), v),
    samples=fixed(lambda r: S((U(r, (3, 4)), U(r, (2, 4)))), lambda r: S((U(r, (3, 4)), U(r, (4,))))))
add("index_put", "index_put_acc", fn=lambda m, x, v: x.index_put((m.tensor([0, 2, 0]),), v, accumulate=True),
    samples=fixed(lambda r: S((U(r, (3, 4)), U(r, (3, 4))))))
add("index_put", "setitem_mask", fn=lambda m, x, v, k: _setitem(x, k, v),
    samples=fixed(lambda r: S((U(r, (3, 4)), U(r, ()), bools(r, (3, 4))))))
add("gather", fn=lambda m, x, i, d=1: m.gather(x, d, i),
    samples=fixed(lambda r: S((U(r, (3, 4)), ints(r, (3, 2), 0, 4))),
                  lambda r: S((U(r, (3, 4)), ints(r, (2, 4), 0, 3), 0))))
add("scatter", fn=lambda m, x, i, s: m.scatter(x, 1, i, s),
    samples=fixed(lambda r: S((U(r, (3, 4)), np.array([[0, 1], [2, 3], [3, 0]]), U(r, (3, 2))))))
add("scatter", "scatter_value", fn=lambda m, x, i: x.scatter(0, i, 1.5),
    samples=fixed(lambda r: S((U(r, (3, 4)), np.array([[0, 1, 2, 0]])))))
add("scatter_add", fn=lambda m, x, i, s: m.scatter_add(x, 0, i, s),
    samples=fixed(lambda r: S((U(r, (3, 4)), ints(r, (2, 4), 0, 3), U(r, (2, 4))))))
add("index_select", fn=lambda m, x, i, d=0: m.index_select(x, d, i),
    samples=fixed(lambda r: S((U(r, (3, 4)), _IDX(2, 0, 2))), lambda r: S((U(r, (3, 4)), _IDX(1, 3), 1)),
                  lambda r: S((U(r, (3, 4)), np.zeros((0,), np.int64)))))
add("index_add", fn=lambda m, x, i, s: m.index_add(x, 0, i, s),
    samples=fixed(lambda r: S((U(r, (3, 4)), _IDX(0, 2, 0), U(r, (3, 4))))))
add("index_add", "index_add_alpha", fn=lambda m, x, i, s: x.index_add(1, i, s, alpha=2.0),
    samples=fixed(lambda r: S((U(r, (3, 4)), _IDX(3, 1), U(r, (3, 2))))))
add("masked_fill", fn=lambda m, x, k: m.masked_fill(x, k, -1.5),
    samples=fixed(lambda r: S((U(r, (3, 4)), bools(r, (3, 4)))), lambda r: S((U(r, (3, 4)), bools(r, (4,))))))
add("nonzero", fn=lambda m, x: m.nonzero(x), grad=False,
    samples=fixed(lambda r: S((ints(r, (3, 4), 0, 2),)), lambda r: S((U(r, (5,)).round(),))))
add("sort", fn=lambda m, x, **k: m.sort(x, **k),
    samples=fixed(lambda r: S((distinct(r, (3, 4)),)), lambda r: S((distinct(r, (3, 4)),), {"dim": 0, "descending": True}),
                  lambda r: S((distinct(r, (5,)),), {"stable": True})))
add("sort", "argsort", fn=lambda m, x: m.argsort(x, dim=1), grad=False, samples=fixed(lambda r: S((distinct(r, (3, 4)),))))
add("topk", fn=lambda m, x, k, **kw: m.topk(x, k, **kw),
    samples=fixed(lambda r: S((distinct(r, (3, 5)), 2)), lambda r: S((distinct(r, (3, 5)), 2), {"dim": 0, "largest": False}),
                  lambda r: S((distinct(r, (6,)), 3))))

# ----------------------------------------------------------------------------- linalg

add("matmul", fn=lambda m, a, b: m.matmul(a, b),
    samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (3, 4)))), lambda r: S((U(r, (3,)), U(r, (3,)))),
                  lambda r: S((U(r, (2, 3)), U(r, (3,)))), lambda r: S((U(r, (3,)), U(r, (3, 2)))),
                  lambda r: S((U(r, (2, 2, 3)), U(r, (3, 4)))), lambda r: S((U(r, (2, 1, 2, 3)), U(r, (3, 3, 2)))),
                  lambda r: S((U(r, (4,)), U(r, (2, 4, 3)))), lambda r: S((U(r, (0, 3)), U(r, (3, 2)))),
                  lambda r: S((U(r, (2, 0)), U(r, (0, 3))))))
add("matmul", "matmul_operator", fn=lambda m, a, b: a @ b, samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (3, 4))))))
add("matmul", "mm", fn=lambda m, a, b: m.mm(a, b), samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (3, 4))))))
add("matmul", "bmm", fn=lambda m, a, b: m.bmm(a, b), samples=fixed(lambda r: S((U(r, (2, 2, 3)), U(r, (2, 3, 4))))))
add("matmul", "mv", fn=lambda m, a, b: m.mv(a, b), samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (3,))))))
add("matmul", "dot", fn=lambda m, a, b: m.dot(a, b), samples=fixed(lambda r: S((U(r, (3,)), U(r, (3,))))))
add("addmm", fn=lambda m, c, a, b, **k: m.addmm(c, a, b, **k),
    samples=fixed(lambda r: S((U(r, (2, 4)), U(r, (2, 3)), U(r, (3, 4))), {"beta": 0.5, "alpha": 2.0}),
                  lambda r: S((U(r, (4,)), U(r, (2, 3)), U(r, (3, 4))), {"beta": 0.5, "alpha": 2.0}),
                  lambda r: S((U(r, (4,)), U(r, (2, 3)), U(r, (3, 4)))),
                  lambda r: S((U(r, (2, 1)), U(r, (2, 3)), U(r, (3, 4))), {"beta": 0.0})))
add("mul", "outer", fn=lambda m, a, b: m.outer(a, b), samples=fixed(lambda r: S((U(r, (3,)), U(r, (4,))))))
add("linear", fn=lambda m, x, w, b=None: F(m).linear(x, w, b),
    samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (4, 3)), U(r, (4,)))), lambda r: S((U(r, (2, 5, 3)), U(r, (4, 3)))),
                  lambda r: S((U(r, (3,)), U(r, (4, 3)), U(r, (4,))))))
add("einsum", fn=lambda m, eq, *xs: m.einsum(eq, *xs),
    samples=fixed(lambda r: S(("ij,jk->ik", U(r, (2, 3)), U(r, (3, 4)))),
                  lambda r: S(("bij,bjk->bik", U(r, (2, 2, 3)), U(r, (2, 3, 4)))),
                  lambda r: S(("ii->i", U(r, (3, 3)))), lambda r: S(("ij->", U(r, (2, 3)))),
                  lambda r: S(("i,j->ij", U(r, (2,)), U(r, (3,)))),
                  lambda r: S(("...ij,...jk", U(r, (2, 2, 3)), U(r, (3, 4))))))


add("cross_entropy", fn=lambda m, x, t, **k: F(m).cross_entropy(x, t, **k),
    samples=fixed(lambda r: S((U(r, (4, 5)), ints(r, (4,), 0, 5))),
                  lambda r: S((U(r, (4, 5)), np.array([0, 1, 1, 4])), {"ignore_index": 1, "reduction": "sum"}),
                  lambda r: S((U(r, (3, 4)), ints(r, (3,), 0, 4)), {"reduction": "none"})))
add("cross_entropy", "cross_entropy_primitive", fn=_reg_late("cross_entropy"), oracle=False,
    samples=fixed(lambda r: S((U(r, (4, 5)), np.array([0, 2, 1, 4])), {"ignore_index": 2, "reduction": "mean"}),
                  lambda r: S((U(r, (3, 4)), ints(r, (3,), 0, 4)), {"ignore_index": -100, "reduction": "none"})))
add("cross_entropy_backward", fn=_reg_late("cross_entropy_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, ()), U(r, (4, 5)), np.array([0, 2, 1, 4])), {"ignore_index": 2, "reduction": "mean"}),
                  lambda r: S((U(r, ()), U(r, (3, 4)), ints(r, (3,), 0, 4)), {"ignore_index": -100, "reduction": "sum"}),
                  lambda r: S((U(r, (3,)), U(r, (3, 4)), ints(r, (3,), 0, 4)), {"ignore_index": -100, "reduction": "none"})))
add("group_norm", fn=lambda m, x, G, w=None, b=None, **k: F(m).group_norm(x, G, w, b, **k),
    samples=fixed(lambda r: S((U(r, (2, 4, 3)), 2, U(r, (4,)), U(r, (4,)))),
                  lambda r: S((U(r, (3, 6)), 3), {"eps": 1e-3}),
                  lambda r: S((U(r, (1, 4, 2, 2)), 4, U(r, (4,)))),
                  lambda r: S((U(r, (2, 2, 3)), 1))), fd_tol=1e-4)
add("nll_loss", fn=lambda m, x, t, **k: F(m).nll_loss(x, t, **k),
    samples=fixed(lambda r: S((U(r, (4, 5)), ints(r, (4,), 0, 5))),
                  lambda r: S((U(r, (4, 5)), np.array([0, 1, 1, 4])), {"ignore_index": 1}),
                  lambda r: S((U(r, (4, 5)), np.array([0, 1, 1, 4])), {"ignore_index": 1, "reduction": "sum"}),
                  lambda r: S((U(r, (3, 4)), ints(r, (3,), 0, 4)), {"reduction": "none"})))
add("layer_norm", fn=lambda m, x, ns, w=None, b=None, **k: F(m).layer_norm(x, ns, w, b, **k),
    samples=fixed(lambda r: S((U(r, (2, 3, 4)), (4,), U(r, (4,)), U(r, (4,)))),
                  lambda r: S((U(r, (3, 4)), (3, 4)), {"eps": 1e-3}),
                  lambda r: S((U(r, (2, 3, 4)), (3, 4), U(r, (3, 4)))),
                  lambda r: S((U(r, (5,)), (5,), None, U(r, (5,))))))
add("binary_cross_entropy", fn=lambda m, x, t, **k: F(m).binary_cross_entropy(x, t, **k),
    samples=fixed(lambda r: S((U(r, (3, 4), 0.1, 0.9), U(r, (3, 4), 0.0, 1.0))),
                  lambda r: S((U(r, (3, 4), 0.1, 0.9), U(r, (3, 4), 0.0, 1.0)), {"reduction": "sum"}),
                  lambda r: S((U(r, (5,), 0.1, 0.9), U(r, (5,), 0.0, 1.0)), {"reduction": "none"}, nondiff=(1,))),
    fd_tol=1e-4)
add("binary_cross_entropy_with_logits", fn=lambda m, x, t, **k: F(m).binary_cross_entropy_with_logits(x, t, **k),
    samples=fixed(lambda r: S((U(r, (3, 4)), U(r, (3, 4), 0.0, 1.0))),
                  lambda r: S((U(r, (3, 4)), U(r, (3, 4), 0.0, 1.0)), {"reduction": "sum"}),
                  lambda r: S((U(r, (5,)), U(r, (5,), 0.0, 1.0)), {"reduction": "none"}, nondiff=(1,))))
add("smooth_l1_loss", fn=lambda m, x, t, **k: F(m).smooth_l1_loss(x, t, **k),
    samples=fixed(lambda r: S((away(r, (3, 4), bad=(-1.0, 1.0)), np.zeros((3, 4)))),
                  lambda r: S((away(r, (3, 4), bad=(-0.5, 0.5)), np.zeros((3, 4))), {"reduction": "sum", "beta": 0.5}),
                  lambda r: S((away(r, (5,), bad=(-1.0, 1.0)), np.zeros((5,))), {"reduction": "none"}, nondiff=(1,))))
add("huber_loss", fn=lambda m, x, t, **k: F(m).huber_loss(x, t, **k),
    samples=fixed(lambda r: S((away(r, (3, 4), bad=(-1.0, 1.0)), np.zeros((3, 4)))),
                  lambda r: S((away(r, (3, 4), bad=(-0.5, 0.5)), np.zeros((3, 4))), {"reduction": "sum", "delta": 0.5}),
                  lambda r: S((away(r, (5,), bad=(-1.0, 1.0)), np.zeros((5,))), {"reduction": "none"}, nondiff=(1,))))
add("mse_loss", fn=lambda m, x, t, **k: F(m).mse_loss(x, t, **k),
    samples=fixed(lambda r: S((U(r, (3, 4)), U(r, (3, 4)))),
                  lambda r: S((U(r, (3, 4)), U(r, (3, 4))), {"reduction": "sum"}),
                  lambda r: S((U(r, (3, 4)), U(r, (3, 4))), {"reduction": "none"}),
                  lambda r: S((U(r, (2, 3)), U(r, (2, 3))), nondiff=(1,))))


# ----------------------------------------------------------------------------- in place (functional form)


def _setitem(x, k, v):
    y = x.clone()
    y[k] = v
    return y


def _copy(x, s):
    y = x.clone()
    y.copy_(s)
    return y


def _fill(x, v):
    y = x.clone()
    y.fill_(v)
    return y


add("copy", fn=lambda m, x, s: _copy(x, s),
    samples=fixed(lambda r: S((U(r, (2, 3)), U(r, (2, 3)))), lambda r: S((U(r, (2, 3)), U(r, (3,))))))
add("fill", fn=lambda m, x: _fill(x, 2.5), samples=fixed(lambda r: S((U(r, (2, 3)),))))
add("fill_tensor", fn=lambda m, x, v: _fill(x, v), samples=fixed(lambda r: S((U(r, (2, 3)), U(r, ())))))

# ----------------------------------------------------------------------------- private backward ops
# Called through the registry (no public twin): their gradients are still checked, since they
# appear in double-backward graphs.


def _reg(name):
    def f(m, *args, **params):
        from ember import _dispatch as D
        return D.REGISTRY[name](*args, **params)
    return f


add("select_backward", fn=_reg("select_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, (2, 4)),), {"shape": (2, 3, 4), "dim": 1, "index": 2})))
add("slice_backward", fn=_reg("slice_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, (2, 2)),), {"shape": (2, 5), "dim": 1, "start": 1, "stop": 5, "step": 2})))
add("diagonal_backward", fn=_reg("diagonal_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, (3,)),), {"shape": (3, 4), "offset": 1, "dim1": 0, "dim2": 1})))
add("as_strided_backward", fn=_reg("as_strided_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, (3, 3)),), {"shape": (6,), "size": (3, 3), "stride": (1, 1), "offset": 1})))
add("as_strided_scatter", fn=_reg("as_strided_scatter"), oracle=False,
    samples=fixed(lambda r: S((U(r, (6,)), U(r, (2, 2))), {"size": (2, 2), "stride": (1, 3), "offset": 1})))
add("index_backward", fn=_reg("index_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, (3, 4)),), {"shape": (3, 4), "spec": ([0, 2, 2],)})))

# ----------------------------------------------------------------------------- nn kernels (ember.ops.nn)


def _nn_kernels():
    from ember.ops import nn as K
    return K


def _pool_idx(x, kernel, stride, pad):
    return _nn_kernels()._max_pool_core(np, x, kernel, stride, pad, (1, 1), False, True)[1]


add("conv2d", fn=lambda m, x, w, b=None, **kw: F(m).conv2d(x, w, b, **kw),
    samples=fixed(lambda r: S((U(r, (1, 2, 3, 3)), U(r, (2, 2, 2, 2)), U(r, (2,))), {"padding": 1, "stride": 2}),
                  lambda r: S((U(r, (2, 4, 5, 4)), U(r, (4, 2, 3, 3))), {"padding": "same", "groups": 2}),
                  lambda r: S((U(r, (1, 3, 4, 12)), U(r, (2, 3, 3, 3)), U(r, (2,))), {"padding": 1}),
                  lambda r: S((U(r, (2, 3, 6, 5)), U(r, (2, 3, 1, 1))), {"stride": 2})), fd_tol=1e-4)
add("conv2d_backward_input", "conv_transpose2d", fn=lambda m, x, w, b=None, **kw: F(m).conv_transpose2d(x, w, b, **kw),
    samples=fixed(lambda r: S((U(r, (1, 2, 2, 2)), U(r, (2, 2, 2, 2)), U(r, (4,))), {"stride": 2, "groups": 2}),
                  lambda r: S((U(r, (2, 3, 3, 3)), U(r, (3, 2, 3, 3))), {"stride": 2, "padding": 1,
                                                                         "output_padding": 1})), fd_tol=1e-4)
add("conv2d_backward_weight", fn=_reg("conv2d_backward_weight"), oracle=False,
    samples=fixed(lambda r: S((U(r, (1, 2, 3, 3)), U(r, (1, 2, 2, 2))),
                              {"ksize": (2, 2), "stride": (1, 1), "pad": (0, 0, 0, 0), "dilation": (1, 1),
                               "groups": 1, "nhwc": False, "wcl": False})), fd_tol=1e-4)
add("max_pool2d", fn=_reg("max_pool2d"), torch_fn=lambda m, x, **kw: m.nn.functional.max_pool2d(x, 3, 2, 1),
    grad=False, samples=fixed(lambda r: S((distinct(r, (2, 3, 5, 6)),), {
        "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "dilation": (1, 1), "ceil_mode": False}, desc="k3 s2 p1")))
add("max_pool2d_with_indices", fn=lambda m, x, **kw: F(m).max_pool2d(x, return_indices=True, **kw),
    samples=fixed(lambda r: S((distinct(r, (1, 2, 5, 5)),), {"kernel_size": 3, "stride": 2, "padding": 1}),
                  lambda r: S((distinct(r, (2, 2, 4, 6)),), {"kernel_size": 2, "ceil_mode": True})))
add("max_pool2d_with_indices_backward", fn=_reg("max_pool2d_with_indices_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, (1, 2, 3, 3)), _pool_idx(distinct(r, (1, 2, 5, 5)), (3, 3), (2, 2), (1, 1))),
                              {"in_shape": (1, 2, 5, 5), "nhwc": False, "overlap": True})))
add("avg_pool2d", fn=lambda m, x, **kw: F(m).avg_pool2d(x, **kw),
    samples=fixed(lambda r: S((U(r, (1, 2, 5, 5)),), {"kernel_size": 3, "stride": 2, "padding": 1,
                                                      "ceil_mode": True, "count_include_pad": False}),
                  lambda r: S((U(r, (2, 2, 4, 6)),), {"kernel_size": 2})))
add("avg_pool2d_backward", fn=_reg("avg_pool2d_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, (1, 2, 3, 3)),), {"in_shape": (1, 2, 5, 5), "nhwc": False, "kernel": (3, 3),
                                                      "stride": (2, 2), "pad": (1, 1), "ceil_mode": False,
                                                      "count_include_pad": True, "divisor_override": None})))
add("batch_norm", fn=lambda m, x, w, b: F(m).batch_norm(x, None, None, w, b, training=True),
    samples=fixed(lambda r: S((U(r, (3, 2, 2, 2)), U(r, (2,)), U(r, (2,)))),
                  lambda r: S((U(r, (4, 3)), U(r, (3,)), U(r, (3,))))), fd_tol=1e-4)
add("batch_norm", "batch_norm_eval",
    fn=lambda m, x, rm, rv, w, b: F(m).batch_norm(x, rm, rv, w, b, training=False),
    samples=fixed(lambda r: S((U(r, (3, 2, 2, 2)), U(r, (2,)), U(r, (2,), 0.5, 2), U(r, (2,)), U(r, (2,))),
                              nondiff=(1, 2))))
add("batch_norm_backward", fn=_reg("batch_norm_backward"), oracle=False, grad=False,
    samples=fixed(lambda r: S((U(r, (3, 2, 2, 2)), U(r, (3, 2, 2, 2)), U(r, (2,)), U(r, (2,)), U(r, (2,), 0.5, 2)),
                              {"training": True})))
add("layer_norm_backward", fn=_reg("layer_norm_backward"), oracle=False, grad=False,
    samples=fixed(lambda r: S((U(r, (2, 3, 4)), U(r, (2, 3, 4)), U(r, (4,))), {"normalized_shape": (4,), "eps": 1e-5}),
                  lambda r: S((U(r, (3, 4)), U(r, (3, 4)), None), {"normalized_shape": (3, 4), "eps": 1e-5})))
add("group_norm_backward", fn=_reg("group_norm_backward"), oracle=False, grad=False,
    samples=fixed(lambda r: S((U(r, (2, 4, 3)), U(r, (2, 4, 3)), U(r, (4,))), {"groups": 2, "eps": 1e-5}),
                  lambda r: S((U(r, (3, 6)), U(r, (3, 6)), None), {"groups": 3, "eps": 1e-5})))
add("embedding", fn=lambda m, i, w, **kw: F(m).embedding(i, w, **kw),
    samples=fixed(lambda r: S((ints(r, (2, 3), 0, 5), U(r, (5, 3)))),
                  lambda r: S((ints(r, (4,), 0, 5), U(r, (5, 2))), {"padding_idx": 1}, desc="padding_idx (its row's gradient is zero by definition)",
                              grad=False)))
add("embedding_backward", fn=_reg("embedding_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, (2, 3, 2)), ints(r, (2, 3), 0, 4)), {"num_weights": 4})))

# PyTorch's twins for the registry-only entries are not needed; everything else is compared.

NON_DIFFERENTIABLE = sorted(n for n in (
    "floor_divide", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "logical_not", "isnan", "isinf", "isfinite", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "bitwise_not", "argmax", "argmin", "all", "any", "count_nonzero", "nonzero", "max_pool2d",
    "batch_norm_backward", "layer_norm_backward", "group_norm_backward"))
INTERNAL = ("select_backward", "slice_backward", "diagonal_backward", "as_strided_backward",
            "as_strided_scatter", "index_backward", "conv2d_backward_weight", "max_pool2d_with_indices_backward",
            "avg_pool2d_backward", "embedding_backward", "batch_norm_backward",
            "layer_norm_backward", "group_norm_backward")
NON_DIFFERENTIABLE, INTERNAL = list(NON_DIFFERENTIABLE), list(INTERNAL)


def _load_family_files():
    """Entries of the newer op families live in files of their own, ``tests/op_db_<family>.py``
    (each does ``from op_db import add, ...`` and calls ``add``; it extends NON_DIFFERENTIABLE
    and INTERNAL in place), so that families grow without touching this file."""
    import importlib
    import pathlib
    import sys
    sys.modules.setdefault("op_db", sys.modules[__name__])
    for path in sorted(pathlib.Path(__file__).parent.glob("op_db_*.py")):
        importlib.import_module(path.stem)
    NON_DIFFERENTIABLE.sort()


_load_family_files()


def sample_list(entry, seed=0):
    rng = np.random.default_rng(zlib.crc32(entry.name.encode()) + seed)
    return entry.samples(rng)


__all__ = ["Sample", "OpEntry", "ENTRIES", "entries_for", "call", "flat_outputs", "diff_outputs",
           "NON_DIFFERENTIABLE", "INTERNAL", "sample_list"]
