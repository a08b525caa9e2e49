"""keras-hub's samplers driving our model (`decode(..., sampler=...)`)."""

import keras_hub
import numpy as np
import pytest

from keras_transformer.decoding import decode
from tests.decoding.conftest import SOURCES, START


def test_greedy_sampler_equals_greedy_decoding(model, end_id):
    ids, scores = decode(model, SOURCES, end_id=end_id, beam_size=1, extra_length=3)
    sampled_ids, sampled_scores = decode(
        model,
        SOURCES,
        end_id=end_id,
        extra_length=3,
        sampler=keras_hub.samplers.GreedySampler(),
    )
    assert (np.asarray(ids) == end_id).any()  # some outputs end early
    np.testing.assert_array_equal(sampled_ids, ids)
    np.testing.assert_allclose(sampled_scores, scores, atol=1e-4)


def test_beam_sampler_equals_beam_search_without_ends_or_length_penalty(model):
    """Where the two overlap: no hypothesis ends (keras-hub keeps extending
    ended beams) and no length penalty (keras-hub has none)."""
    arguments = dict(end_id=-1, extra_length=50, max_length=6)
    ids, scores = decode(model, SOURCES, beam_size=3, alpha=0.0, **arguments)
    sampled_ids, sampled_scores = decode(
        model, SOURCES, sampler=keras_hub.samplers.BeamSampler(num_beams=3), **arguments
    )
    np.testing.assert_array_equal(sampled_ids, ids)
    np.testing.assert_allclose(sampled_scores, scores, atol=1e-4)


def test_top_k_sampler_draws_among_the_k_best_tokens(model):
    k = 3
    ids, scores = decode(
        model,
        SOURCES,
        end_id=-1,  # every example runs to its limit
        extra_length=4,
        sampler=keras_hub.samplers.TopKSampler(k=k, seed=0),
    )
    ids = np.asarray(ids)[:, 0]  # (B, L)
    decoder_inputs = np.concatenate([np.full((len(ids), 1), START), ids[:, :-1]], 1)
    encoder_outputs, mask = model.encode(SOURCES)
    logits = np.asarray(model.decode(decoder_inputs, encoder_outputs, mask))
    top_k = np.argsort(-logits, axis=-1)[..., :k]  # (B, L, k)
    real = ids != 0
    assert real.sum() == sum(length + 4 for length in (6, 3, 4))
    assert (top_k == ids[..., None]).any(-1)[real].all()
    assert np.all(np.asarray(scores) < 0)


@pytest.mark.tensorflow
def test_traces_once_behind_a_signature(model, end_id):
    import tensorflow as tf

    sampler = keras_hub.samplers.GreedySampler()

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def translate(sources):
        return decode(model, sources, end_id=end_id, extra_length=3, sampler=sampler)

    for sources in (SOURCES, SOURCES[1:, :4]):
        ids, _ = translate(sources)
        expected, _ = decode(model, sources, end_id=end_id, beam_size=1, extra_length=3)
        np.testing.assert_array_equal(ids, expected)
    assert translate.experimental_get_tracing_count() == 1


def test_rejects_beam_settings_with_a_sampler(model):
    with pytest.raises(ValueError, match="With a sampler, beam_size"):
        decode(model, SOURCES, beam_size=2, sampler=keras_hub.samplers.GreedySampler())
