"""Pytest set-up shared by the tests and the doctests in the package."""

import os

import numpy as np
import pytest


def pytest_configure(config):
    """Gives each pytest-xdist worker's TensorFlow its share of the cores.

    Two workers each with TensorFlow's default pools (a thread per core)
    would fight over the cores; the variables are read when TensorFlow
    starts, and the processes that tests start inherit them.
    """
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        threads = str(max(1, (os.cpu_count() or 1) // int(workers)))
        os.environ.setdefault("TF_NUM_INTRAOP_THREADS", threads)
        os.environ.setdefault("TF_NUM_INTEROP_THREADS", threads)


def pytest_collection_modifyitems(config, items):
    """Starts the longest tests first, then the other slow ones; skips those
    marked `tensorflow` under another Keras backend.

    With pytest-xdist, a minute-long test started last would keep one worker
    busy after the other has finished; started first, the quick tests fill
    in around it. The order within each group is kept.
    """
    items.sort(
        key=lambda item: ("longest" not in item.keywords, "slow" not in item.keywords)
    )
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
