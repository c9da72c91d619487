"""Sphinx configuration: ember's API reference, generated from the docstrings."""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src")))

project = "ember"
author = "The ember developers"
copyright = "2026, The ember developers"
import ember  # noqa: E402

release = version = ember.__version__

# the page "Differences from PyTorch", generated from the docstrings' paragraphs of that name
# (ember._docs.differences_rst); written only when its text changes, so rebuilds stay incremental
from ember import _docs  # noqa: E402

_diff_page = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api", "differences.rst")
_diff_text = _docs.differences_rst()
if not os.path.exists(_diff_page) or open(_diff_page, encoding="utf-8").read() != _diff_text:
    with open(_diff_page, "w", encoding="utf-8") as _f:
        _f.write(_diff_text)
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
autosummary_generate = True
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autodoc_typehints = "none"
autodoc_mock_imports = ["torch", "mpi4py"]
napoleon_google_docstring = True
napoleon_numpy_docstring = True
html_theme = "alabaster"
html_title = f"ember {release}"
exclude_patterns = ["_build"]
suppress_warnings = ["autodoc", "ref.python", "docutils", "autosummary"]
