"""Registry-wide vmap: every op's batching rule against a Python loop over the batch, with all
tensor inputs batched and with only the first one batched (samples from tests/op_db.py, so a
new op cannot skip it). An op that falls back to the loop must be listed in LOOP_OK."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn  # noqa: F401  (registers the nn primitives)
from ember import _dispatch as D
from ember.func import vmap
from ember.ops import _batching

from op_db import ENTRIES, sample_list, flat_outputs

B = 3
# what may still loop: advanced indices split by a slice or boolean masks (NumPy moves their dims
# to the front), in index_put/index_backward and in indexing with batched index tensors
LOOP_OK = {"index_put", "index_backward",
           # advanced indexing mixing batched index tensors with slices or boolean masks
           "indexing with batched index tensors"}
DATA_DEPENDENT = {"nonzero"}


def _ids(es):
    return [e.name for e in es]


def _batch_of(entry):
    """B samples of identical shapes (seeds 0..B-1), or None."""
    per = [sample_list(entry, seed=k) for k in range(B)]
    out = []
    for j, s0 in enumerate(per[0]):
        group = [p[j] for p in per if j < len(p)]
        if len(group) != B:
            continue
        ok = all(len(g.args) == len(s0.args) and all(
            (np.shape(a) == np.shape(b) and getattr(a, "dtype", None) == getattr(b, "dtype", None))
            if isinstance(a, np.ndarray) else a == b or isinstance(a, float)
            for a, b in zip(g.args, s0.args)) and g.kwargs.keys() == s0.kwargs.keys() for g in group)
        if ok and all(g.kwargs == s0.kwargs for g in group):
            out.append(group)
    return out


def _check(entry, group, batched_pos):
    s0 = group[0]
    tpos = [i for i, a in enumerate(s0.args) if isinstance(a, np.ndarray)]
    others = [i for i in range(len(s0.args)) if i not in batched_pos]

    def f(*bt):
        args = list(s0.tensors(ember))
        for i, t in zip(batched_pos, bt):
            args[i] = t
        return entry.fn(ember, *args, **s0.kwargs)

    loop = []
    for g in group:
        args = list(s0.tensors(ember))
        gt = g.tensors(ember)
        for i in batched_pos:
            args[i] = gt[i]
        loop.append(flat_outputs(entry.fn(ember, *args, **s0.kwargs)))
    stacked = [ember.stack([g.tensors(ember)[i] for g in group]) for i in batched_pos]
    try:
        got = flat_outputs(vmap(f)(*stacked))
    except RuntimeError as e:
        # an in-place op writing a batched value into an unbatched tensor is an error (as in torch)
        if "in-place" in str(e) and 0 not in batched_pos:
            return
        # batch_norm's running stats updated in place must be batched too (as in torch.func)
        if "running statistics shared" in str(e) and len(batched_pos) < len(tpos):
            return
        # a batched boolean mask selecting different counts per sample has no batched shape
        if "data-dependent" in str(e):
            with pytest.raises(Exception):
                np.stack([l[0].numpy() for l in loop])
            return
        raise
    assert len(got) == len(loop[0]), f"{entry.name}: {len(got)} outputs, loop gives {len(loop[0])}"
    for k, o in enumerate(got):
        want = np.stack([l[k].numpy() for l in loop])
        assert tuple(o.shape) == want.shape, f"{entry.name} {s0} batched {batched_pos}: shape {tuple(o.shape)} vs {want.shape}"
        assert o.dtype.name == str(want.dtype) or o.numpy().dtype == want.dtype, f"{entry.name}: dtype"
        np.testing.assert_allclose(o.numpy(), want, rtol=1e-6, atol=1e-7, equal_nan=True,
                                   err_msg=f"{entry.name} {s0} batched {batched_pos}")
    del tpos, others


# samplers: under vmap they follow the randomness flag, not the loop; tests/test_random_streams.py
# compares them with torch.func.vmap (test_vmap_normal_with_batched_parameters)
SAMPLERS = {"normal_tensor_params"}
VM = [e for e in ENTRIES if e.op not in DATA_DEPENDENT and e.name not in SAMPLERS]


@pytest.mark.parametrize("entry", VM, ids=_ids(VM))
def test_vmap_matches_loop(entry):
    groups = _batch_of(entry)
    if not groups:
        pytest.skip("no samples with batch-stable shapes")
    before = dict(_batching.fallback_counts)
    n = 0
    for group in groups:
        tpos = [i for i, a in enumerate(group[0].args) if isinstance(a, np.ndarray) and a.ndim >= 0]
        if not tpos:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _check(entry, group, tpos)
            if len(tpos) > 1:
                _check(entry, group, tpos[:1])
                _check(entry, group, tpos[-1:])
        n += 1
    looped = {k for k, v in _batching.fallback_counts.items() if v != before.get(k, 0)}
    assert looped <= LOOP_OK, f"{entry.name}: ran {sorted(looped - LOOP_OK)} in the Python loop fallback"


def test_every_op_has_a_batching_rule():
    missing = sorted(n for n, op in D.REGISTRY.items()
                     if _batching.rule_for(op) is None and n not in LOOP_OK)
    assert not missing, f"ops without a batching rule: {missing}"


def test_data_dependent_shapes_raise():
    x = ember.tensor([[0.0, 1.0], [2.0, 0.0]])
    with pytest.raises(RuntimeError, match="depends on the data"):
        vmap(lambda r: r.nonzero())(x)
