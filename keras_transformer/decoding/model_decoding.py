"""Translate with a `keras_transformer.Transformer`: greedy or beam search.

`make_next_fn` turns the model's `decode_step` into the step function the
decoders call, and `decode` runs the encoder once, builds the cache and
calls `greedy_decode` or `beam_search`. Written in `keras.ops`: it runs on
every Keras backend.
"""

import keras
from keras import ops

from keras_transformer.decoding.beam_search import beam_search
from keras_transformer.decoding.controls import initial_states, with_controls
from keras_transformer.decoding.forced import token_log_probabilities
from keras_transformer.decoding.greedy import greedy_decode
from keras_transformer.decoding.hub_sampling import sample
from keras_transformer.decoding.loops import (
    check_beams,
    check_positive_int,
    token_counts,
)
from keras_transformer.decoding.prefix import (
    check_prefix,
    prefill,
    prefill_length,
)
from keras_transformer.decoding_defaults import (
    ALPHA,
    BEAM_SIZE,
    EXTRA_LENGTH,
    MAX_LENGTH,
    SCORING,
    is_greedy,
)
from keras_transformer.special_ids import END_ID, START_ID


def make_next_fn(
    model,
    encoder_outputs,
    encoder_padding_mask,
    cache_update="append",
    rows_per_item=1,
):
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
        rows_per_item: the token rows of each source item, K for beam
            search's K beams (an int or scalar tensor).

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
    step_inputs = _step_inputs(
        model, encoder_outputs, encoder_padding_mask, cache_update
    )
    return _next_fn(model, step_inputs, rows_per_item)


def _step_inputs(model, encoder_outputs, encoder_padding_mask, cache_update):
    """`decode_step`'s arguments besides the tokens, the cache and the
    position: fixed per source item for the whole search."""
    return dict(
        cross_attention_cache=model.compute_cross_attention_cache(encoder_outputs),
        encoder_padding_mask=encoder_padding_mask,
        cache_update=cache_update,
    )


def _next_fn(model, step_inputs, rows_per_item):
    """`make_next_fn`'s step function over `decode_step`'s other
    arguments `step_inputs` (a dict)."""

    def next_fn(ids, cache, index):
        tokens = ops.slice(ids, (0, index), (ops.shape(ids)[0], 1))  # (B', 1)
        logits, cache = model.decode_step(
            tokens, cache, index, **step_inputs, rows_per_item=rows_per_item
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

    >>> limits = decoding_limits(np.array([[5, 6, 0], [5, 6, 7]]), 1, 3)
    >>> ops.convert_to_numpy(limits)
    array([3, 3], dtype=int32)
    """
    source_lengths = token_counts(encoder_inputs)  # (B,)
    return ops.minimum(source_lengths + extra_length, max_length)  # (B,)


def output_length(limits, max_length):
    """L, the length of the output buffers: the batch's longest limit (at
    least 1), or `max_length` under `jax.jit`, where shapes must be known
    while tracing and the limits are not.

    On TensorFlow it stays a tensor: a `tf.function` traces once for every
    batch, whose loops take the length as it comes.

    Example:

    >>> int(output_length(np.array([3, 5], "int32"), 8))
    5
    """
    longest = ops.maximum(ops.max(limits), 1)
    if keras.backend.backend() == "tensorflow":
        return longest
    try:
        return int(longest)
    except TypeError:  # a JAX tracer: its value is unknown while tracing
        return max_length


def decode(
    model,
    encoder_inputs,
    start_id=START_ID,
    end_id=END_ID,
    beam_size=None,
    alpha=ALPHA,
    num_results=1,
    extra_length=EXTRA_LENGTH,
    max_length=MAX_LENGTH,
    sampler=None,
    scoring=SCORING,
    fixed_cache=False,
    controls=(),
    prefix=None,
    constraints=None,
):
    """Decodes `encoder_inputs` with `model`: beam search, greedy if
    `beam_size` is 1.

    The encoder runs once and `model.init_cache` computes the decoder's
    cross-attention keys and values once; each step then feeds one token to
    `model.decode_step`. Every example may generate up to its source length
    (non-padding tokens) + `extra_length` tokens, end token included, capped
    by `max_length`; the output length is the largest of these limits in
    the batch, so each example decodes as it would alone (under `jax.jit`
    it is `max_length`). Runs on every Keras backend: eagerly and under
    `jax.jit` on JAX, eagerly on PyTorch, eagerly and inside a
    `tf.function` on TensorFlow, e.g. with input signature
    `tf.TensorSpec([None, None], tf.int32)`, where it traces once. On
    TensorFlow the self-attention caches grow a position a step
    (`growing_cache`), so no step copies them whole or attends over
    positions not yet written; under XLA (`tf.function(jit_compile=True)`,
    TPUs), which compiles fixed shapes only, pass `fixed_cache=True`. The
    other backends always decode into fixed buffers of L positions.

    Args:
        model: a `keras_transformer.Transformer`.
        encoder_inputs: int (B, S) source token ids, 0 for padding.
        start_id: the token that starts every target.
        end_id: the end-of-sequence token.
        beam_size: beams per example; 1 for greedy decoding; None for
            `decoding_defaults.BEAM_SIZE` (the paper's 4), or 1 with a
            `sampler`. A scalar int32 tensor always runs beam search (of
            that width), see `decoding_defaults.is_greedy`.
        alpha: length-penalty exponent of beam search (unused when greedy).
        num_results: hypotheses returned per example, <= `beam_size`.
        extra_length: tokens allowed beyond the source length.
        max_length: cap on generated tokens (an int or scalar tensor),
            `decoding_defaults.MAX_LENGTH` unless given.
        sampler: a `keras_hub.samplers.Sampler` (top-k, top-p, random,
            greedy or beam) that chooses the tokens instead, over the same
            cached step and limits (see `hub_sampling.sample`);
            `beam_size` must be 1 and `num_results` 1 then.
            Its scores are the sums of the log-probabilities of the returned
            tokens, from a teacher-forced pass.
        scoring: how beam search scores and stops, a
            `scorings.Scoring` or its name, "gnmt" or "transformers"
            (`scorings.SCORINGS`; unused when greedy).
        fixed_cache: self-attention caches as buffers of the batch's
            longest limit, written in place: the fixed shapes that XLA
            needs (always so with a `sampler`, whose keras-hub loops keep
            shapes, and on backends other than TensorFlow). Slower without
            XLA: each step copies every buffer (docs/experiments.md,
            "Caches that grow").
        controls: `decoding.controls.StepControl`s that adjust each
            step's logits before the choice, in order (a repetition
            penalty, banned n-grams, a minimum length, suppressed
            sequences); greedy, beam search and samplers all consult them.
        prefix: None, or int (B, P): the target tokens each output begins
            with (after the start token), right-padded with 0; a row may
            be empty. They are forced, count toward the limits (a row's
            limit is raised to its prefix's length where shorter) and are
            never changed by `controls`; the scores are those of the tokens
            after them (`beam_search` ranks what follows a prefix). The
            positions every row has given are fed in one teacher-forced
            pass (`prefix.prefill`; under `jax.jit` and XLA, where their
            number is unknown while tracing, a token a step instead).
        constraints: None, or int (B, C, P): phrases of target pieces that
            each output must contain, left-aligned and padded with -1
            (`beam_search`'s, by dynamic beam allocation); they need beam
            search, which runs even at `beam_size=1`. An output that lacks
            one ends at its limit: check with
            `decoding.constraints.phrases_found`.

    Returns:
        `(ids, scores)`, always with a results axis: int32
        (B, num_results, L), the generated tokens without the start token
        (any prefix first, end token included, then padding 0), best first,
        and float32
        (B, num_results). Greedy scores are sums of log-probabilities (of
        the distribution the `controls` adjusted, if any); beam scores are
        divided by the length penalty ((5 + n) / 6) ** alpha
        (n ** alpha with `scoring="transformers"`), n the tokens after any
        prefix.

    Example:

    >>> import keras_transformer as kt
    >>> model = kt.build_transformer(kt.TransformerConfig.tiny(20, d_model=16))
    >>> ids, scores = decode(model, np.array([[5, 6, 7], [8, 9, 0]]),
    ...                      beam_size=2, extra_length=2)
    >>> tuple(ids.shape), tuple(scores.shape)
    ((2, 1, 5), (2, 1))
    """
    if sampler is not None and constraints is not None:
        raise ValueError("constraints need beam search, not a sampler.")
    if sampler is not None and (beam_size not in (None, 1) or num_results != 1):
        raise ValueError(
            "With a sampler, beam_size and num_results must be 1 (a keras-hub "
            f"BeamSampler sets its own beams); got {beam_size} and {num_results}."
        )
    if beam_size is None:
        beam_size = BEAM_SIZE if sampler is None else 1
    check_beams(beam_size, num_results)
    if extra_length < 0:
        raise ValueError(f"extra_length must be >= 0, got {extra_length!r}.")
    check_positive_int("max_length", max_length)

    encoder_inputs = ops.cast(encoder_inputs, "int32")  # (B, S)
    batch_size = ops.shape(encoder_inputs)[0]
    limits = decoding_limits(encoder_inputs, extra_length, max_length)  # (B,)
    start_ids = ops.full((batch_size,), start_id, "int32")  # (B,)
    if prefix is not None:
        prefix = ops.cast(prefix, "int32")  # (B, P)
        check_prefix(prefix, end_id, max_length)
        limits = ops.maximum(limits, token_counts(prefix))  # never cut
        start_ids = ops.concatenate([start_ids[:, None], prefix], axis=1)
    length = output_length(limits, max_length)  # L
    encoder_outputs, encoder_padding_mask = model.encode(encoder_inputs)
    grow = (
        not fixed_cache and sampler is None and keras.backend.backend() == "tensorflow"
    )
    step_inputs = _step_inputs(
        model, encoder_outputs, encoder_padding_mask, "append" if grow else "write"
    )
    rows_per_item = _rows_per_item(beam_size, sampler, constraints)
    next_fn = _next_fn(model, step_inputs, rows_per_item)
    state = model.init_cache(batch_size, None if grow else length)
    given = {}
    if prefix is not None:
        start_index = prefill_length(prefix, static_only=not grow)
        state = prefill(model, start_ids, start_index, state, step_inputs)
        given = dict(start_index=start_index)
    cache_shapes = None
    if grow:  # (B, h, L, d) caches whose L changes
        from keras_transformer.decoding.growing_cache import growing_cache_shapes

        cache_shapes = growing_cache_shapes(state)
    if controls:  # their states ride in the cache, which beams reorder
        next_fn = with_controls(next_fn, controls)
        control_states = initial_states(controls, batch_size)
        state = (state, control_states)
        if grow:
            fixed = keras.tree.map_structure(lambda x: x.shape, control_states)
            cache_shapes = (cache_shapes, fixed)
    arguments = dict(
        next_fn=next_fn,
        start_ids=start_ids,  # (B,), or (B, 1 + P) with a prefix
        cache=state,
        max_length=length,
        end_id=end_id,
        max_lengths=limits,
    )
    if sampler is not None:
        ids = sample(sampler, **arguments, start_index=given.get("start_index", 0))
        log_probs = token_log_probabilities(
            model, ids, encoder_outputs, encoder_padding_mask, start_id
        )  # (B, L)
        if prefix is not None:  # the tokens after it
            after = ops.arange(length)[None] >= token_counts(prefix)[:, None]
            log_probs = ops.where(after, log_probs, 0.0)  # (B, L)
        return ids[:, None], ops.sum(log_probs, axis=1)[:, None]
    arguments.update(given)
    if grow:
        arguments["cache_shapes"] = cache_shapes
    if is_greedy(beam_size) and constraints is None:
        ids, scores = greedy_decode(**arguments)  # (B, L), (B,)
        return ids[:, None], scores[:, None]
    return beam_search(
        **arguments,
        beam_size=beam_size,
        alpha=alpha,
        num_results=num_results,
        scoring=scoring,
        constraints=constraints,
    )  # (B, N, L), (B, N)


def _rows_per_item(beam_size, sampler, constraints):
    """The token rows of each source item in the step function: the beams
    of beam search or of a keras-hub `BeamSampler`, else 1."""
    if sampler is not None:
        return getattr(sampler, "num_beams", 1)  # keras-hub's beams, tiled
    return 1 if is_greedy(beam_size) and constraints is None else beam_size
