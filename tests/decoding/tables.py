"""Step functions from fixed bigram tables: decoder tests without a model.

Token ids: 0 padding, 1 start, 2 end, 3 and 4 ordinary tokens. A table row
`t` is the distribution of the token after `t`. Each batch item may have
its own table: the cache holds the item's table index, so a beam search
that tiles or reorders the cache wrongly reads the wrong table.
"""

import itertools
import math

import numpy as np
from keras import ops

PAD, START, END, A, B = 0, 1, 2, 3, 4


def bigram_next_fn(tables, calls=None):
    """A `next_fn` whose logits are log `tables[cache, last token]`.

    Args:
        tables: float (T, V, V), rows summing to 1.
        calls: optional int tf.Variable (TensorFlow only), incremented on
            every call.

    Returns:
        `next_fn(ids, cache, index)`, with `cache` int (B',) table indices.
    """
    vocab_size = np.shape(tables)[-1]
    log_tables = np.log(np.maximum(tables, 1e-30)).astype("float32")
    rows_of_tables = log_tables.reshape(-1, vocab_size)  # (T * V, V)

    def next_fn(ids, cache, index):
        if calls is not None:
            calls.assign_add(1)
        tokens = ops.take(ids, index, axis=1)  # (B',)
        rows = ops.cast(cache, "int32") * vocab_size + tokens  # (B',)
        return ops.take(rows_of_tables, rows, axis=0), cache  # (B', V)

    return next_fn


def assert_compiled_as_eager(run, *compiled):
    """Each of `compiled` (`run` traced or compiled) gives the ids and scores
    of `run` called eagerly, `run(table_indices, limits)`, on two batches."""
    for indices, limits in (([0, 1, 2], [7, 3, 5]), ([3, 2], [2, 7])):
        indices, limits = np.array(indices, "int32"), np.array(limits, "int32")
        eager_ids, eager_scores = run(indices, limits)
        for function in compiled:
            ids, scores = function(indices, limits)
            np.testing.assert_array_equal(ids, eager_ids)
            np.testing.assert_allclose(scores, eager_scores, rtol=1e-5)


def random_tables(count, vocab_size, seed):
    """`count` random (V, V) bigram tables, rows summing to 1."""
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(vocab_size), size=(count, vocab_size))


def length_penalty(length, alpha):
    return ((5 + length) / 6) ** alpha


def exhaustive_search(table, max_length, alpha, num_results):
    """The best sequences under the length-penalised score, by enumeration.

    A sequence ends at the end token or after `max_length` tokens.

    Returns:
        A list of `(tokens, score)`, best first.
    """
    vocab_size = len(table)
    results = {}
    for length in range(1, max_length + 1):
        for tokens in itertools.product(range(vocab_size), repeat=length):
            if END in tokens[:-1] or (length < max_length and tokens[-1] != END):
                continue
            previous = (START, *tokens[:-1])
            log_prob = sum(
                math.log(table[p, t]) for p, t in zip(previous, tokens, strict=True)
            )
            results[tokens] = log_prob / length_penalty(length, alpha)
    ranked = sorted(results.items(), key=lambda item: -item[1])
    return ranked[:num_results]


def padded(tokens, length):
    """`tokens` followed by padding up to `length`, as an int32 array."""
    return np.array([*tokens, *[PAD] * (length - len(tokens))], "int32")


def _table(rows):
    return np.array(rows, "float64")


# Greedy takes A (.55) then the end (.5): .275; beam search finds B then the
# end: .45 * .95 = .4275. After the end the table prefers A, never padding.
HAND_TABLE = _table(
    [
        [0.2, 0.2, 0.2, 0.2, 0.2],  # after PAD
        [0.0, 0.0, 0.0, 0.55, 0.45],  # after START
        [0.0, 0.0, 0.0, 0.9, 0.1],  # after END
        [0.0, 0.0, 0.5, 0.3, 0.2],  # after A
        [0.0, 0.0, 0.95, 0.02, 0.03],  # after B
    ]
)

# Never emits the end token: only limits end a sequence.
ENDLESS_TABLE = _table([[0.0, 0.0, 0.0, 0.6, 0.4]] * 5)

# Ends after three tokens: A, B, END.
LATE_END_TABLE = _table(
    [
        [0.2, 0.2, 0.2, 0.2, 0.2],
        [0.0, 0.0, 0.1, 0.8, 0.1],
        [0.0, 0.0, 0.0, 0.9, 0.1],
        [0.0, 0.0, 0.1, 0.1, 0.8],
        [0.0, 0.0, 0.8, 0.1, 0.1],
    ]
)

# The end now (.5), or A, A, ... (.4, then .7 each): GNMT with alpha 1 keeps
# the end; dividing by n favours A, A, A and the end forced at the limit.
SHORT_OR_LONG_TABLE = _table(
    [
        [0.2, 0.2, 0.2, 0.2, 0.2],
        [0.0, 0.0, 0.5, 0.4, 0.1],
        [0.9, 0.0, 0.0, 0.1, 0.0],
        [0.0, 0.0, 0.3, 0.7, 0.0],
        [0.0, 0.0, 0.5, 0.25, 0.25],
    ]
)

# A costly prefix (B, B: .01 each), then the end (.6) or A and the end
# (.4 * .9). Ranked on what follows the prefix, the end wins at alpha 1
# (-.51 against -.90); with the prefix's -9.2 counted in, dividing by the
# longer length would favour A, END (-6.84 against -7.29).
COSTLY_PREFIX_TABLE = _table(
    [
        [0.2, 0.2, 0.2, 0.2, 0.2],  # after PAD
        [0.0, 0.0, 0.0, 0.99, 0.01],  # after START
        [0.9, 0.0, 0.0, 0.1, 0.0],  # after END
        [0.0, 0.0, 0.9, 0.1, 0.0],  # after A
        [0.0, 0.0, 0.6, 0.39, 0.01],  # after B
    ]
)
