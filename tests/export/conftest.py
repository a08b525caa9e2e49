"""The shared reversal translator (`tests/fixtures/reversal.py`) exported once
for the session, and its serving signatures.
"""

import pytest
import tensorflow as tf

from keras_transformer.export import export_translator


@pytest.fixture(scope="session")
def exported(translator, tmp_path_factory):
    """The path of `translator` exported as `<tmp>/translator/1`."""
    return export_translator(
        translator, str(tmp_path_factory.mktemp("saved_models")), "translator"
    )


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
