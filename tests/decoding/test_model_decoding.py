import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt
from keras_transformer.decoding import beam_search, decode, make_next_fn
from keras_transformer.decoding_defaults import MAX_LENGTH
from tests.decoding.conftest import SOURCES, START, VOCAB

LENGTHS = [6, 3, 4]


def padded(ids, length):
    return np.pad(ids, [(0, 0)] * (ids.ndim - 1) + [(0, length - ids.shape[-1])])


@pytest.mark.parametrize("beam_size, num_results", [(1, 1), (3, 2)])
def test_a_batch_decodes_as_its_examples_alone(model, end_id, beam_size, num_results):
    arguments = dict(
        end_id=end_id, beam_size=beam_size, num_results=num_results, extra_length=3
    )
    ids, scores = decode(model, SOURCES, **arguments)
    assert tuple(ids.shape) == (3, num_results, max(LENGTHS) + 3)
    assert tuple(scores.shape) == (3, num_results)
    ended = 0
    for row, length in enumerate(LENGTHS):
        alone_ids, alone_scores = decode(
            model, SOURCES[row : row + 1, :length], **arguments
        )
        np.testing.assert_array_equal(
            ids[row], padded(ops.convert_to_numpy(alone_ids[0]), 9)
        )
        np.testing.assert_allclose(scores[row], alone_scores[0], atol=1e-4)
        assert not np.any(ids[row, :, length + 3 :])  # its own limit
        ended += np.any(ids[row] == end_id)
    assert 0 < ended < 3  # some end with the end token, some at their limit


def test_max_length_caps_the_output(model, end_id):
    ids, _ = decode(model, SOURCES, end_id=end_id, beam_size=2, max_length=4)
    assert tuple(ids.shape) == (3, 1, 4)


def test_max_length_is_the_decoding_default_not_the_model_s():
    # The model config has no length; decode caps at decoding_defaults'.
    model = kt.build_transformer(kt.TransformerConfig.tiny(VOCAB, d_model=16))
    ids, _ = decode(model, SOURCES[:1], end_id=-1, extra_length=10**4)
    assert tuple(ids.shape) == (1, 1, MAX_LENGTH)


def test_cached_greedy_decoding_equals_rerunning_the_model_on_the_prefix(model, end_id):
    ids, scores = decode(model, SOURCES, end_id=end_id, beam_size=1, extra_length=3)
    for row, length in enumerate(LENGTHS):
        source = SOURCES[row : row + 1]
        prefix, log_prob = [START], 0.0
        while len(prefix) <= length + 3 and prefix[-1] != end_id:
            inputs = {"encoder_inputs": source, "decoder_inputs": np.array([prefix])}
            log_probs = ops.convert_to_numpy(ops.log_softmax(model(inputs)[0, -1]))
            prefix.append(int(np.argmax(log_probs)))
            log_prob += log_probs[prefix[-1]]
        np.testing.assert_array_equal(ids[row, 0], padded(np.array(prefix[1:]), 9))
        np.testing.assert_allclose(scores[row, 0], log_prob, atol=1e-4)


@pytest.mark.tensorflow  # the uncached prefix grows: no fixed shapes
def test_cached_beam_search_equals_an_uncached_step_function(model, end_id):
    def uncached_next_fn(ids, sources, index):
        inputs = {"encoder_inputs": sources, "decoder_inputs": ids[:, : index + 1]}
        return model(inputs)[:, -1], sources  # re-runs the whole prefix

    limits = np.array(LENGTHS) + 3
    ids, scores = beam_search(
        uncached_next_fn,
        [START] * 3,
        SOURCES,  # the "cache": tiled and reordered per beam
        max_length=9,
        end_id=end_id,
        beam_size=3,
        num_results=2,
        max_lengths=limits,
    )
    cached_ids, cached_scores = decode(
        model, SOURCES, end_id=end_id, beam_size=3, num_results=2, extra_length=3
    )
    np.testing.assert_array_equal(cached_ids, ids)
    np.testing.assert_allclose(cached_scores, scores, atol=1e-4)


def test_beam_size_1_without_length_penalty_equals_greedy(model, end_id):
    greedy_ids, greedy_scores = decode(
        model, SOURCES, end_id=end_id, beam_size=1, extra_length=3
    )
    next_fn = make_next_fn(model, *model.encode(SOURCES), cache_update="write")
    ids, scores = beam_search(
        next_fn,
        [START] * 3,
        model.init_cache(len(SOURCES), max_length=9),
        max_length=9,
        end_id=end_id,
        beam_size=1,
        alpha=0.0,
        max_lengths=np.array(LENGTHS) + 3,
    )
    np.testing.assert_array_equal(ids, greedy_ids)
    np.testing.assert_allclose(scores, greedy_scores, atol=1e-5)


@pytest.mark.tensorflow
@pytest.mark.parametrize("beam_size", [1, 3])
def test_traces_once_for_different_batch_sizes_and_lengths(model, end_id, beam_size):
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def translate(sources):
        return decode(
            model, sources, end_id=end_id, beam_size=beam_size, extra_length=3
        )

    for sources in (SOURCES, SOURCES[1:, :4], SOURCES[2:]):
        ids, scores = translate(sources)
        eager_ids, eager_scores = decode(
            model, sources, end_id=end_id, beam_size=beam_size, extra_length=3
        )
        np.testing.assert_array_equal(ids, eager_ids)
        np.testing.assert_allclose(scores, eager_scores, atol=1e-4)
    assert translate.experimental_get_tracing_count() == 1


@pytest.mark.tensorflow
@pytest.mark.parametrize("beam_size", [1, 3])
def test_jit_compile_gives_the_same_ids(model, end_id, beam_size):
    def translate(sources, fixed_cache):
        return decode(
            model,
            sources,
            end_id=end_id,
            beam_size=beam_size,
            extra_length=3,
            fixed_cache=fixed_cache,
        )

    import tensorflow as tf

    ids, scores = tf.function(translate)(SOURCES, False)  # caches that grow
    jit_ids, jit_scores = tf.function(translate, jit_compile=True)(SOURCES, True)
    np.testing.assert_array_equal(jit_ids, ids)
    np.testing.assert_allclose(jit_scores, scores, atol=1e-4)


@pytest.mark.tensorflow
@pytest.mark.parametrize("beam_size", [1, 3])
def test_caches_that_grow_decode_as_fixed_buffers(model, end_id, beam_size):
    arguments = dict(end_id=end_id, beam_size=beam_size, num_results=beam_size)
    ids, scores = decode(model, SOURCES, extra_length=5, **arguments)
    fixed_ids, fixed_scores = decode(
        model, SOURCES, extra_length=5, fixed_cache=True, **arguments
    )
    np.testing.assert_array_equal(ids, fixed_ids)
    np.testing.assert_allclose(scores, fixed_scores, atol=1e-5)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX backend's")
@pytest.mark.parametrize("beam_size", [1, 3])
def test_jax_jit_gives_the_same_ids_in_buffers_of_max_length(model, end_id, beam_size):
    import jax

    def translate(sources):
        return decode(
            model, sources, end_id=end_id, beam_size=beam_size, extra_length=3
        )

    ids, scores = translate(SOURCES)  # (B, 1, 9): the longest limit
    jit_ids, jit_scores = jax.jit(translate)(SOURCES)
    assert tuple(jit_ids.shape) == (3, 1, MAX_LENGTH)  # unknown when tracing
    np.testing.assert_array_equal(jit_ids, padded(np.asarray(ids), MAX_LENGTH))
    np.testing.assert_allclose(jit_scores, scores, atol=1e-4)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(beam_size=2, num_results=3), "num_results must be <= beam_size=2"),
        (dict(extra_length=-1), "extra_length must be >= 0, got -1"),
        (dict(max_length=0), "max_length must be a positive int, got 0"),
    ],
)
def test_rejects_bad_arguments(model, arguments, message):
    with pytest.raises(ValueError, match=message):
        decode(model, SOURCES, **arguments)
