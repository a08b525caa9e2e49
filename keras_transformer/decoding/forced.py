"""Forced decoding: what the model gives targets that are already known.

The decoder runs once over the start token and the given tokens (teacher
forcing), so each position's scores are those the decoding loops compute
step by step for the same tokens: the log-probabilities that score a
translation (`token_log_probabilities`) and the cross-attention that
aligns it (`teacher_forced_cross_attention`).
"""

from keras import ops

from keras_transformer.decoding.greedy import log_probabilities
from keras_transformer.decoding.loops import take_per_row
from keras_transformer.special_ids import PAD_ID, START_ID


def log_probabilities_of(logits, ids):
    """The log-probability of each token of `ids` (B, L) under `logits`
    (B, L, V), the scores of the positions before each token: float32 (B, L).

    Example:

    >>> logits = np.log([[[0.2, 0.8], [0.6, 0.4]]])
    >>> log_probs = log_probabilities_of(logits, np.array([[1, 0]]))
    >>> np.round(np.exp(ops.convert_to_numpy(log_probs)), 4)
    array([[0.8, 0.6]], dtype=float32)
    """
    vocab_size = ops.shape(logits)[-1]
    log_probs = log_probabilities(ops.reshape(logits, (-1, vocab_size)))  # (B * L, V)
    targets = ops.reshape(ops.cast(ids, "int32"), (-1, 1))  # (B * L, 1)
    token_log_probs = take_per_row(log_probs, targets)  # (B * L, 1)
    return ops.reshape(token_log_probs, ops.shape(ids))  # (B, L)


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
        encoder_outputs: (B, S, d_model) from `model.encode`.
        encoder_padding_mask: (B, S) from `model.encode`.
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
    ids = ops.cast(ids, "int32")  # (B, L)
    decoder_inputs = teacher_forced_inputs(ids, start_id)  # (B, L)
    logits = model.decode(decoder_inputs, encoder_outputs, encoder_padding_mask)
    token_log_probs = log_probabilities_of(logits, ids)  # (B, L)
    return ops.where(ids != PAD_ID, token_log_probs, 0.0)


def teacher_forced_cross_attention(
    model,
    ids,
    encoder_outputs,
    encoder_padding_mask,
    start_id=START_ID,
    full_context=False,
):
    """Forced decoding's cross-attention: how each token of given targets
    was attended from, the decoder run once as `token_log_probabilities`
    runs it, or without its causal mask (`full_context`).

    Args:
        model: a `keras_transformer.Transformer`.
        ids: int (B, L) target tokens without the start token, 0 for padding.
        encoder_outputs: (B, S, d_model) from `model.encode`.
        encoder_padding_mask: (B, S) from `model.encode`.
        start_id: the token that starts every target.
        full_context: every position sees the whole target, the token it
            predicts included (`Transformer.full_context_cross_attention`),
            as a model with `config.full_context_alignment` aligns; the
            layers up to `config.alignment_layer` only.

    Returns:
        float32 (B, layers, heads, L, S): row t is how the decoder, predicting
        `ids[:, t]`, attends over the source positions; 0 in rows of padding.
    """
    ids = ops.cast(ids, "int32")  # (B, L)
    inputs = teacher_forced_inputs(ids, start_id), encoder_outputs, encoder_padding_mask
    if full_context:
        attention = model.full_context_cross_attention(*inputs)
    else:
        _, attention = model.decode(*inputs, return_cross_attention=True)
    # attention: (B, layers, h, L, S)
    is_token = ops.cast(ids != PAD_ID, "float32")[:, None, None, :, None]
    return attention * is_token


def teacher_forced_inputs(ids, start_id=START_ID):
    """The decoder inputs of targets `ids` (B, L): `start_id`, then each
    target token but the last (B, L)."""
    start = ops.full((ops.shape(ids)[0], 1), start_id, "int32")  # (B, 1)
    return ops.concatenate([start, ops.cast(ids[:, :-1], "int32")], axis=1)
