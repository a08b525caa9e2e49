"""A target prefix: every output begins with it, scored on what follows it
(the model's log-probabilities), never cut, and a batch with prefixes of
any lengths decodes as its rows alone (so the one teacher-forced pass
over the common part equals forcing a token a step). Written for every
Keras backend."""

import keras
import keras_hub
import numpy as np
import pytest
from keras import ops

from keras_transformer.decoding import decode, token_log_probabilities
from keras_transformer.decoding.token_masks import AllowOnly, SuppressSequences
from tests.decoding.conftest import SOURCES, START, VOCAB

# Right-padded prefixes of 3, 0 and 1 tokens: the shortest is empty, so the
# batch forces every prefix token a step, while the first row alone is
# fed in one teacher-forced pass.
PREFIX = np.array([[20, 21, 22], [0, 0, 0], [23, 0, 0]], "int32")
LENGTHS = [3, 0, 1]


def numpy(x):
    return ops.convert_to_numpy(x)


def forced_score(model, sources, ids, given=0):
    """The sum of the teacher-forced log-probabilities of `ids` (B, L) after
    the first `given` (an int or one per row)."""
    log_probs = numpy(token_log_probabilities(model, ids, *model.encode(sources)))
    after = np.arange(ids.shape[1])[None] >= np.reshape(given, (-1, 1))
    return np.sum(np.where(after, log_probs, 0.0), axis=1)


def test_greedy_continues_the_prefix_as_rerunning_the_model_would(model, end_id):
    ids, scores = decode(
        model, SOURCES, end_id=end_id, beam_size=1, extra_length=3, prefix=PREFIX
    )
    for row, (source, length) in enumerate(zip(SOURCES, LENGTHS, strict=True)):
        limit = int(np.sum(source != 0)) + 3
        prefix, log_prob = [START], 0.0
        while len(prefix) == 1 or (len(prefix) <= limit and prefix[-1] != end_id):
            inputs = {
                "encoder_inputs": source[None],
                "decoder_inputs": np.array([prefix]),
            }
            log_probs = numpy(ops.log_softmax(model(inputs)[0, -1]))
            given = len(prefix) <= length
            prefix.append(
                int(PREFIX[row, len(prefix) - 1] if given else np.argmax(log_probs))
            )
            log_prob += 0.0 if given else log_probs[prefix[-1]]
        expected = np.pad(prefix[1:], (0, ids.shape[-1] - len(prefix) + 1))
        np.testing.assert_array_equal(numpy(ids)[row, 0], expected)
        np.testing.assert_allclose(numpy(scores)[row, 0], log_prob, atol=1e-4)


@pytest.mark.parametrize(
    "search",
    [
        dict(beam_size=1),
        dict(beam_size=3, num_results=3, alpha=0.0),
        dict(sampler=keras_hub.samplers.TopKSampler(k=3, seed=1)),
        dict(sampler=keras_hub.samplers.BeamSampler(num_beams=2)),
    ],
    ids=["greedy", "beam", "top_k", "hub_beam"],
)
def test_every_output_begins_with_its_prefix(model, end_id, search):
    ids, scores = decode(model, SOURCES, end_id=end_id, prefix=PREFIX, **search)
    ids = numpy(ids)
    for row, length in enumerate(LENGTHS):
        for result in ids[row]:
            np.testing.assert_array_equal(result[:length], PREFIX[row, :length])
    for result in range(ids.shape[1]):  # (beam at alpha 0) the forced sum after it
        np.testing.assert_allclose(
            numpy(scores)[:, result],
            forced_score(model, SOURCES, ids[:, result], LENGTHS),
            atol=1e-4,
        )


def test_a_batch_decodes_as_its_rows_alone(model, end_id):
    """Beam search (greedy's rows are checked one by one above); on
    TensorFlow traced once for every shape, the pre-filled length a tensor."""

    def translate(sources, prefix):
        return decode(
            model, sources, prefix=prefix, end_id=end_id, beam_size=3, num_results=2
        )

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        spec = tf.TensorSpec([None, None], tf.int32)
        translate = tf.function(translate, input_signature=[spec, spec])
    ids, scores = translate(SOURCES, PREFIX)
    for row, length in enumerate(LENGTHS):
        alone_ids, alone_scores = translate(
            SOURCES[row : row + 1], PREFIX[row : row + 1, :length]
        )
        alone_ids = numpy(alone_ids)[0]
        width = alone_ids.shape[-1]
        np.testing.assert_array_equal(numpy(ids)[row, :, :width], alone_ids)
        assert not np.any(numpy(ids)[row, :, width:])
        np.testing.assert_allclose(
            numpy(scores)[row], numpy(alone_scores)[0], atol=1e-4
        )


def test_a_prefix_past_the_limit_is_kept_whole(model, end_id):
    sources = SOURCES[1:2, :1]  # one source token: a limit of 1 + extra_length
    prefix = np.array([[20, 21, 22, 23]], "int32")
    ids, scores = decode(model, sources, end_id=end_id, extra_length=1, prefix=prefix)
    np.testing.assert_array_equal(numpy(ids)[0, 0], prefix[0])
    assert numpy(scores)[0, 0] == 0.0  # no token after the prefix


def test_controls_act_after_the_prefix_not_on_it(model, end_id):
    banned = SuppressSequences([[20], [23]])
    ids, _ = decode(
        model, SOURCES, end_id=end_id, beam_size=2, prefix=PREFIX, controls=[banned]
    )
    for row, length in enumerate(LENGTHS):
        output = numpy(ids)[row, 0]
        np.testing.assert_array_equal(output[:length], PREFIX[row, :length])
        assert not np.isin(output[length:], [20, 23]).any()


@pytest.mark.parametrize("beam_size", [1, 3])
def test_the_token_after_a_prefix_can_be_held_to_a_set_token_healing(
    model, end_id, beam_size
):
    """The piece after each row's prefix is one of that row's `allowed`
    (as the pieces that begin with a typed, unfinished word would be)."""
    allowed = np.zeros((3, VOCAB), bool)
    for row, tokens in enumerate([[30, 31], [32], [33, 34, 35]]):
        allowed[row, tokens] = True
    healing = AllowOnly(allowed, at=np.array(LENGTHS, "int32"))
    ids, _ = decode(
        model,
        SOURCES,
        end_id=end_id,
        beam_size=beam_size,
        prefix=PREFIX,
        controls=[healing],
    )
    for row, length in enumerate(LENGTHS):
        output = numpy(ids)[row, 0]
        np.testing.assert_array_equal(output[:length], PREFIX[row, :length])
        assert allowed[row, output[length]], output


@pytest.mark.parametrize(
    "prefix, arguments, message",
    [
        ([[20, 2]], dict(end_id=2), "cannot hold the end token"),
        ([[20, 0, 21]], {}, "must be right-padded"),
        ([[20, 21, 22]], dict(max_length=2), "more than max_length=2"),
    ],
)
def test_bad_prefixes_are_value_errors(model, prefix, arguments, message):
    with pytest.raises(ValueError, match=message):
        decode(model, SOURCES[:1], prefix=np.array(prefix, "int32"), **arguments)


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="no compiler on this backend"
)
@pytest.mark.parametrize("beam_size", [1, 3])
def test_compiled_decoding_with_a_prefix_equals_eager(model, end_id, beam_size):
    """On TensorFlow, traced once for any batch and prefix width (the
    pre-filled length a tensor: 0 for the batch, 2 for its first row), and
    compiled by XLA; on JAX, by `jax.jit`. Compiled, every prefix token is
    forced a step."""
    arguments = dict(end_id=end_id, beam_size=beam_size, extra_length=3)

    def translate(sources, prefix, **more):
        return decode(model, sources, prefix=prefix, **arguments, **more)

    if keras.backend.backend() == "jax":
        import jax

        runs = [(jax.jit(translate), slice(0, 3))]
    else:
        import tensorflow as tf

        spec = [tf.TensorSpec([None, None], tf.int32)] * 2
        traced = tf.function(translate, input_signature=spec)
        xla = tf.function(
            lambda s, p: translate(s, p, fixed_cache=True), jit_compile=True
        )
        runs = [(traced, slice(0, 3)), (traced, slice(0, 1)), (xla, slice(0, 3))]
    for function, rows in runs:
        ids, scores = function(SOURCES[rows], PREFIX[rows])
        eager_ids, eager_scores = translate(SOURCES[rows], PREFIX[rows])
        width = eager_ids.shape[-1]
        np.testing.assert_array_equal(numpy(ids)[..., :width], numpy(eager_ids))
        assert not numpy(ids)[..., width:].any()
        np.testing.assert_allclose(numpy(scores), numpy(eager_scores), atol=1e-4)
