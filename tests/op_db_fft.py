"""op_db entries of the FFT primitives (ember/ops/fft.py): fft_c2c, fft_r2c, fft_c2r, each reached
through the public ember.fft / torch.fft functions with their n/s, dim and norm arguments.

Sample arrays are real; complex inputs are built from one array x of shape (..., 2) as
x[..., 0] + 1j * x[..., 1], and complex outputs leave through view_as_real, so the harness's
finite differences, comparisons with PyTorch, jvp and vmap see real functions of real inputs."""
from op_db import Sample, U, _reg_late, add, fixed


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


# stft's framing primitive and its adjoint (the overlap-add), through ember.stft / ember.istft
def _stft(m, x, **kw):
    w = m.hann_window(kw.pop("win", 8), dtype=x.dtype if x.is_floating_point() else m.float64)
    return m.view_as_real(m.stft(x, window=w, return_complex=True, **kw))


def _istft(m, x, **kw):
    w = m.hann_window(kw["n_fft"], dtype=x.dtype if x.is_floating_point() else m.float64)
    return m.istft(_z(m, x), window=w, **kw)


add("stft_frames", name="stft", fn=_stft,
    samples=fixed(S((20,), n_fft=8, hop_length=2), S((2, 21), n_fft=8, hop_length=3, pad_mode="constant"),
                  S((2, 19), n_fft=8, hop_length=8, center=False), S((17,), n_fft=8, pad_mode="replicate"),
                  S((2, 13), n_fft=8, hop_length=3, pad_mode="circular", normalized=True, onesided=False)))
add("stft_frames_backward", name="istft", fn=_istft,
    samples=fixed(S((5, 9, 2), n_fft=8, hop_length=2), S((2, 5, 7, 2), n_fft=8, hop_length=3, length=15),
                  S((8, 4, 2), n_fft=8, hop_length=2, onesided=False, return_complex=True),
                  S((5, 9, 2), n_fft=8, hop_length=2, length=20)))
add("stft_frames_backward", name="stft_frames_backward", fn=_reg_late("stft_frames_backward"), oracle=False,
    samples=fixed(S((11, 8), length=20, n_fft=8, hop=2, pad=4, mode="reflect"),
                  S((2, 3, 5), length=9, n_fft=5, hop=3, pad=2, mode="replicate"),
                  S((6, 6), length=10, n_fft=6, hop=2, pad=3, mode="circular"),
                  S((3, 5), length=13, n_fft=5, hop=3, pad=0, mode="constant")))
add("stft_frames", name="stft_window", fn=lambda m, x, w, **kw: m.view_as_real(m.stft(x, 8, window=w, return_complex=True,
                                                                                   **kw)),
    samples=fixed(lambda r: Sample((U(r, (20,)), U(r, (8,))), {"hop_length": 3}),
                  lambda r: Sample((U(r, (2, 16)), U(r, (6,))), {"hop_length": 2, "win_length": 6, "center": False}),
                  lambda r: Sample((U(r, (2, 16)), U(r, (8,))), {"onesided": False, "pad_mode": "circular"})))
