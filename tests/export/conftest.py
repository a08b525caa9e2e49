"""The shared reversal translator (`tests/fixtures/reversal.py`) exported once
for the test run, and its serving signatures.
"""

import pytest
import tensorflow as tf

from keras_transformer.export import export_translator
from tests.fixtures.shared import shared_folder


@pytest.fixture(scope="session")
def exported(translator, tmp_path_factory):
    """The path of `translator` exported as `<run tmp>/saved_models/translator/1`,
    once for all the run's workers."""
    with shared_folder(tmp_path_factory, "saved_models") as folder:
        version = folder / "translator" / "1"
        if not version.exists():
            export_translator(translator, str(folder), "translator")
    return str(version)


@pytest.fixture(scope="session")
def reloaded(exported):
    return tf.saved_model.load(exported)


@pytest.fixture(params=["in_process", "saved_model"])
def signatures(request):
    """The serving signatures by name, of the translator or of its SavedModel.

    Both are called the way TF Serving calls them: keyword tensors only.
    """
    if request.param == "in_process":
        return request.getfixturevalue("translator").signatures()
    return request.getfixturevalue("reloaded").signatures
