"""Pytest set-up shared by the tests and the doctests in the package."""

import numpy as np
import pytest


def pytest_collection_modifyitems(config, items):
    """Skips the tests marked `tensorflow` under another Keras backend."""
    import keras  # here, not at the top: collecting alone need not start Keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        return
    skip = pytest.mark.skip(reason=f"needs the TensorFlow backend, not {backend}")
    for item in items:
        if "tensorflow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["np"] = np
