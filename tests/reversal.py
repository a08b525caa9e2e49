"""The sequence-reversal task the learning tests train on."""

import numpy as np

START, END = 1, 2


def reversal_rows(lengths, vocab_size, max_length, rng):
    """Random sources of the given `lengths` and their reversal.

    Tokens are drawn from 3..`vocab_size` - 1 (0 is padding, 1 start, 2 end).

    Returns:
        `(sources, decoder_inputs, labels)`, 0-padded: sources
        (N, max_length); decoder inputs START then the source reversed, and
        labels the source reversed then END, both (N, max_length + 1).
    """
    count = len(lengths)
    sources = np.zeros((count, max_length), "int32")
    decoder_inputs = np.zeros((count, max_length + 1), "int32")
    labels = np.zeros((count, max_length + 1), "int32")
    for row, length in enumerate(lengths):
        tokens = rng.integers(END + 1, vocab_size, length)
        sources[row, :length] = tokens
        decoder_inputs[row, : length + 1] = [START, *tokens[::-1]]
        labels[row, : length + 1] = [*tokens[::-1], END]
    return sources, decoder_inputs, labels


def reversal_data(count, vocab_size, max_length, seed):
    """`count` sources of 2..`max_length` random tokens and their reversal,
    as `reversal_rows` returns them."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, max_length + 1, count)
    return reversal_rows(lengths, vocab_size, max_length, rng)
