"""Beam search with a length penalty, as one `ops.while_loop`.

The paper's setup (section 6.1): beam size 4, length penalty alpha = 0.6, as
in tensor2tensor and GNMT (Wu et al., 2016): a hypothesis of `n` generated
tokens scores `sum log p / ((5 + n) / 6) ** alpha`. Finished hypotheses are
kept apart from alive ones; the search stops when no alive beam can beat the
worst kept finished one. How a hypothesis is scored and when an item stops
is its scoring's (`keras_transformer.scorings`): `scoring="transformers"`
follows Hugging Face transformers' `generate(num_beams=K)` instead.
The loop only knows a step function and an opaque cache; see `beam_search`.
Written in `keras.ops`: it runs on every Keras backend.
"""

import keras
from keras import ops

from keras_transformer import decoding_defaults
from keras_transformer.decoding.constraints import (
    PhraseConstraints,
    allocation_priority,
    finished_priority,
)
from keras_transformer.decoding.greedy import log_probabilities
from keras_transformer.decoding.loops import (
    check_beams,
    check_positive_int,
    given_tokens,
    sequence_limits,
    start_buffer,
    take_per_row,
    token_counts,
    while_loop,
    write_column,
)
from keras_transformer.scorings import NO_HYPOTHESIS, get_scoring
from keras_transformer.special_ids import PAD_ID


def tile_beams(nest, beam_size):
    """Repeats every leaf of `nest` `beam_size` times along axis 0.

    Args:
        nest: a nest of tensors with the batch on axis 0, (B, ...).
        beam_size: K.

    Returns:
        The same nest with leaves (B * K, ...), beam k of item b at row
        b * K + k.

    Example:

    >>> x = tile_beams({"x": np.array([[1], [2]], "int32")}, 2)["x"]
    >>> ops.convert_to_numpy(x).ravel()
    array([1, 1, 2, 2], dtype=int32)
    """
    return keras.tree.map_structure(
        lambda x: ops.repeat(x, beam_size, axis=0), nest
    )  # (B * K, ...)


def gather_beams(nest, beam_indices, beam_size):
    """Selects beams of a flat (B * K, ...) nest.

    Args:
        nest: a nest of tensors with leaves (B * K, ...).
        beam_indices: int (B, K'), for every new beam of item b the old beam
            it continues (in 0..K-1).
        beam_size: K, the beams per item in `nest`.

    Returns:
        The nest with leaves (B * K', ...).

    Example:

    >>> flat = np.array([10, 11, 20, 21], "int32")  # (B * K,) with B = K = 2
    >>> ops.convert_to_numpy(gather_beams(flat, np.array([[1, 1], [0, 1]]), 2))
    array([11, 11, 20, 21], dtype=int32)
    """
    batch_size = ops.shape(beam_indices)[0]
    offsets = ops.arange(batch_size, dtype="int32")[:, None] * beam_size  # (B, 1)
    rows = ops.reshape(ops.cast(beam_indices, "int32") + offsets, (-1,))  # (B * K',)
    return keras.tree.map_structure(lambda x: ops.take(x, rows, axis=0), nest)


def _top_candidates(alive_ids, alive_log_probs, log_probs, index, count):
    """The `count` best one-token extensions of the alive beams of each item.

    Args:
        alive_ids: int32 (B, K, L + 1).
        alive_log_probs: float32 (B, K).
        log_probs: float32 (B, K, V), next-token log-probabilities.
        index: scalar int32, the position just fed; tokens go to index + 1.
        count: int, candidates per item (2K, so that K of them are not
            ended).

    Returns:
        `(ids (B, count, L + 1), tokens (B, count), log_probs (B, count),
        beams (B, count))`, best first: the extended sequences, their new
        tokens and log-probabilities, and the alive beam each extends.
    """
    vocab_size = ops.shape(log_probs)[-1]
    total = alive_log_probs[:, :, None] + log_probs  # (B, K, V)
    flat = ops.reshape(total, (ops.shape(total)[0], -1))  # (B, K * V)
    top_log_probs, top_indices = ops.top_k(flat, k=count)  # (B, 2K)
    top_indices = ops.cast(top_indices, "int32")
    beams = top_indices // vocab_size  # (B, 2K)
    tokens = top_indices % vocab_size  # (B, 2K)
    ids = take_per_row(alive_ids, beams)  # (B, 2K, L + 1)
    ids = write_column(ids, index + 1, tokens)
    return ids, tokens, top_log_probs, beams


def _force_end(log_probs, at_limit, end_id):
    """`log_probs` (B, K, V) with the end token certain where `at_limit` (B,)."""
    vocab = ops.arange(ops.shape(log_probs)[-1], dtype="int32")  # (V,)
    forced = ops.where(vocab == end_id, 0.0, NO_HYPOTHESIS)  # (V,)
    return ops.where(at_limit[:, None, None], forced, log_probs)  # (B, K, V)


def _only_given(log_probs, given, pad_id):
    """`log_probs` (B, K, V) with the given token scored 0 and every other
    ruled out in the beams whose next token is given (`given` (B, K), not
    `pad_id`)."""
    vocab = ops.arange(ops.shape(log_probs)[-1], dtype="int32")  # (V,)
    given = given[:, :, None]  # (B, K, 1)
    forced = ops.where(vocab == given, 0.0, NO_HYPOTHESIS)  # (B, K, V)
    return ops.where(given != pad_id, forced, log_probs)


def _keep_best(scores, ids, count):
    """The `count` best of `scores` (B, N) and their ids (B, N, L + 1)."""
    best_scores, picks = ops.top_k(scores, k=count)  # (B, count)
    picks = ops.cast(picks, "int32")
    return best_scores, take_per_row(ids, picks), picks


def beam_search(
    next_fn,
    start_ids,
    cache,
    max_length,
    end_id,
    beam_size=decoding_defaults.BEAM_SIZE,
    alpha=decoding_defaults.ALPHA,
    num_results=1,
    pad_id=PAD_ID,
    max_lengths=None,
    scoring=decoding_defaults.SCORING,
    cache_shapes=None,
    start_index=0,
    constraints=None,
):
    """Beam search with the GNMT length penalty over a step function.

    Every step extends the K alive beams of each item by one token and
    ranks the 2K most likely extensions. Those among the best K that end
    (with `end_id`, or at the item's limit) join the finished set, scored
    `log p / length_penalty`; the K best that do not end stay alive (2K
    candidates hold at least K of them). Finishing only from the best K, as
    fairseq does, makes a width-1 search with `alpha=0` exactly greedy
    decoding; with `alpha > 0` it may search on past greedy's end, since a
    longer hypothesis can still score better after the penalty. The loop
    runs on fixed-size buffers in one `ops.while_loop` (it runs on every
    Keras backend, traces once in a `tf.function` and compiles with XLA,
    `jit_compile=True` or `jax.jit`) and stops once, for every item, no alive beam can
    beat the worst kept finished hypothesis. Items are independent, so a
    batch decodes exactly as its items would alone. Tokens given in
    `start_ids` (a prefix) are the only candidates at their positions; they
    are given, not chosen, so the search ranks what follows them: their
    log-probabilities and their count are left out of the scores and the
    length penalty, as Hugging Face transformers leaves out its
    `decoder_input_ids`. (Counted in, they would favour longer outputs the
    more the prefix costs: a whole reference typed would go on past its
    end.)

    Args:
        next_fn: `next_fn(ids, cache, index) -> (logits, cache)` with
            `ids` the int32 (B * K, max_length + 1) buffer of the beams
            (beam k of item b at row b * K + k; column 0 holds the start
            token) and `index` a scalar int32 tensor: it feeds
            `ids[:, index]` at position `index` and returns float logits
            (B * K, V) for position `index + 1` and the updated cache.
        start_ids: int (B,), the first token of every sequence, or
            (B, 1 + P) with a prefix of given tokens, as for `greedy_decode`.
        cache: any nest of tensors with the batch on axis 0; it is tiled to
            B * K rows and reordered with gathers on axis 0, never looked
            inside. Tensors fixed per item (encoder outputs, cross-attention
            keys and values) are better captured by `next_fn` at one row per
            item: they are then neither tiled nor gathered at every step.
        max_length: the most tokens to generate (an int or scalar tensor).
        end_id: the end-of-sequence token.
        beam_size: K, beams per item (an int, or on TensorFlow outside
            XLA a scalar int32 tensor).
        alpha: length-penalty exponent, >= 0 (a float or scalar tensor).
        num_results: hypotheses returned per item, 1 <= num_results <= K.
        pad_id: the token written after the end.
        max_lengths: optional int (B,), per-example limits on generated
            tokens (end token included), clipped to `max_length`.
        scoring: the `keras_transformer.scorings.Scoring` (or its name)
            that scores finished hypotheses and stops: "gnmt" (the above),
            or "transformers" to follow Hugging Face transformers'
            `generate(num_beams=K, length_penalty=alpha)`: log p / n **
            alpha, K finished slots and their stopping heuristic, the end
            token forced at the limit.
        cache_shapes: TensorFlow only, for a cache whose shapes change
            from step to step, as in `greedy_decode` (axis 0, the rows, is
            beam search's own).
        start_index: the column the first step feeds, for a cache that
            already holds the given columns before it (as for
            `greedy_decode`).
        constraints: None, or int (B, C, P): phrases each output must
            contain, C per item, P piece ids each, left-aligned and padded
            with -1 (`decoding.constraints`, dynamic beam allocation). A
            hypothesis ends only once it has them all, or at its limit;
            those that have them all come first.

    Returns:
        `(ids, scores)`: int32 (B, num_results, max_length), the generated
        tokens without the start token (end token included, then padding),
        best first, and float32 (B, num_results), their sum of
        log-probabilities over the length penalty (or over n ** alpha).

    Example:

    >>> table = np.log([[.1, .1, .1, .4, .3],    # after token 0
    ...                 [.1, .1, .1, .4, .3],    # after 1 (start)
    ...                 [.6, .1, .1, .1, .1],    # after 2 (end)
    ...                 [.1, .1, .35, .25, .2],  # after 3
    ...                 [.1, .1, .6, .1, .1]])   # after 4
    >>> def next_fn(ids, cache, index):  # logits depend on the last token
    ...     return ops.take(table, ids[:, index], axis=0), cache
    >>> ids, scores = beam_search(
    ...     next_fn, [1], cache=(), max_length=4, end_id=2, beam_size=2)
    >>> ops.convert_to_numpy(ids)  # greedy takes 3 then the end: .4 * .35 < .3 * .6
    array([[[4, 2, 0, 0]]], dtype=int32)
    >>> np.round(ops.convert_to_numpy(scores), 4)  # log(.3 * .6) / (7 / 6) ** .6
    array([[-1.5633]], dtype=float32)
    """
    check_positive_int("max_length", max_length)
    check_beams(beam_size, num_results)
    if not ops.is_tensor(alpha) and alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha!r}.")
    scoring = get_scoring(scoring)
    slots = scoring.finished_slots(num_results, beam_size)

    start_ids = ops.cast(start_ids, "int32")
    prefixed = len(start_ids.shape) == 2  # a prefix is given
    buffer_length = max_length + 1
    start = start_buffer(start_ids, buffer_length, pad_id)  # (B, L + 1)
    batch_size = ops.shape(start)[0]
    limits = sequence_limits(batch_size, max_length, max_lengths)  # (B,)
    float_limits = ops.cast(limits, "float32")  # (B,)
    if prefixed:  # the scores count the tokens after the given ones
        given_length = ops.cast(token_counts(start[:, 1:], pad_id), "float32")  # (B,)
        float_limits = float_limits - given_length
    alive_ids = ops.repeat(start[:, None], beam_size, axis=1)  # (B, K, L + 1)
    # Only beam 0 is live at first, so the first step does not pick K copies.
    first_beam = ops.where(ops.arange(beam_size) == 0, 0.0, NO_HYPOTHESIS)  # (K,)
    alive_log_probs = ops.zeros((batch_size, 1)) + first_beam  # (B, K)
    finished_ids = ops.full((batch_size, slots, buffer_length), pad_id, "int32")
    finished_scores = ops.full((batch_size, slots), NO_HYPOTHESIS, "float32")
    done = ops.zeros((batch_size,), "bool")  # (B,)
    phrases, phrase_state = None, ()
    if constraints is not None:
        phrases = PhraseConstraints(constraints)
        phrase_state = (
            *phrases.initial_state(alive_ids, start_index),  # (B, K, C) each
            ops.zeros((batch_size, slots), "bool"),  # finished with every phrase
        )

    def step(
        index,
        alive_ids,
        alive_log_probs,
        cache,
        finished_ids,
        finished_scores,
        phrase_state,
        done,
    ):
        # The row count, where known when tracing, stays known to `next_fn`.
        rows = -1 if None in alive_ids.shape[:2] else alive_ids.shape[0] * beam_size
        flat_ids = ops.reshape(alive_ids, (rows, buffer_length))  # (B * K, L + 1)
        logits, cache = next_fn(flat_ids, cache, index)  # (B * K, V)
        log_probs = log_probabilities(logits)  # (B * K, V)
        log_probs = ops.reshape(log_probs, (batch_size, beam_size, -1))  # (B, K, V)
        if phrases is not None:
            log_probs = phrases.rule_out_end(log_probs, phrase_state[:2], end_id)
        if scoring.forces_end_at_limit:
            log_probs = _force_end(log_probs, index + 1 >= limits, end_id)
        if prefixed:
            given = given_tokens(alive_ids, index)  # (B, K)
            log_probs = _only_given(log_probs, given, pad_id)
        if phrases is None:
            ids, tokens, log_p, beams = _top_candidates(
                alive_ids, alive_log_probs, log_probs, index, 2 * beam_size
            )  # (B, 2K, L + 1), then (B, 2K) each, best first
        else:
            ids, tokens, log_p, beams, candidate_state, banks = phrases.candidates(
                alive_ids, alive_log_probs, log_probs, index, phrase_state[:2]
            )  # (B, M, L + 1), then (B, M) each
        length = index + 1  # tokens generated, this one included
        ended = (tokens == end_id) | (length >= limits[:, None])  # (B, 2K)
        going_on = ops.where(ended, NO_HYPOTHESIS, log_p)

        if phrases is None:
            in_beam = ops.arange(2 * beam_size)[None, :] < beam_size  # (1, 2K)
            alive_log_probs, alive_ids, picks = _keep_best(
                going_on, ids, beam_size
            )  # (B, K), (B, K, L + 1), (B, K)
        else:  # the order of dynamic beam allocation
            priority = allocation_priority(log_p, banks)  # (B, M)
            in_beam = priority >= ops.top_k(priority, k=beam_size)[0][:, -1:]
            _, alive_ids, picks = _keep_best(
                allocation_priority(going_on, banks), ids, beam_size
            )
            alive_log_probs = take_per_row(going_on, picks)  # (B, K)
            candidate_met = candidate_state[0]  # (B, M, C)
            alive_state = [take_per_row(x, picks) for x in candidate_state]
        cache = gather_beams(cache, take_per_row(beams, picks), beam_size)

        float_length = ops.cast(length, "float32")
        if prefixed:  # at least 1: no normalizer <= 0 while the prefix is fed
            float_length = ops.maximum(float_length - given_length, 1.0)  # (B,)
        normalizer = scoring.normalizer(float_length, alpha)
        normalizer = normalizer[:, None] if prefixed else normalizer  # (B, 1), ()
        takes = ended & in_beam & ~done[:, None]  # (B, 2K)
        scores = ops.where(takes, log_p / normalizer, NO_HYPOTHESIS)  # (B, 2K)
        all_scores = ops.concatenate([finished_scores, scores], axis=1)  # (B, N + 2K)
        all_ids = ops.concatenate([finished_ids, ids], axis=1)
        if phrases is None:
            finished_scores, finished_ids, _ = _keep_best(all_scores, all_ids, slots)
            worst_finished = finished_scores[:, -1]  # (B,)
        else:  # those with every phrase first
            all_met = ops.concatenate(
                [phrase_state[2], ops.all(candidate_met, axis=-1)], axis=1
            )
            _, finished_ids, picks = _keep_best(
                finished_priority(all_scores, all_met), all_ids, slots
            )
            finished_scores = take_per_row(all_scores, picks)  # (B, N)
            finished_met = take_per_row(all_met, picks)  # (B, N)
            phrase_state = (*alive_state, finished_met)
            worst_finished = ops.where(
                finished_met[:, -1], finished_scores[:, -1], NO_HYPOTHESIS
            )
        best_alive = ops.max(alive_log_probs, axis=1)  # (B,)
        done = (
            done
            | (best_alive == NO_HYPOTHESIS)
            | scoring.is_done(
                best_alive, worst_finished, float_length, float_limits, alpha
            )
        )  # (B,)
        return (
            index + 1,
            alive_ids,
            alive_log_probs,
            cache,
            finished_ids,
            finished_scores,
            phrase_state,
            done,
        )

    def not_done(*state):
        return ops.logical_not(ops.all(state[-1]))

    loop_vars = (
        ops.convert_to_tensor(start_index, "int32"),
        alive_ids,
        alive_log_probs,
        tile_beams(cache, beam_size),
        finished_ids,
        finished_scores,
        phrase_state,
        done,
    )
    *_, finished_ids, finished_scores, _, _ = while_loop(
        not_done, step, loop_vars, max_length - start_index, 3, cache_shapes
    )
    return finished_ids[:, :num_results, 1:], finished_scores[:, :num_results]
