"""Controls that say which tokens a step may choose: suppressed token
sequences (banned phrases, the unknown token) and the tokens allowed at one
step (a prefix's healed last word). They follow the contract of
`keras_transformer.decoding.controls`.
"""

import numpy as np
from keras import ops

from keras_transformer.decoding.controls import (
    BANNED,
    StepControl,
    ban,
    per_item,
    row_token_pairs,
)


class SuppressSequences(StepControl):
    """Token sequences that are never generated: the last token of each is
    ruled out where the tokens generated before it are the rest of it (a
    sequence of one token is ruled out everywhere, e.g. the unknown token).

    Args:
        sequences: the sequences for every item, a list of lists of token
            ids; or, one set per item, an int array (B, N, M) of N
            sequences each, right-aligned with -1 before (a sequence of -1
            only is none).

    Example:

    >>> control = SuppressSequences([[3], [5, 6]])
    >>> ids = np.array([[1, 5, 0]], "int32")  # 5 was just generated
    >>> logits, _ = control.adjust(np.zeros((1, 8)), ids, 1, control.initial_state(1))
    >>> np.flatnonzero(ops.convert_to_numpy(logits)[0] == -np.inf)
    array([3, 6])
    """

    def __init__(self, sequences):
        if not ops.is_tensor(sequences) and not hasattr(sequences, "ndim"):
            sequences = padded_sequences(sequences)  # (N, M)
        self.sequences = sequences

    def initial_state(self, batch_size):
        sequences = ops.cast(self.sequences, "int32")
        if len(sequences.shape) == 2:  # (N, M), the same for every item
            sequences = ops.broadcast_to(sequences, (batch_size, *sequences.shape))
        return sequences  # (B, N, M)

    def is_active(self, index, state):
        return ops.any(state[:, :, -1] >= 0)

    def adjust(self, logits, ids, index, state):
        width = state.shape[-1]  # M, static
        matches = state[:, :, -1] >= 0  # (B', N)
        for offset in range(width - 1):
            column = index - width + 2 + offset  # of the generated token it needs
            token = ops.take(ids, ops.maximum(column, 0), axis=1)  # (B',)
            token = ops.where(column >= 1, token, -2)  # no token there: no match
            wanted = state[:, :, offset]  # (B', N)
            matches = matches & ((wanted == -1) | (wanted == token[:, None]))
        last = ops.maximum(state[:, :, -1], 0)  # (B', N)
        logits = ban(logits, row_token_pairs(last), ops.reshape(matches, (-1,)))
        return logits, state


class AllowOnly(StepControl):
    """Only the tokens `allowed` marks may come after `at` generated tokens:
    e.g. the pieces that begin with the characters a translator typed of
    the prefix's last, unfinished word (token healing). Other steps are
    unchanged, and skip it.

    The mask is not part of the loop state: beams of an item share it
    (beam k of item b at row b * K + k, as beam search and keras-hub's
    `BeamSampler` lay them out), and it is read at those steps only.

    Args:
        allowed: bool (B, V), each item's tokens at that step; or (V,) for
            every item. Each row must allow at least one token.
        at: the generated tokens before that step (a prefix's length), one
            for all items or one per item (B,); -1 for none.

    Example:

    >>> control = AllowOnly(np.array([False, True, True, False]), at=1)
    >>> ids = np.array([[1, 5, 0]], "int32")  # one token generated
    >>> logits, _ = control.adjust(np.zeros((1, 4)), ids, 1, control.initial_state(1))
    >>> ops.convert_to_numpy(logits)
    array([[-inf,   0.,   0., -inf]], dtype=float32)
    """

    def __init__(self, allowed, at):
        if not ops.is_tensor(allowed) and not np.asarray(allowed).any(axis=-1).all():
            raise ValueError("Each row of allowed must allow at least one token.")
        self.allowed = allowed
        self.at = at

    def initial_state(self, batch_size):
        return per_item(self.at, batch_size, "int32")  # (B,)

    def is_active(self, index, state):
        return ops.any(index == state)

    def adjust(self, logits, ids, index, state):
        allowed = ops.cast(self.allowed, "bool")  # (B, V) or (V,)
        if len(allowed.shape) == 2:  # the rows of each item's K beams
            rows_per_item = ops.shape(logits)[0] // ops.shape(allowed)[0]
            allowed = ops.repeat(allowed, rows_per_item, axis=0)  # (B', V)
        ruled_out = (index == state)[:, None] & ~allowed  # (B', V)
        return ops.where(ruled_out, BANNED, ops.cast(logits, "float32")), state


def padded_sequences(sequences):
    """Token sequences as an int32 array (N, M), right-aligned with -1 before.

    Example:

    >>> padded_sequences([[3], [5, 6]])
    array([[-1,  3],
           [ 5,  6]], dtype=int32)
    """
    sequences = [[int(token) for token in sequence] for sequence in sequences]
    if any(not sequence for sequence in sequences):
        raise ValueError("A suppressed sequence is empty.")
    if any(token < 0 for sequence in sequences for token in sequence):
        raise ValueError(f"Token ids must be >= 0, got {sequences!r}.")
    width = max((len(sequence) for sequence in sequences), default=1)
    rows = [[-1] * (width - len(sequence)) + sequence for sequence in sequences]
    return np.array(rows, "int32").reshape(len(rows), width)
