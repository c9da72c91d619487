"""op_db entries of the FFT primitives (ember/ops/fft.py): fft_c2c, fft_r2c, fft_c2r, each reached
through the public ember.fft / torch.fft functions with their n/s, dim and norm arguments.

Sample arrays are real; complex inputs are built from one array x of shape (..., 2) as
x[..., 0] + 1j * x[..., 1], and complex outputs leave through view_as_real, so the harness's
finite differences, comparisons with PyTorch, jvp and vmap see real functions of real inputs."""
from op_db import Sample, U, add, fixed


def _z(m, x):
    return x.select(-1, 0) + x.select(-1, 1) * 1j


def _r(m, out):
    return m.view_as_real(out.resolve_conj()) if out.is_complex() else out


def S(shape, **kw):
    return lambda r: Sample((U(r, shape),), kw, desc=f"{shape} {kw}")


C2C = fixed(S((8, 2)), S((3, 5, 2), norm="ortho"), S((3, 5, 2), n=7, dim=0), S((4, 6, 2), n=3, norm="forward"),
            S((1, 2)))
C2C_N = fixed(S((3, 4, 2)), S((3, 4, 2), s=(5, 3), norm="ortho"), S((2, 3, 4, 2), dim=(0, 2), norm="forward"))
R = fixed(S((8,)), S((3, 5), norm="ortho"), S((4, 6), n=5, dim=0), S((4, 6), n=9, norm="forward"), S((1,)))
R_N = fixed(S((3, 4)), S((3, 6), s=(4, 5), norm="ortho"), S((2, 3, 4), dim=(0, 2), norm="forward"),
            S((2, 3, 5)))
C2R = fixed(S((5, 2)), S((3, 4, 2), norm="ortho"), S((4, 6, 2), n=7, dim=0), S((4, 6, 2), n=4, norm="forward"),
            S((3, 5, 2), n=10))
C2R_N = fixed(S((3, 4, 2)), S((3, 4, 2), s=(5, 7), norm="ortho"), S((2, 3, 4, 2), dim=(0, 2), norm="forward"),
              S((3, 3, 2), s=(2, 4)))

for name in ("fft", "ifft"):
    add("fft_c2c", name=f"fft.{name}", fn=(lambda f: lambda m, x, **kw: _r(m, getattr(m.fft, f)(_z(m, x), **kw)))(name),
        samples=C2C)
    add("fft_c2c", name=f"fft.{name}_real", fn=(lambda f: lambda m, x, **kw: _r(m, getattr(m.fft, f)(x, **kw)))(name),
        samples=R)
for name in ("fft2", "ifft2", "fftn", "ifftn"):
    add("fft_c2c", name=f"fft.{name}", fn=(lambda f: lambda m, x, **kw: _r(m, getattr(m.fft, f)(_z(m, x), **kw)))(name),
        samples=C2C_N if name.endswith("n") else fixed(S((3, 4, 2)), S((2, 3, 4, 2), s=(2, 5), norm="ortho")))
for name in ("rfft", "ihfft"):
    add("fft_r2c", name=f"fft.{name}", fn=(lambda f: lambda m, x, **kw: _r(m, getattr(m.fft, f)(x, **kw)))(name),
        samples=R)
for name in ("rfft2", "ihfft2", "rfftn", "ihfftn"):
    add("fft_r2c", name=f"fft.{name}", fn=(lambda f: lambda m, x, **kw: _r(m, getattr(m.fft, f)(x, **kw)))(name),
        samples=R_N if name.endswith("n") else fixed(S((3, 4)), S((2, 3, 4), s=(2, 5), norm="ortho")))
for name in ("irfft", "hfft"):
    add("fft_c2r", name=f"fft.{name}", fn=(lambda f: lambda m, x, **kw: getattr(m.fft, f)(_z(m, x), **kw))(name),
        samples=C2R)
for name in ("irfft2", "hfft2", "irfftn", "hfftn"):
    add("fft_c2r", name=f"fft.{name}", fn=(lambda f: lambda m, x, **kw: getattr(m.fft, f)(_z(m, x), **kw))(name),
        samples=C2R_N if name.endswith("n") else fixed(S((3, 4, 2)), S((2, 3, 4, 2), s=(2, 5), norm="ortho")))
