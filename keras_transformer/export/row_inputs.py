"""The controlled signatures' per-row inputs, read and checked in the graph:
one value per text each (`specs.ROW_CONTROLS`), phrases cut into pieces.
"""

import tensorflow as tf

from keras_transformer.export.control_settings import MAX_NO_REPEAT_NGRAM
from keras_transformer.export.specs import ROW_CONTROLS

MAX_PHRASE_PIECES = 16  # the most pieces of a banned or required phrase


def row_inputs(arguments):
    """The per-row inputs among a signature's `arguments` (its locals), by
    the names `ROW_CONTROLS` gives them, the text's excepted."""
    return {spec.name: arguments[spec.name] for spec in ROW_CONTROLS[1:]}


def phrase_pieces(tokenizer, phrases, kind):
    """Phrases (B, N) -> their target pieces (B, N, M), M =
    `MAX_PHRASE_PIECES` (static, as the decoding loops need), each
    left-aligned and padded with -1; "" gives a row of -1 only. A longer
    phrase fails the call with a message naming its `kind` ("banned" or
    "required")."""
    shape = tf.shape(phrases, out_type=tf.int64)
    ids = tokenizer.tokenize_target(tf.reshape(phrases, [-1]))  # (B * N, None)
    check = tf.debugging.assert_less_equal(
        ids.row_lengths(),
        tf.constant(MAX_PHRASE_PIECES, tf.int64),
        f"a {kind} phrase has more than {MAX_PHRASE_PIECES} pieces",
    )
    with tf.control_dependencies([check]):
        dense = ids.to_tensor(-1, shape=[None, MAX_PHRASE_PIECES])  # (B * N, M)
    return tf.reshape(dense, tf.concat([shape, [MAX_PHRASE_PIECES]], 0))


def check_rows(text, rows):
    """Assertions that every input has a value per text, each in range."""
    count = tf.shape(text)[0]
    checks = [
        tf.debugging.assert_equal(
            tf.shape(value)[0], count, f"{name} needs one value per text"
        )
        for name, value in rows.items()
    ]
    penalty, ngram = rows["repetition_penalty"], rows["no_repeat_ngram_size"]
    required = tf.strings.strip(rows["required"])  # (B, C)
    banned = tf.strings.strip(rows["banned"])  # (B, N)
    return checks + [
        tf.debugging.assert_positive(penalty, "repetition_penalty must be > 0"),
        tf.debugging.assert_non_negative(ngram, "no_repeat_ngram_size must be >= 0"),
        tf.debugging.assert_less_equal(
            ngram,
            MAX_NO_REPEAT_NGRAM,
            f"no_repeat_ngram_size must be <= {MAX_NO_REPEAT_NGRAM}",
        ),
        tf.debugging.assert_non_negative(rows["min_length"], "min_length must be >= 0"),
        tf.debugging.assert_equal(
            tf.reduce_any(
                (required[:, :, None] == banned[:, None, :])
                & (required != "")[:, :, None]
            ),
            False,
            "a phrase is both required and banned",
        ),
    ]
