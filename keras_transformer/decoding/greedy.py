"""Greedy decoding over a step function, as one `ops.while_loop`.

The loop only knows a step function `next_fn(ids, cache, index)` and an
opaque cache; see `greedy_decode`. `log_probabilities` is shared with
`beam_search`.
"""

from keras import ops

from keras_transformer.decoding.loops import (
    check_positive_int,
    given_tokens,
    sequence_limits,
    start_buffer,
    take_per_row,
    while_loop,
    write_column,
)
from keras_transformer.special_ids import PAD_ID


def log_probabilities(logits):
    """float32 log-softmax of (B', V) logits."""
    return ops.log_softmax(ops.cast(logits, "float32"), axis=-1)  # (B', V)


def most_likely(logits):
    """The most likely token of each row of (B, V) logits, and its log-probability.

    Returns:
        `(tokens, log_probs)`: int32 (B,), the first index of each row's
        maximum, and float32 (B,).

    Example:

    >>> tokens, log_probs = most_likely(np.log([[0.2, 0.5, 0.3]]))
    >>> probabilities = np.exp(ops.convert_to_numpy(log_probs))
    >>> ops.convert_to_numpy(tokens), np.round(probabilities, 4)
    (array([1], dtype=int32), array([0.5], dtype=float32))
    """
    log_probs = log_probabilities(logits)  # (B, V)
    # The logits' best (distinct logits may round to one log-probability),
    # the first on a tie as in argmax; top_k is one op on every backend.
    _, tokens = ops.top_k(logits, k=1)  # (B, 1)
    tokens = ops.cast(tokens, "int32")
    return tokens[:, 0], take_per_row(log_probs, tokens)[:, 0]  # (B,), (B,)


def greedy_decode(
    next_fn,
    start_ids,
    cache,
    max_length,
    end_id,
    pad_id=PAD_ID,
    max_lengths=None,
    choose=most_likely,
    cache_shapes=None,
    start_index=0,
):
    """Greedy decoding: the most likely token (or `choose`'s) at every step.

    One `ops.while_loop` over fixed-size buffers, so that it traces once in
    a `tf.function`, compiles with XLA (`jit_compile=True`, `jax.jit`) and
    runs on every Keras backend. After a sequence emits `end_id` it only
    emits `pad_id`, and the loop stops as soon as every sequence has ended.
    A sequence that reaches its limit in `max_lengths` is ended there
    (without an end token), so a batch decodes exactly as its items would
    alone. Tokens given in `start_ids` (a prefix) are taken as they are;
    the scores are those of the tokens after them, as in beam search.

    Args:
        next_fn: `next_fn(ids, cache, index) -> (logits, cache)`. `ids` is
            the int32 (B, max_length + 1) token buffer, column 0 holding the
            start tokens, and `index` a scalar int32 tensor: `next_fn` feeds
            `ids[:, index]` at position `index` and returns float logits
            (B, V) for position `index + 1` and the updated cache.
        start_ids: int (B,), the first token of every sequence; or
            (B, 1 + P), the first token and then each row's prefix of given
            tokens, right-padded with `pad_id`, that the output begins with.
        cache: any nest of tensors, passed to `next_fn` and never looked
            inside.
        max_length: the most tokens to generate (an int, or a scalar tensor
            on TensorFlow: shapes depend on it).
        end_id: the end-of-sequence token.
        pad_id: the token written after the end.
        max_lengths: optional int (B,), per-example limits on generated
            tokens (end token included), clipped to `max_length`.
        choose: `choose(logits) -> (tokens, log_probs)`, the token of each
            row of (B, V) logits and its log-probability, int32 (B,) and
            float32 (B,); the most likely by default, a draw for sampling.
        cache_shapes: TensorFlow only, for a cache whose shapes change from
            step to step (one that grows): a nest of `tf.TensorShape`s like
            `cache` with None for the sizes that change (axis 0 is the
            rows, kept); by default every leaf keeps the shape it starts
            with, as XLA needs (see `growing_cache`).
        start_index: the column of `start_ids` the first step feeds, for a
            `cache` already holding the positions before it (given in every
            row), e.g. from one teacher-forced pass over a prefix.

    Returns:
        `(ids, scores)`: int32 (B, max_length), the generated tokens without
        the start token (end token included, then padding), and float32
        (B,), the sum of the log-probabilities of the generated tokens
        after the prefix.

    Example:

    >>> table = np.log([[.1, .1, .1, .7],    # after token 0: mostly 3
    ...                 [.1, .1, .1, .7],    # after 1 (start): mostly 3
    ...                 [.7, .1, .1, .1],    # after 2 (end)
    ...                 [.1, .1, .6, .2]])   # after 3: mostly the end
    >>> def next_fn(ids, cache, index):  # logits depend on the last token
    ...     return ops.take(table, ids[:, index], axis=0), cache
    >>> ids, scores = greedy_decode(next_fn, [1], cache=(), max_length=5, end_id=2)
    >>> ops.convert_to_numpy(ids)
    array([[3, 2, 0, 0, 0]], dtype=int32)
    >>> np.round(ops.convert_to_numpy(scores), 4)  # log(.7) + log(.6)
    array([-0.8675], dtype=float32)
    """
    check_positive_int("max_length", max_length)
    start_ids = ops.cast(start_ids, "int32")
    prefixed = len(start_ids.shape) == 2  # a prefix is given
    ids = start_buffer(start_ids, max_length + 1, pad_id)  # (B, L + 1)
    batch_size = ops.shape(ids)[0]
    limits = sequence_limits(batch_size, max_length, max_lengths)  # (B,)

    def step(index, ids, cache, finished, scores):
        logits, cache = next_fn(ids, cache, index)  # (B, V)
        tokens, token_log_probs = choose(logits)  # (B,), (B,)
        if prefixed:
            tokens, token_log_probs = _keep_given(
                ids, index, tokens, token_log_probs, pad_id
            )
        tokens = ops.where(finished, pad_id, tokens)
        scores = scores + ops.where(finished, 0.0, token_log_probs)
        ids = write_column(ids, index + 1, tokens)  # (B, L + 1)
        finished = finished | (tokens == end_id) | (index + 1 >= limits)
        return index + 1, ids, cache, finished, scores

    def not_done(index, ids, cache, finished, scores):
        return ops.logical_not(ops.all(finished))

    loop_vars = (
        ops.convert_to_tensor(start_index, "int32"),
        ids,
        cache,
        ops.zeros((batch_size,), "bool"),
        ops.zeros((batch_size,), "float32"),
    )
    _, ids, _, _, scores = while_loop(
        not_done, step, loop_vars, max_length - start_index, 2, cache_shapes
    )
    return ids[:, 1:], scores


def _keep_given(ids, index, tokens, log_probs, pad_id):
    """`(tokens, log_probs)` (B,) with the given token, scored 0, in the
    rows where column `index + 1` of `ids` is given."""
    given = given_tokens(ids, index)  # (B,)
    is_given = given != pad_id
    return ops.where(is_given, given, tokens), ops.where(is_given, 0.0, log_probs)
