"""A finished tiny run, trained once for the tests that read or continue it."""

import os
from unittest import mock

import pytest

from keras_transformer.recipe.run import run
from tests.recipe.tiny_runs import tiny_config


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory):
    """`run(tiny_config(...))` done once: (its config, its results, its log
    lines, the paths that `os.replace` moved files to while it ran). A test
    that changes the run works on a copy (`tiny_runs.copy_finished_run`)."""
    config = tiny_config(tmp_path_factory.mktemp("finished"))
    logged, replaced = [], set()
    replace = os.replace

    def recorded_replace(source, destination):
        replaced.add(os.path.abspath(destination))
        replace(source, destination)

    with mock.patch("os.replace", recorded_replace):
        results = run(config, log=logged.append)
    return config, results, logged, replaced
