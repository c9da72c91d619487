"""Every public callable has a docstring, and the "Differences from PyTorch" paragraphs hold.

The walk (ember._docs.public_api) covers ember.*, the Tensor methods, ember.nn (modules and their
methods), ember.nn.functional, ember.linalg, ember.fft, ember.special, ember.func, ember.autograd,
ember.optim, ember.utils.data and ember.distributions. Names that start with an underscore
(private helpers, and the dunder operators such as Tensor.__add__, which Python's own operator
documents) are not public and are not walked.
"""
import inspect

import numpy as np
import pytest

import ember
import ember._docs as D
import ember._docs_table as T

# Public callables that genuinely need no docstring of their own, each with its reason. Keep it
# empty where possible: an entry here is a hole in the API reference.
ALLOWED_UNDOCUMENTED = {
}


def test_every_public_callable_has_a_docstring():
    missing = [q for q in D.undocumented() if q not in ALLOWED_UNDOCUMENTED]
    assert not missing, (f"{len(missing)} public callables have no docstring (write one: a line saying "
                         f"what it computes, and a 'Differences from PyTorch:' paragraph where "
                         f"anything differs); the first ones: {missing[:40]}")


def test_the_allow_list_names_only_what_exists():
    names = {q for q, _, _ in D.public_api()}
    stale = [q for q in ALLOWED_UNDOCUMENTED if q not in names]
    assert not stale, f"allow-list entries that are no longer public callables: {stale}"


def test_the_walk_covers_every_namespace_of_the_brief():
    names = {q for q, _, _ in D.public_api()}
    for q in ("ember.add", "ember.Tensor.add", "ember.Tensor.backward", "ember.nn.Conv2d", "ember.nn.Module.to",
              "ember.nn.functional.cross_entropy", "ember.linalg.svd", "ember.fft.rfft", "ember.special.zeta",
              "ember.func.vmap", "ember.autograd.grad", "ember.optim.Adam", "ember.optim.Adam.step",
              "ember.utils.data.DataLoader", "ember.distributions.Normal",
              "ember.distributions.Normal.log_prob"):
        assert q in names, q


def test_every_table_entry_binds_to_a_function():
    """A renamed or removed function leaves no dead line in the table (it would document nothing)."""
    summaries = D._parse(T.SUMMARIES)
    dead = [k for k in summaries if D._resolve(k if k.startswith("Tensor.") else "ember." + k) is None]
    assert not dead, f"ember/_docs_table.py documents names that do not exist: {dead}"
    diffs = D._parse(T.DIFFERENCES, merge=True)
    assert set(diffs) <= set(summaries), set(diffs) - set(summaries)
    for k, text in {**summaries, **diffs}.items():
        assert text and text[-1] in ".)", f"{k}: {text!r} (one sentence, ended)"


def test_docstrings_are_valid_rest():
    """The reference build hides docutils' messages: a docstring that is broken reST (a stray '*',
    '|x|' read as a substitution, 'name_' as a link) would lose its text on the page silently, so
    every public docstring is parsed here (Sphinx's cross-reference roles count as literals)."""
    docutils_core = pytest.importorskip("docutils.core")
    import io
    from docutils import nodes
    from docutils.parsers.rst import roles
    for role in ("meth", "func", "class", "obj", "attr", "mod", "data", "exc"):
        roles.register_generic_role(role, nodes.literal)
    seen = set()
    bad = []
    for q, obj, how in D.public_api():
        fn = getattr(obj, "__func__", obj)
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        doc = (inspect.getdoc(obj) if how == "method" else inspect.cleandoc(D._own_doc(obj))) or ""
        err = io.StringIO()
        docutils_core.publish_doctree(doc, settings_overrides={"warning_stream": err, "report_level": 2,
                                                               "halt_level": 5})
        if err.getvalue():
            bad.append((q, err.getvalue().strip().splitlines()[0][:160]))
    assert not bad, bad


def test_the_table_does_not_override_a_docstring_in_the_code():
    """A function documented in its own code keeps that text: the table is for those without one."""
    import ast
    import textwrap
    both = []
    for k in D._parse(T.SUMMARIES):
        obj = D._resolve(k if k.startswith("Tensor.") else "ember." + k)
        obj = getattr(obj, "__func__", obj)
        if not inspect.isfunction(obj) or obj.__name__ == "<lambda>":
            continue
        try:
            node = ast.parse(textwrap.dedent(inspect.getsource(obj))).body[0]
        except (OSError, TypeError, SyntaxError, IndexError):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node):
            both.append(k)
    assert not both, f"documented both in ember/_docs_table.py and in their code: {both}"


def test_table_docstrings_are_applied_and_shared_with_the_tensor_methods():
    summaries = D._parse(T.SUMMARIES)
    assert ember.add.__doc__ == summaries["add"]
    assert ember.Tensor.add.__doc__ is ember.add.__doc__  # the method is the function
    assert ember.fft.rfft.__doc__.startswith(summaries["fft.rfft"])
    assert D.DIFF_HEADER in ember.fft.rfft.__doc__
    # in-place methods without a text of their own name their out-of-place form
    assert "Tensor.sqrt" in ember.Tensor.sqrt_.__doc__


def test_difference_paragraphs_are_collected_once_each():
    diffs = D.differences()
    assert len(diffs) > 40
    seen = set()
    for names, text in diffs:
        assert names and text, (names, text)
        assert text[-1] in ".)", (names, text)
        key = (tuple(names), text)
        assert key not in seen, key
        seen.add(key)
    flat = {n for names, _ in diffs for n in names}
    assert "ember.fft.fft" in flat and "ember.nn.Module.cuda" in flat
    # an inherited method is named by the class that defines it, not by every subclass
    assert not any(n.startswith("ember.nn.Linear.") for n in flat)


def test_differences_page_is_generated_from_the_docstrings():
    rst = D.differences_rst()
    assert rst.startswith("Differences from PyTorch\n")
    for names, _ in D.differences():
        assert f":py:obj:`{names[0]}`" in rst
    assert "sparse=True is refused with NotImplementedError" in rst


def _raises(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is checked
        return type(e)
    return None


# The ember half of "Differences from PyTorch" claims that say ember refuses something: when one of
# these starts to work, the docstring is wrong and must lose its paragraph (ember/_docs_table.py or
# the function's own docstring), then the line here goes too.
def test_claimed_refusals_still_refuse():
    F = ember.nn.functional
    c = ember.randn(1, 1, 4, 4, dtype=ember.complex64)
    for fn in (lambda: F.avg_pool2d(c, 2), lambda: F.layer_norm(c, (4,)), lambda: ember.median(c.flatten()),
               lambda: F.max_pool2d(c, 2), lambda: F.interpolate(c, scale_factor=2)):  # (PyTorch's error, as PyTorch)
        assert _raises(fn) is NotImplementedError
    assert _raises(lambda: ember.take(ember.randn(3), ember.tensor([0.0]))) is IndexError
    assert _raises(lambda: ember.nn.DataParallel(ember.nn.Linear(2, 2), device_ids=[0])) is AssertionError
    assert _raises(lambda: ember.ones(2).cuda()) is RuntimeError
    assert _raises(lambda: ember.nn.Linear(2, 2).cuda()) is RuntimeError
    assert _raises(lambda: ember.zeros(2, device="cuda")) is RuntimeError
    assert _raises(lambda: ember.nn.Embedding(4, 2, sparse=True)(ember.tensor([1]))) is NotImplementedError
    assert _raises(lambda: ember.tensor([1.0], pin_memory=True)) is None


def test_claimed_differences_against_pytorch(torch):
    """The PyTorch half of a few claims: PyTorch's CPU build answers as the docstrings say."""
    assert _raises(lambda: torch.ones(2).cuda()) is AssertionError
    assert _raises(lambda: torch.nn.Linear(2, 2).cuda()) is AssertionError
    assert _raises(lambda: torch.tensor([1.0], pin_memory=True)) is RuntimeError
    c = torch.randn(1, 1, 4, 4, dtype=torch.complex64)
    assert _raises(lambda: torch.median(c.flatten())) is NotImplementedError
    assert _raises(lambda: torch.nn.functional.max_pool2d(c, 2)) is NotImplementedError
    assert _raises(lambda: torch.take(torch.randn(3), torch.tensor([0.0]))) is RuntimeError
    assert _raises(lambda: torch.eye(-1)) is RuntimeError
    m = torch.nn.DataParallel(torch.nn.Linear(2, 2), device_ids=[0])  # ignored without CUDA
    assert tuple(m(torch.ones(1, 2)).shape) == (1, 2)
    for L in (ember, torch):  # local_response_norm in half precision on 4-D input
        got = _raises(lambda: L.nn.functional.local_response_norm(L.randn(1, 4, 5, 5).half(), 2))
        assert got is (NotImplementedError if L is torch else None)
    for L in (ember, torch):  # float32 GELU at the top of the range
        got = L.nn.functional.gelu(L.tensor([3e38, float("inf")])).tolist()
        if L is torch and torch.backends.cpu.get_cpu_capability() == "AVX512":
            assert got[0] == float("inf") and got[1] != got[1]
        else:  # (PyTorch's AVX2 kernels, as ember)
            assert got == [pytest.approx(3e38), float("inf")]
    for L in (ember, torch):  # the gradient of maximum where an operand is NaN
        a = L.tensor([float("nan"), 1.0], requires_grad=True)
        b = L.tensor([1.0, 2.0], requires_grad=True)
        L.maximum(a, b).sum().backward()
        if L is torch:
            assert a.grad.tolist() == [1.0, 0.0] and b.grad.tolist() == [1.0, 1.0]
        else:
            assert a.grad.tolist() == [0.0, 0.0] and b.grad.tolist() == [1.0, 1.0]


def test_claimed_set_num_threads_behaviour(torch):
    """set_num_threads refuses as PyTorch's does; its workers are dynamic unless OMP_DYNAMIC=false."""
    import os
    import subprocess
    import sys
    for L in (ember, torch):
        assert _raises(lambda: L.set_num_threads(0)) is RuntimeError
        assert _raises(lambda: L.set_num_threads(2.0)) is RuntimeError
    code = "import ember._parallel as P; print(P._DYNAMIC)"
    for env, want in (("", "True"), ("false", "False")):
        e = dict(os.environ, OMP_DYNAMIC=env) if env else {k: v for k, v in os.environ.items() if k != "OMP_DYNAMIC"}
        got = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, check=True)
        assert got.stdout.strip() == want, (env, got.stdout, got.stderr)


def test_claimed_matrix_exp_accuracy(torch):
    """float32 matrix_exp computed in float64 and rounded once: closer to the exact value than PyTorch's."""
    scipy_linalg = pytest.importorskip("scipy.linalg")
    A = (np.random.RandomState(0).randn(8, 8) * 3).astype(np.float32)
    ref = scipy_linalg.expm(A.astype(np.float64))
    err_e = np.abs(ember.linalg.matrix_exp(ember.from_numpy(A)).numpy() - ref).max() / np.abs(ref).max()
    err_t = np.abs(torch.linalg.matrix_exp(torch.from_numpy(A)).numpy() - ref).max() / np.abs(ref).max()
    assert err_e < 2e-7 and err_t > 5 * err_e, (err_e, err_t)


@pytest.mark.parametrize("name", ["ember.linalg.matrix_exp", "ember.nn.Module.cuda", "ember.fft.fft"])
def test_difference_paragraph_is_part_of_the_docstring(name):
    obj = D._resolve(name)
    doc = inspect.getdoc(obj)
    summary, _, rest = doc.partition("\n\n")
    assert summary and rest.startswith(D.DIFF_HEADER), doc
