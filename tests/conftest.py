"""Session fixtures shared by the test folders: the trained reversal translator.

Its module (`tests/fixtures/reversal.py`) imports TensorFlow, so it is
imported only when a test asks for it: the passes under other Keras
backends collect these folders too.
"""

import pytest


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """(the reversal translator, its training sources), trained once per run."""
    from tests.fixtures.reversal import shared_reversal_translator

    return shared_reversal_translator(tmp_path_factory)


@pytest.fixture(scope="session")
def translator(trained):
    return trained[0]


@pytest.fixture(scope="session")
def held_out(trained):
    """200 (source, reversed source) pairs whose sources were not trained on."""
    from tests.fixtures.reversal import reversal_pairs

    seen = trained[1]
    pairs = [pair for pair in reversal_pairs(400, seed=1) if pair[0] not in seen]
    return pairs[:200]
