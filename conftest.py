"""The names every example in the package's docstrings may use without importing them.

As in NumPy's documentation, the examples assume ``import numpy as np`` and
``import projmech as pm``; the doctests run with both names defined.
"""

import numpy
import pytest

import projmech


@pytest.fixture(autouse=True)
def _example_names(doctest_namespace: dict) -> None:
    doctest_namespace["np"] = numpy
    doctest_namespace["pm"] = projmech
