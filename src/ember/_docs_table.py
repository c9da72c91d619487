"""The docstring table of ember._docs (see there): ``name: one line`` per public function."""

SUMMARIES = """
"""

DIFFERENCES = """
"""
