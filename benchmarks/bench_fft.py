"""FFTs and the short-time Fourier transform, ember and PyTorch side by side, forward and backward.

* rfft_irfft_64x16384: rfft then irfft of a float32 batch (64 signals of 16384 samples) with a
  gradient back to the input (a real loss of the round trip), the core of FFT convolutions;
* stft_1s_16khz: the complex spectrogram of 1 s of 16 kHz audio (n_fft 400, hop 160, Hann window,
  centred with reflect padding, the usual speech front-end), its power, and the backward pass;
* stft_1s_16khz_forward: the same spectrogram without gradients.
"""
import numpy as np

from _harness import Workload


def _rfft_irfft(lib):
    x = lib.tensor(np.random.default_rng(0).standard_normal((64, 16384)).astype(np.float32), requires_grad=True)
    w = lib.tensor(np.random.default_rng(1).standard_normal((64, 16384)).astype(np.float32))

    def run():
        y = lib.fft.irfft(lib.fft.rfft(x) * 0.5, n=16384)
        (y * w).sum().backward()
        x.grad = None
    return run


def _audio(lib):
    return lib.tensor(np.random.default_rng(0).standard_normal(16000).astype(np.float32))


def _stft(lib):
    x = _audio(lib).requires_grad_(True)
    win = lib.hann_window(400)

    def run():
        s = lib.stft(x, 400, hop_length=160, window=win, return_complex=True)
        (s.abs() ** 2).sum().backward()
        x.grad = None
    return run


def _stft_forward(lib):
    x = _audio(lib)
    win = lib.hann_window(400)
    return lambda: lib.stft(x, 400, hop_length=160, window=win, return_complex=True)


WORKLOADS = [
    Workload("rfft_irfft_64x16384", ember=_rfft_irfft, unit="forward+backward",
             notes="float32 [64, 16384]: irfft(rfft(x) * 0.5), backward of a weighted sum"),
    Workload("stft_1s_16khz", ember=_stft, unit="forward+backward",
             notes="16000 samples, n_fft 400, hop 160, Hann window, center/reflect; |S|^2 summed, backward"),
    Workload("stft_1s_16khz_forward", ember=_stft_forward, unit="forward",
             notes="the same spectrogram, no gradient"),
]
