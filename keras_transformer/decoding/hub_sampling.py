"""keras-hub's samplers driving a step function of this package.

`keras_hub.samplers` (greedy, beam, top-k, top-p, random) call
`next(prompt, cache, index) -> (logits, hidden_states, cache)` on a fixed
prompt buffer, the shape of this package's `next_fn(ids, cache, index) ->
(logits, cache)`. `sample` adapts one to the other and gives the output
the conventions of `greedy_decode`. Written in `keras.ops`, as keras-hub's
samplers are: it runs on every Keras backend.
"""

import keras_hub
from keras import ops

from keras_transformer.decoding.greedy import greedy_decode, log_probabilities
from keras_transformer.decoding.loops import (
    sequence_limits,
    start_buffer,
    take_per_row,
)
from keras_transformer.special_ids import PAD_ID


def drawn_by(sampler):
    """`greedy_decode`'s `choose` that asks a keras-hub sampler for each token.

    The sampler's `compute_probabilities` (softmax of the logits over its
    temperature) and `get_next_token` pick the token; its log-probability
    is the untempered one.

    Example:

    >>> choose = drawn_by(keras_hub.samplers.TopKSampler(k=1))
    >>> tokens, log_probs = choose(np.log([[0.2, 0.5, 0.3]]))
    >>> probabilities = np.exp(ops.convert_to_numpy(log_probs))
    >>> ops.convert_to_numpy(tokens), np.round(probabilities, 4)
    (array([1], dtype=int32), array([0.5], dtype=float32))
    """

    def choose(logits):
        probabilities = sampler.compute_probabilities(logits)  # (B, V)
        tokens = ops.cast(sampler.get_next_token(probabilities), "int32")  # (B,)
        log_probs = take_per_row(log_probabilities(logits), tokens[:, None])
        return tokens, log_probs[:, 0]  # (B,), (B,)

    return choose


def sample(
    sampler,
    next_fn,
    start_ids,
    cache,
    max_length,
    end_id,
    max_lengths=None,
    start_index=0,
):
    """Decodes with a `keras_hub.samplers.Sampler` choosing every token.

    Args:
        sampler: a keras-hub sampler instance, e.g. `TopKSampler(k=5)`. Those
            that need hidden states (`ContrastiveSampler`) do not apply.
        next_fn: `next_fn(ids, cache, index) -> (logits, cache)`, as for
            `greedy_decode`: feeds `ids[:, index]`, returns float32 logits
            (B, V) for the token after it.
        start_ids: int32 (B,), the token each output starts from, or
            (B, 1 + P) with a prefix of given tokens (see `greedy_decode`).
            A keras-hub `BeamSampler` keeps them as its prompt.
        cache: the initial cache of `next_fn` (a nest of tensors).
        max_length: L, the most tokens generated.
        end_id: the end-of-sequence token.
        max_lengths: optional int (B,) per-example limits (<= L).
        start_index: the column the first step feeds, for a cache that
            holds the positions before it (see `greedy_decode`).

    Returns:
        int32 (B, L): the generated tokens without the start token, the end
        token included, then `PAD_ID`. Tokens a sampler draws after an example's
        end token or beyond its limit are dropped.

    Example:

    >>> import keras_hub
    >>> def next_fn(ids, cache, index):  # always prefers token 5, then 2
    ...     logits = ops.one_hot(ops.where(index < 2, 5, 2), 8) * 10.0
    ...     return ops.tile(logits[None], (ops.shape(ids)[0], 1)), cache
    >>> ops.convert_to_numpy(sample(keras_hub.samplers.GreedySampler(), next_fn,
    ...        np.array([1]), (), max_length=4, end_id=2))
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
            start_index=start_index,
        )
        return ids
    prompt = start_buffer(start_ids, max_length + 1, PAD_ID)  # (B, L + 1)
    batch_size = ops.shape(prompt)[0]
    is_start = ops.arange(max_length + 1) == 0  # (L + 1,)
    prompt_mask = is_start[None] | (prompt != PAD_ID)  # (B, L + 1): given tokens

    def hub_next(prompt, cache, index):
        # keras-hub asks for the token at `index`; ours is fed the one before.
        logits, cache = next_fn(prompt, cache, index - 1)  # (B', V)
        return logits, None, cache

    ids = sampler(
        hub_next,
        prompt,
        cache=cache,
        index=start_index + 1,
        mask=prompt_mask,
        stop_token_ids=[end_id],
    )[:, 1:]  # (B, L)
    limits = sequence_limits(batch_size, max_length, max_lengths)  # (B,)
    is_end = ops.cast(ops.equal(ids, end_id), "int32")  # (B, L)
    after_end = ops.cumsum(is_end, axis=1) - is_end > 0  # (B, L)
    within_limit = ops.arange(max_length)[None] < limits[:, None]  # (B, L)
    return ops.where(within_limit & ~after_end, ids, PAD_ID)
