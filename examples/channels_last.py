"""channels_last: the same NCHW tensor stored as NHWC in memory. Strides show the layout, conv
outputs keep it, and the results equal the contiguous ones.

    python examples/channels_last.py [--small]
"""
import argparse
import time

import ember
import ember.nn as nn


def main(small=False):
    n, c, hw = (2, 3, 8) if small else (32, 64, 56)
    x = ember.randn(n, c, hw, hw)
    xl = x.to(memory_format=ember.channels_last)
    print("shape", tuple(xl.shape), "strides: contiguous", x.stride(), "channels_last", xl.stride())
    print("is_contiguous(memory_format=channels_last):", xl.is_contiguous(memory_format=ember.channels_last))
    conv = nn.Sequential(nn.Conv2d(c, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU()).eval()
    conv_l = conv.to(memory_format=ember.channels_last)
    with ember.no_grad():
        y = conv(x)
        yl = conv_l(xl)
    print("output keeps channels_last:", yl.is_contiguous(memory_format=ember.channels_last))
    print("same values:", ember.allclose(y, yl, atol=1e-5))
    for name, m, inp in (("contiguous", conv, x), ("channels_last", conv_l, xl)):
        with ember.no_grad():
            t0 = time.perf_counter()
            for _ in range(3):
                m(inp)
        print(f"{name:14s} {(time.perf_counter() - t0) / 3 * 1e3:8.2f} ms per forward")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
