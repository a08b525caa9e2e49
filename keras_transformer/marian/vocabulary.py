"""Marian's token ids and ours: the one permutation the import applies.

Marian (and Hugging Face's `MarianMTModel`) numbers a vocabulary
`</s>` 0, `<unk>` 1, the pieces, and `<pad>` last; `<pad>` is also the
decoder's start token, and generation never emits it. This package's
code everywhere takes id 0 as padding (masks, losses, the data pipeline,
the decoders), 1 as the start token, 2 as the end token and 3 as unknown.

The import keeps the model and renumbers the vocabulary, rather than
teaching every code path another pad id: our id 0 is a new padding row
(zeros, never attended to or predicted), 1 is Marian's start token
(`<pad>`, the decoder's first input), 2 its `</s>`, 3 its `<unk>`, and
4... its other pieces in their order. A permutation of embedding rows and
logit columns, plus one masked row, computes the same function: the
logits of every Marian token are equal, and only ids change. The two ids
that Marian never generates (padding and start) get an output bias of
`BANNED_LOGIT`, as Hugging Face's `bad_words_ids` bans `<pad>`; so a
vocabulary of V pieces becomes V + 1 ids.
"""

import numpy as np

START_PIECE, END_PIECE, UNKNOWN_PIECE = "<pad>", "</s>", "<unk>"
# Our ids of Marian's start, end and unknown pieces (0 is the new padding).
FIRST_PIECES = (START_PIECE, END_PIECE, UNKNOWN_PIECE)
# The output bias of padding and start: never generated. Finite, so that a
# label-smoothed loss over every class stays finite when fine-tuning.
BANNED_LOGIT = -100.0


def marian_order(vocab, name="vocab.json"):
    """Marian's ids in our order: `order[our_id - 1]` is Marian's id.

    Args:
        vocab: Marian's vocabulary, piece -> id (a vocab.json).
        name: the file, for errors.

    Example:

    >>> marian_order({"</s>": 0, "<unk>": 1, "a": 2, "b": 3, "<pad>": 4})
    array([4, 0, 1, 2, 3])
    """
    ids = sorted(vocab.values())
    if ids != list(range(len(ids))):
        raise ValueError(f"{name}: the ids are not 0 to {len(ids) - 1}.")
    first = []
    for piece in FIRST_PIECES:
        if piece not in vocab:
            raise ValueError(f"{name} has no {piece} piece.")
        first.append(vocab[piece])
    rest = [i for i in ids if i not in first]
    return np.array(first + rest)


def our_pieces(vocab, name="vocab.json"):
    """The pieces by our id: "" for padding, then Marian's in `marian_order`.

    Example:

    >>> our_pieces({"</s>": 0, "<unk>": 1, "a": 2, "<pad>": 3})
    ['', '<pad>', '</s>', '<unk>', 'a']
    """
    pieces = {i: piece for piece, i in vocab.items()}
    return [""] + [pieces[i] for i in marian_order(vocab, name)]


def permute_rows(matrix, order):
    """Marian's rows (V, ...) -> ours (V + 1, ...), row 0 zeros."""
    zeros = np.zeros((1, *matrix.shape[1:]), matrix.dtype)
    return np.concatenate([zeros, matrix[order]], axis=0)


def output_bias(bias, order):
    """Marian's final_logits_bias (V,) -> ours (V + 1,), padding and start
    banned (`BANNED_LOGIT`)."""
    ours = permute_rows(np.asarray(bias, "float32"), order)
    ours[:2] = BANNED_LOGIT
    return ours
