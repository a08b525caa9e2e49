"""The `align` signature: word alignments of given translations, as text."""

import tensorflow as tf

from keras_transformer.alignment.links import (
    alignment_attention,
    piece_roles,
    word_links,
    word_positions,
)
from keras_transformer.decoding.forced import teacher_forced_cross_attention
from keras_transformer.export.specs import SOURCE, TARGET, traced
from keras_transformer.special_ids import START_ID


class Aligning:
    """The `align` signature of a `Translator`.

    A mixin: it uses the translator's `model`, `tokenizer` and
    `forced_inputs`; the translator's `__init__` calls `_track_words`.
    The layer and heads it reads are the model config's
    `alignment_layer` and `alignment_heads`, with its
    `full_context_alignment`.
    """

    def _track_words(self):
        """Keeps each piece's role in words (`alignment.piece_roles`)."""
        source_pieces, target_pieces = self.tokenizer.pieces()
        self.source_piece_roles = tf.constant(piece_roles(source_pieces))
        self.target_piece_roles = tf.constant(piece_roles(target_pieces))

    @traced(SOURCE, TARGET)
    def align(self, source, target):
        """Hard word alignments of each target with its source, as Pharaoh lines.

        Forced decoding, as `score`'s, reads the cross-attention of the
        model config's `alignment_layer`, averaged over its first
        `alignment_heads` heads (in a pass without the causal mask where
        the config says `full_context_alignment`), and links each target
        word to the source words its pieces attend to most, and each
        source word left unlinked to the target word whose piece attends
        most to it (`alignment.word_links`). Words
        are what is between spaces in the text as the tokenizer
        normalises it. Sources and targets follow `score`'s input rules:
        the words of a part cut off are not linked, and an empty source
        or target gives an empty line. Each row is aligned as it would be
        alone, so TF Serving's batcher may batch rows.

        Returns:
            {"alignment": string (B,), links `i-j` (source word i, target
            word j, from 0) by source word, then target word, separated
            by spaces (the Pharaoh format)}.
        """
        source_ids, target_ids, encoder_outputs, mask = self.forced_inputs(
            source, target
        )
        config = self.model.config
        attention = teacher_forced_cross_attention(
            self.model,
            target_ids,
            encoder_outputs,
            mask,
            START_ID,
            full_context=config.full_context_alignment,
        )  # (B, layers, h, T, S)
        links = word_links(
            alignment_attention(
                attention, config.alignment_layer_index, config.alignment_heads
            ),
            word_positions(source_ids, self.source_piece_roles),
            word_positions(target_ids, self.target_piece_roles),
        )  # (B, S, T)
        return {"alignment": pharaoh_lines(links)}


def pharaoh_lines(links):
    """bool (B, S, T) word links -> string (B,) Pharaoh lines, in the graph.

    The lines `alignment.format_pharaoh` writes of each row's links.

    Example:

    >>> pharaoh_lines(tf.constant([[[False, True], [True, True]],
    ...                            [[False, False], [False, False]]])).numpy()
    array([b'0-1 1-0 1-1', b''], dtype=object)
    """
    where = tf.where(links)  # (N, 3): row, source word, target word, row-major
    pairs = tf.strings.join(
        [tf.strings.as_string(where[:, 1]), tf.strings.as_string(where[:, 2])], "-"
    )  # (N,)
    rows = tf.RaggedTensor.from_value_rowids(
        pairs, where[:, 0], nrows=tf.shape(links, out_type=tf.int64)[0]
    )  # (B, None)
    return tf.strings.reduce_join(rows, axis=1, separator=" ")
