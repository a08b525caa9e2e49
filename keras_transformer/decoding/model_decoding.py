"""Translate with a `keras_transformer.Transformer`: greedy or beam search.

`make_next_fn` turns the model's `decode_step` into the step function the
decoders call, and `decode` runs the encoder once, builds the cache and
calls `greedy_decode` or `beam_search`.
"""

import tensorflow as tf

from keras_transformer.decoding.beam_search import beam_search
from keras_transformer.decoding.greedy import check_positive_int, greedy_decode
from keras_transformer.decoding.hub_sampling import sample
from keras_transformer.decoding_defaults import (
    ALPHA,
    EXTRA_LENGTH,
    MAX_LENGTH,
    SCORING,
)
from keras_transformer.special_ids import END_ID, PAD_ID, START_ID


def make_next_fn(model, encoder_outputs, encoder_padding_mask, cache_update="append"):
    """The step function of `model` for `greedy_decode` and `beam_search`.

    The decoders' loop state is the self-attention cache of
    `model.init_cache`, which beam search tiles and reorders. What is fixed
    per source item, the cross-attention keys and values and the encoder
    padding mask, `next_fn` captures: the loop carries them as constants at
    one row per item, and beam search never tiles or gathers them (the
    decoder blocks fold the beams of an item into its query axis).

    Args:
        model: a `keras_transformer.Transformer`.
        encoder_outputs: (B, S, d_model) from `model.encode`.
        encoder_padding_mask: (B, S) from `model.encode`.
        cache_update: "append" for caches from `model.init_cache(B')` that
            grow a position a step, "write" for buffers from
            `model.init_cache(B', max_length)` written in place.

    Returns:
        `next_fn(ids, cache, index) -> (logits, cache)`: it feeds the one
        token `ids[:, index]` of the (B', L + 1) buffer to
        `model.decode_step` at position `index` and returns its float32
        logits (B', V) and the updated cache. B' is B, or B * K with beam k
        of item b at row b * K + k.

    Example:

    >>> import keras_transformer as kt
    >>> model = kt.build_transformer(kt.TransformerConfig.tiny(20, d_model=16))
    >>> outputs, mask = model.encode(np.array([[5, 6, 7]]))
    >>> next_fn = make_next_fn(model, outputs, mask)
    >>> logits, cache = next_fn(np.array([[1, 0, 0, 0, 0]]), model.init_cache(1), 0)
    >>> tuple(logits.shape), tuple(cache[0][0].shape)
    ((1, 20), (1, 4, 1, 4))
    """
    cross_attention_cache = model.compute_cross_attention_cache(encoder_outputs)

    def next_fn(ids, cache, index):
        tokens = tf.gather(ids, [index], axis=1)  # (B', 1)
        logits, cache = model.decode_step(
            tokens,
            cache,
            index,
            cross_attention_cache,
            encoder_padding_mask,
            cache_update,
        )  # (B', 1, V)
        return logits[:, 0], cache  # (B', V)

    return next_fn


def decoding_limits(encoder_inputs, extra_length, max_length):
    """Per-example limits `source length + extra_length`, capped by `max_length`.

    The source length counts the non-padding tokens.

    Args:
        encoder_inputs: int (B, S), `PAD_ID` (0) for padding.
        extra_length: int, tokens allowed beyond the source length.
        max_length: int or scalar tensor, the cap.

    Returns:
        int32 (B,).

    Example:

    >>> decoding_limits(np.array([[5, 6, 0], [5, 6, 7]]), 1, 3).numpy()
    array([3, 3], dtype=int32)
    """
    is_token = tf.not_equal(encoder_inputs, PAD_ID)  # (B, S)
    source_lengths = tf.reduce_sum(tf.cast(is_token, tf.int32), axis=1)  # (B,)
    return tf.minimum(source_lengths + extra_length, max_length)  # (B,)


def decode(
    model,
    encoder_inputs,
    start_id=START_ID,
    end_id=END_ID,
    beam_size=1,
    alpha=ALPHA,
    num_results=1,
    extra_length=EXTRA_LENGTH,
    max_length=MAX_LENGTH,
    sampler=None,
    scoring=SCORING,
    fixed_cache=False,
):
    """Decodes `encoder_inputs` with `model`: greedy if `beam_size` is 1.

    The encoder runs once and `model.init_cache` computes the decoder's
    cross-attention keys and values once; each step then feeds one token to
    `model.decode_step`. Every example may generate up to its source length
    (non-padding tokens) + `extra_length` tokens, end token included, capped
    by `max_length`; the output length is the largest of these limits in
    the batch, so each example decodes as it would alone. Works eagerly and
    inside a `tf.function`, e.g. with input signature
    `tf.TensorSpec([None, None], tf.int32)`, where it traces once. The
    self-attention caches grow a position a step, so no step copies them
    whole or attends over positions not yet written; under XLA
    (`tf.function(jit_compile=True)`, TPUs), which compiles fixed shapes
    only, pass `fixed_cache=True` (XLA then bounds the data-dependent
    length by `max_length`).

    Args:
        model: a `keras_transformer.Transformer`.
        encoder_inputs: int (B, S) source token ids, 0 for padding.
        start_id: the token that starts every target.
        end_id: the end-of-sequence token.
        beam_size: beams per example; 1 for greedy decoding. A scalar
            int32 tensor always runs beam search (of that width), see
            `is_greedy`.
        alpha: length-penalty exponent of beam search (unused when greedy).
        num_results: hypotheses returned per example, <= `beam_size`.
        extra_length: tokens allowed beyond the source length.
        max_length: cap on generated tokens (an int or scalar tensor),
            `decoding_defaults.MAX_LENGTH` unless given.
        sampler: a `keras_hub.samplers.Sampler` (top-k, top-p, random,
            greedy or beam) that chooses the tokens instead, over the same
            cached step and limits (see `hub_sampling.sample`);
            `beam_size`, `alpha` and `num_results` keep their defaults then.
            Its scores are the sums of the log-probabilities of the returned
            tokens, from a teacher-forced pass.
        scoring: how beam search scores and stops, "gnmt" or "transformers"
            (`scorings.SCORINGS`; unused when greedy).
        fixed_cache: self-attention caches as buffers of the batch's
            longest limit, written in place: the fixed shapes that XLA
            needs (always so with a `sampler`, whose keras-hub loops keep
            shapes). Slower without XLA: each step copies every buffer
            (docs/experiments.md, "Caches that grow").

    Returns:
        `(ids, scores)`, always with a results axis: int32
        (B, num_results, L), the generated tokens without the start token
        (end token included, then padding 0), best first, and float32
        (B, num_results). Greedy scores are sums of log-probabilities; beam
        scores are divided by the length penalty ((5 + n) / 6) ** alpha
        (n ** alpha with `scoring="transformers"`).

    Example:

    >>> import keras_transformer as kt
    >>> model = kt.build_transformer(kt.TransformerConfig.tiny(20, d_model=16))
    >>> ids, scores = decode(model, np.array([[5, 6, 7], [8, 9, 0]]),
    ...                      beam_size=2, extra_length=2)
    >>> tuple(ids.shape), tuple(scores.shape)
    ((2, 1, 5), (2, 1))
    """
    if sampler is not None and (beam_size, num_results) != (1, 1):
        raise ValueError(
            "With a sampler, beam_size and num_results must be 1 (a keras-hub "
            f"BeamSampler sets its own beams); got {beam_size} and {num_results}."
        )
    check_positive_int("beam_size", beam_size)
    check_positive_int("num_results", num_results)
    if not isinstance(beam_size, tf.Tensor) and num_results > beam_size:
        raise ValueError(
            f"num_results must be <= beam_size={beam_size}, got {num_results}."
        )
    if extra_length < 0:
        raise ValueError(f"extra_length must be >= 0, got {extra_length!r}.")
    check_positive_int("max_length", max_length)

    encoder_inputs = tf.cast(encoder_inputs, tf.int32)  # (B, S)
    limits = decoding_limits(encoder_inputs, extra_length, max_length)  # (B,)
    buffer_length = tf.maximum(tf.reduce_max(limits), 1)  # L, at least 1
    encoder_outputs, encoder_padding_mask = model.encode(encoder_inputs)
    grow = not fixed_cache and sampler is None
    next_fn = make_next_fn(
        model,
        encoder_outputs,
        encoder_padding_mask,
        cache_update="append" if grow else "write",
    )
    state = model.init_cache(
        tf.shape(encoder_inputs)[0], None if grow else buffer_length
    )
    start_ids = tf.fill([tf.shape(encoder_inputs)[0]], start_id)  # (B,)
    arguments = dict(
        next_fn=next_fn,
        start_ids=start_ids,
        cache=state,
        max_length=buffer_length,
        end_id=end_id,
        max_lengths=limits,
    )
    if sampler is not None:
        ids = sample(sampler, **arguments)  # (B, L)
        scores = _log_probability(
            model, ids, encoder_outputs, encoder_padding_mask, start_id
        )  # (B,)
        return ids[:, None], scores[:, None]
    if grow:  # (B, h, L, d) caches whose L changes
        arguments["cache_shapes"] = tf.nest.map_structure(
            lambda x: tf.TensorShape([None, x.shape[1], None, x.shape[3]]), state
        )
    if is_greedy(beam_size):
        ids, scores = greedy_decode(**arguments)  # (B, L), (B,)
        return ids[:, None], scores[:, None]
    return beam_search(
        **arguments,
        beam_size=beam_size,
        alpha=alpha,
        num_results=num_results,
        scoring=scoring,
    )  # (B, N, L), (B, N)


def is_greedy(beam_size):
    """Whether `beam_size` means greedy decoding: the number 1.

    A tensor always means beam search, whatever its value: inside a
    `tf.function` its value is not known when the loop is chosen.

    Example:

    >>> is_greedy(1), is_greedy(4), is_greedy(tf.constant(1))
    (True, False, False)
    """
    return not isinstance(beam_size, tf.Tensor) and beam_size == 1


def _log_probability(model, ids, encoder_outputs, encoder_padding_mask, start_id):
    """Sum of the log-probabilities of `ids` (B, L), 0 for padding -> (B,)."""
    log_probs = token_log_probabilities(
        model, ids, encoder_outputs, encoder_padding_mask, start_id
    )  # (B, L)
    return tf.reduce_sum(log_probs, axis=1)


def token_log_probabilities(
    model, ids, encoder_outputs, encoder_padding_mask, start_id=START_ID
):
    """Forced decoding: the log-probability of each token of given targets.

    The decoder runs once over `start_id` followed by `ids` (teacher
    forcing), so the log-probability at position t is that of `ids[:, t]`
    given the tokens before it, as the decoding loops compute it step by
    step. Summed over the tokens up to and including the end id, it is
    the score greedy decoding (and beam search at alpha 0) gives the same
    hypothesis.

    Args:
        model: a `keras_transformer.Transformer`.
        ids: int (B, L) target tokens without the start token, 0 for padding.
        encoder_outputs, encoder_padding_mask: from `model.encode`.
        start_id: the token that starts every target.

    Returns:
        float32 (B, L), 0 at padding.

    Example:

    >>> import keras_transformer as kt
    >>> model = kt.build_transformer(kt.TransformerConfig.tiny(20, d_model=16))
    >>> outputs, mask = model.encode(np.array([[5, 6, 2]]))
    >>> log_probs = token_log_probabilities(model, np.array([[7, 2, 0]]),
    ...                                     outputs, mask)
    >>> tuple(log_probs.shape), float(log_probs[0, 2])
    ((1, 3), 0.0)
    """
    ids = tf.cast(ids, tf.int32)  # (B, L)
    decoder_inputs = teacher_forced_inputs(ids, start_id)  # (B, L)
    logits = model.decode(decoder_inputs, encoder_outputs, encoder_padding_mask)
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32))  # (B, L, V)
    token_log_probs = tf.gather(log_probs, ids, batch_dims=2)  # (B, L)
    return tf.where(ids != PAD_ID, token_log_probs, 0.0)


def teacher_forced_cross_attention(
    model, ids, encoder_outputs, encoder_padding_mask, start_id=START_ID
):
    """Forced decoding's cross-attention: how each token of given targets
    was attended from, the decoder run once as `token_log_probabilities`
    runs it.

    Args:
        model: a `keras_transformer.Transformer`.
        ids: int (B, L) target tokens without the start token, 0 for padding.
        encoder_outputs, encoder_padding_mask: from `model.encode`.
        start_id: the token that starts every target.

    Returns:
        float32 (B, layers, heads, L, S): row t is how the decoder, predicting
        `ids[:, t]`, attends over the source positions; 0 in rows of padding.
    """
    ids = tf.cast(ids, tf.int32)  # (B, L)
    _, attention = model.decode(
        teacher_forced_inputs(ids, start_id),
        encoder_outputs,
        encoder_padding_mask,
        return_cross_attention=True,
    )  # (B, layers, h, L, S)
    is_token = tf.cast(ids != PAD_ID, tf.float32)[:, None, None, :, None]
    return attention * is_token


def teacher_forced_inputs(ids, start_id=START_ID):
    """The decoder inputs of targets `ids` (B, L): `start_id`, then each
    target token but the last (B, L)."""
    start = tf.fill([tf.shape(ids)[0], 1], start_id)  # (B, 1)
    return tf.concat([start, ids[:, :-1]], axis=1)
