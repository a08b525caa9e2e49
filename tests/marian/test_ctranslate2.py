"""Our CTranslate2 export of an imported Marian model is CTranslate2's own.

tests/fixtures/make_marian_fixtures.py wrote CTranslate2's conversion of
each shared-vocabulary fixture (`VARIANT/ctranslate2/`, by CTranslate2's
`TransformersConverter`, which cannot convert separate vocabularies). Both
models translate the fixtures' sources with the same options and must give
the same pieces and scores. Our import renumbers the ids (see
`keras_transformer.marian.vocabulary`), so pieces are compared, not ids.
"""

import os

import numpy as np
import pytest

from keras_transformer.marian import checkpoint
from tests.marian.test_import import loaded, reference_limit

pytestmark = pytest.mark.tensorflow  # the Marian import builds TensorFlow runs

ctranslate2 = pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module", params=["shared_swish", "shared_relu"])
def translators(request, tmp_path_factory):
    """(CTranslate2's conversion, our export, Marian's source pieces)."""
    from keras_transformer.export import Translator, export_ctranslate2

    model, tokenizer, _, reference, folder = loaded(request.param)
    ours = export_ctranslate2(
        Translator(model, tokenizer), tmp_path_factory.mktemp("ct2") / "ours"
    )
    pieces = {
        i: piece for piece, i in checkpoint.read_json(folder, checkpoint.VOCAB).items()
    }
    sources = [[pieces[i] for i in ids] for ids in reference["source_ids"]]
    assert all(source[-1] == "</s>" for source in sources)  # Marian's end token
    return (
        ctranslate2.Translator(os.path.join(folder, "ctranslate2"), intra_threads=1),
        ctranslate2.Translator(ours, intra_threads=1),
        sources,
        reference_limit(reference),
    )


@pytest.mark.parametrize("beam_size", [1, 4])
def test_export_translates_as_ctranslate2_conversion(translators, beam_size):
    theirs, ours, sources, limit = translators
    options = dict(
        beam_size=beam_size,
        max_decoding_length=limit,
        min_decoding_length=0,  # CTranslate2's 1 would forbid ending at once
        return_scores=True,
    )
    expected = theirs.translate_batch(sources, **options)
    # Our export appends the end token itself (add_source_eos).
    results = ours.translate_batch([source[:-1] for source in sources], **options)
    translations = [e.hypotheses[0] for e in expected]
    assert len({tuple(t) for t in translations}) > len(sources) // 2  # not alike
    assert [r.hypotheses[0] for r in results] == translations
    np.testing.assert_allclose(
        [r.scores[0] for r in results], [e.scores[0] for e in expected], rtol=1e-4
    )
