"""torch.backends.opt_einsum: ember's einsum contracts with NumPy's ``optimize`` path search."""
enabled = True
strategy = "auto"


def is_available():
    return False
