"""op_db entries of the complex-number primitives (ember/ops/complex.py).

The sample arrays are real: an entry builds its complex input z from one array x of shape
(..., 2) as x[..., 0] + 1j * x[..., 1] (or with ``complex``/``view_as_complex``) and returns real
outputs (``view_as_real`` of complex results), so that the harness's finite differences, gradient
checks against PyTorch, jvp and vmap all see real functions of real inputs with complex
intermediates."""
from op_db import BINARY_SHAPES, Sample, U, add, away, binary, fixed

# (no empty shapes where a complex result goes through view_as_real: PyTorch's ViewAsRealBackward0 refuses
#  the strides of an empty gradient)
SH = [s for s in BINARY_SHAPES if 0 not in s[0] + s[1]]
Z_SHAPES = [(5, 2), (2,), (2, 3, 2), (2, 1, 3, 2)]


def _z(m, x):
    return x.select(-1, 0) + x.select(-1, 1) * 1j


def zs(gen=U, shapes=Z_SHAPES):
    def samples(rng):
        return [Sample((gen(rng, s),), desc=str(s)) for s in shapes]
    return samples


def _away(r, s):
    return away(r, s, margin=0.2)


add("complex", fn=lambda m, x, y: m.view_as_real(m.complex(x, y)), samples=binary(shapes=SH))
add("real", fn=lambda m, x: m.real(_z(m, x)) * 1.0, samples=zs())
add("imag", fn=lambda m, x: m.imag(_z(m, x)) * 1.0, samples=zs())
add("view_as_real", fn=lambda m, x: m.view_as_real(_z(m, x) * (1 + 2j)), samples=zs())
add("view_as_complex", fn=lambda m, x: m.view_as_real(m.view_as_complex(x) * (0.5 - 1j)),
    samples=fixed(lambda r: Sample((U(r, (3, 2)),)), lambda r: Sample((U(r, (2, 4, 2)),)),
                  lambda r: Sample((U(r, (2,)),))))
add("conj_physical", fn=lambda m, x: m.view_as_real(m.conj_physical(_z(m, x) * (1 + 1j))), samples=zs())
add("angle", fn=lambda m, x: m.angle(_z(m, x)), samples=zs(_away))
add("angle", name="angle_real", fn=lambda m, x: m.angle(x),
    samples=fixed(lambda r: Sample((away(r, (2, 3)),)), lambda r: Sample((away(r, (4,)),))))
add("sgn", fn=lambda m, x: m.view_as_real(m.sgn(_z(m, x))), samples=zs(_away))
