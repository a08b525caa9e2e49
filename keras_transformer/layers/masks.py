"""Attention masks shared by every layer.

All masks are boolean with `True` where attention is allowed:

- `padding_mask` (B, S): `True` for real key tokens, `False` for padding.
- `attention_mask` (B, T, S): a full query-by-key mask.
- the causal mask (T, S): query at absolute position `i` sees keys `<= i`.
"""

import numpy as np
from keras import ops

from keras_transformer.special_ids import PAD_ID


def padding_mask_from_ids(token_ids, padding_id=PAD_ID):
    """Returns `token_ids != padding_id` as a boolean (B, S) mask."""
    return ops.not_equal(token_ids, padding_id)


def causal_mask(query_length, key_length, query_offset=0):
    """Returns a (T, S) boolean mask where query `i` sees keys `<= i + offset`.

    Args:
        query_length: T, the number of queries.
        key_length: S, the number of keys.
        query_offset: absolute position of the first query, e.g. the cache
            index while decoding one token at a time. An int or scalar tensor.
    """
    query_positions = ops.arange(query_length) + ops.cast(query_offset, "int32")
    key_positions = ops.arange(key_length)
    return ops.greater_equal(query_positions[:, None], key_positions[None, :])  # (T, S)


def merge_masks(
    query_length,
    key_length,
    padding_mask=None,
    attention_mask=None,
    use_causal_mask=False,
    query_offset=0,
):
    """Combines the three mask kinds into one broadcastable (B|1, 1, T, S) mask.

    Returns `None` when no mask applies.
    """
    mask = None
    if padding_mask is not None:
        mask = ops.cast(padding_mask, "bool")[:, None, None, :]  # (B, 1, 1, S)
    if attention_mask is not None:
        full = ops.cast(attention_mask, "bool")[:, None, :, :]  # (B, 1, T, S)
        mask = full if mask is None else ops.logical_and(mask, full)
    if use_causal_mask:
        causal = causal_mask(query_length, key_length, query_offset)[None, None]
        mask = causal if mask is None else ops.logical_and(mask, causal)
    return mask


def mask_fill_value(dtype):
    """A large negative score that stays finite in `dtype`.

    Half of the most negative finite value, so that subtracting the row
    maximum inside softmax cannot overflow to `-inf` and produce NaN.
    """
    dtype = str(getattr(dtype, "name", dtype))
    if dtype == "bfloat16":
        import ml_dtypes

        return float(ml_dtypes.finfo(ml_dtypes.bfloat16).min) / 2
    return float(np.finfo(dtype).min) / 2
