"""torch.backends.mha: the MultiheadAttention fast-path switch (ember's attention has one path)."""
_fastpath = [True]


def get_fastpath_enabled():
    return _fastpath[0]


def set_fastpath_enabled(value):
    _fastpath[0] = bool(value)
