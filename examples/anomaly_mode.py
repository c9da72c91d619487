"""Anomaly mode: when backward produces NaN, detect_anomaly names the op that did it and shows
where in the forward pass that op was called.

    python examples/anomaly_mode.py [--small]
"""
import argparse

import ember


def model(x, w):
    h = x @ w
    return ember.sqrt((h - h.max()).abs()).sum()  # sqrt(0) at the max: infinite slope, 0 * inf = NaN


def main(small=False):
    n = 3 if small else 100
    x = ember.randn(4, n)
    w = ember.randn(n, n, requires_grad=True)
    model(x, w).backward()
    print("without anomaly mode, w.grad has NaN:", bool(ember.isnan(w.grad).any()))
    w.grad = None
    try:
        with ember.autograd.detect_anomaly():
            model(x, w).backward()
    except RuntimeError as e:
        print("with anomaly mode:", str(e).splitlines()[0])


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="small sizes (used by the tests)")
    main(ap.parse_args().small)
