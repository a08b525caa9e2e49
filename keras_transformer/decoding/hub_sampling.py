"""keras-hub's samplers driving a step function of this package.

`keras_hub.samplers` (greedy, beam, top-k, top-p, random) call
`next(prompt, cache, index) -> (logits, hidden_states, cache)` on a fixed
prompt buffer, the shape of this package's `next_fn(ids, cache, index) ->
(logits, cache)`. `sample` adapts one to the other and gives the output
the conventions of `greedy_decode`.
"""

import keras_hub
import tensorflow as tf

from keras_transformer.decoding.greedy import (
    greedy_decode,
    log_probabilities,
    sequence_limits,
)


def drawn_by(sampler):
    """`greedy_decode`'s `choose` that asks a keras-hub sampler for each token.

    The sampler's `compute_probabilities` (softmax of the logits over its
    temperature) and `get_next_token` pick the token; its log-probability
    is the untempered one.

    Example:

    >>> choose = drawn_by(keras_hub.samplers.TopKSampler(k=1))
    >>> tokens, log_probs = choose(tf.math.log([[0.2, 0.5, 0.3]]))
    >>> tokens.numpy(), np.round(np.exp(log_probs.numpy()), 4)
    (array([1], dtype=int32), array([0.5], dtype=float32))
    """

    def choose(logits):
        probabilities = sampler.compute_probabilities(logits)  # (B, V)
        tokens = tf.cast(sampler.get_next_token(probabilities), tf.int32)  # (B,)
        log_probs = tf.gather(log_probabilities(logits), tokens, batch_dims=1)
        return tokens, log_probs  # (B,), (B,)

    return choose


def sample(sampler, next_fn, start_ids, cache, max_length, end_id, max_lengths=None):
    """Decodes with a `keras_hub.samplers.Sampler` choosing every token.

    Args:
        sampler: a keras-hub sampler instance, e.g. `TopKSampler(k=5)`. Those
            that need hidden states (`ContrastiveSampler`) do not apply.
        next_fn: `next_fn(ids, cache, index) -> (logits, cache)`, as for
            `greedy_decode`: feeds `ids[:, index]`, returns float32 logits
            (B, V) for the token after it.
        start_ids: int32 (B,), the token each output starts from.
        cache: the initial cache of `next_fn` (a nest of tensors).
        max_length: L, the most tokens generated.
        end_id: the end-of-sequence token.
        max_lengths: optional int (B,) per-example limits (<= L).

    Returns:
        int32 (B, L): the generated tokens without the start token, the end
        token included, then 0. Tokens a sampler draws after an example's
        end token or beyond its limit are dropped.

    Example:

    >>> import keras_hub
    >>> def next_fn(ids, cache, index):  # always prefers token 5, then 2
    ...     logits = tf.one_hot(tf.where(index < 2, 5, 2), 8) * 10.0
    ...     return tf.tile(logits[None], [tf.shape(ids)[0], 1]), cache
    >>> sample(keras_hub.samplers.GreedySampler(), next_fn,
    ...        tf.constant([1]), (), max_length=4, end_id=2).numpy()
    array([[5, 5, 2, 0]], dtype=int32)
    """
    if type(sampler).__call__ is keras_hub.samplers.Sampler.__call__:
        # A sampler that draws each token from the step's probabilities runs
        # in `greedy_decode`'s loop. Its own loop writes the prompt with
        # `ops.slice_update`, an XLA op (XlaDynamicUpdateSlice) that a
        # SavedModel served without XLA could not run.
        ids, _ = greedy_decode(
            next_fn,
            start_ids,
            cache,
            max_length,
            end_id,
            max_lengths=max_lengths,
            choose=drawn_by(sampler),
        )
        return ids
    batch_size = tf.shape(start_ids)[0]
    start = tf.cast(start_ids, tf.int32)[:, None]  # (B, 1)
    prompt = tf.concat(
        [start, tf.zeros([batch_size, max_length], tf.int32)], axis=1
    )  # (B, L + 1)
    is_prompt = tf.range(max_length + 1) < 1  # (L + 1,): only the start token
    prompt_mask = tf.tile(is_prompt[None], [batch_size, 1])  # (B, L + 1)

    def hub_next(prompt, cache, index):
        # keras-hub asks for the token at `index`; ours is fed the one before.
        logits, cache = next_fn(prompt, cache, index - 1)  # (B', V)
        return logits, None, cache

    ids = sampler(
        hub_next,
        prompt,
        cache=cache,
        index=1,
        mask=prompt_mask,
        stop_token_ids=[end_id],
    )[:, 1:]  # (B, L)
    limits = sequence_limits(batch_size, max_length, max_lengths)  # (B,)
    is_end = tf.cast(tf.equal(ids, end_id), tf.int32)  # (B, L)
    after_end = tf.cumsum(is_end, axis=1, exclusive=True) > 0  # (B, L)
    within_limit = tf.range(max_length)[None] < limits[:, None]  # (B, L)
    return tf.where(within_limit & ~after_end, ids, 0)
