"""Shared fixtures: PyTorch as an oracle (tests that use it skip cleanly when it is absent)."""
import numpy as np
import pytest

import ember


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _fresh_state():
    """Every test starts with grad mode on, the default dtype float32 and a fixed seed."""
    ember.set_grad_enabled(True)
    ember.set_default_dtype(ember.float32)
    ember.manual_seed(0)
    np.random.seed(0)
    yield
    ember.set_grad_enabled(True)
    ember.set_default_dtype(ember.float32)
