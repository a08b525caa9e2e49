"""Pytest set-up shared by the tests and the doctests in the package."""

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["np"] = np
