"""A target prefix: tokens that every output of `decode` begins with.

The translator types the start of a translation; the search completes it.
A row's prefix is taken as given: the loops force its tokens (none else is
a candidate there, and no control acts on them) and count them toward the
row's limit, which is raised to the prefix's length where shorter, so a
prefix is never cut. The scores are those of the tokens after it: the
search ranks what follows the prefix, not the prefix (see `beam_search`).
The positions that every row of the batch has given are fed in one
teacher-forced pass that fills the cache (`prefill`); a longer prefix goes
on a token a step.
"""

import numpy as np
from keras import ops

from keras_transformer.decoding.loops import token_counts
from keras_transformer.special_ids import PAD_ID


def check_prefix(prefix, end_id, max_length):
    """Raises ValueError for a prefix (B, P) that is not right-padded, holds
    `end_id`, or is wider than `max_length`, where its values are known."""
    width = prefix.shape[1]
    if isinstance(max_length, int) and width is not None and width > max_length:
        raise ValueError(
            f"prefix has {width} columns, more than max_length={max_length}: "
            "raise max_length, or drop the padding columns."
        )
    try:
        values = np.asarray(ops.convert_to_numpy(prefix))
    except Exception:  # a symbolic tensor: its values are unknown when tracing
        return
    is_token = values != PAD_ID
    if np.any(is_token[:, 1:] & ~is_token[:, :-1]):
        raise ValueError("Each prefix row must be right-padded with 0, got a 0 inside.")
    if np.any(values == end_id):
        raise ValueError(f"A prefix cannot hold the end token ({end_id}).")


def prefill_length(prefix, static_only):
    """How many positions `prefill` feeds: all that every row has given
    but the last, so that each row's last given token is a loop step (which
    ends a row whose prefix fills its limit).

    Args:
        prefix: int32 (B, P), right-padded.
        static_only: where the length is a tensor whose value is unknown
            while tracing (in a `tf.function` or under `jax.jit`), 0 if
            true, else the tensor (a cache that grows takes any length).

    Returns:
        An int, or a scalar int32 tensor.
    """
    # Rows give columns 0..p; feed 0..p_min - 2, the loop writes p_min on.
    length = ops.maximum(ops.min(token_counts(prefix)) - 1, 0)
    try:
        return int(length)
    except TypeError:  # symbolic
        return 0 if static_only else length


def prefill(model, given, length, cache, next_inputs):
    """Feeds columns 0..`length` - 1 of `given` (B, 1 + P) to
    `model.decode_step` in one teacher-forced pass.

    Args:
        model: a `keras_transformer.Transformer`.
        given: int32 (B, 1 + P), start tokens and right-padded prefixes.
        length: s, an int or scalar int32 tensor.
        cache: the self-attention cache from `model.init_cache`.
        next_inputs: `decode_step`'s other arguments, a dict:
            `cross_attention_cache`, `encoder_padding_mask`, `cache_update`.

    Returns:
        The cache holding positions 0..s - 1.
    """
    if isinstance(length, int) and length == 0:
        return cache
    _, cache = model.decode_step(given[:, :length], cache, 0, **next_inputs)
    return cache
