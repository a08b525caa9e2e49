"""Marian's tokenizer as TensorFlow ops: SentencePiece pieces, then vocab.json."""

import io
import json
import os
import zipfile

import tensorflow as tf

from keras_transformer.data.sentencepiece_model import sentencepiece_tokenizer
from keras_transformer.marian import checkpoint, vocabulary
from keras_transformer.special_ids import (
    END_ID,
    PAD_ID,
    START_ID,
    UNKNOWN_ID,
    WORD_START,
)


class MarianTokenizer(tf.Module):
    """The tokenizer of a Marian checkpoint, in the graph, with our ids.

    As Hugging Face's `MarianTokenizer` does: source.spm cuts text into
    pieces, vocab.json maps each piece to its id (a piece it lacks to
    `<unk>`); targets use target.spm (and target_vocab.json where the
    vocabularies are separate). Ids are ours (`vocabulary`): 0 padding,
    1 start, 2 end, 3 unknown. Detokenizing drops padding, start, end and
    unknown ids (Hugging Face's `skip_special_tokens=True`), joins the
    pieces and turns SentencePiece's "\u2581" into spaces.

    It has `SubwordTokenizer`'s methods, so the translator, the export and
    the data pipeline take either. Not done: Hugging Face's optional
    Moses punctuation normalisation (sacremoses), and the `>>lang<<`
    prefixes of multilingual models (they become unknown pieces).

    Args:
        files: {file name: bytes} of source.spm, target.spm, vocab.json
            and, for separate vocabularies, target_vocab.json.
    """

    pad_id, start_id, end_id, unknown_id = PAD_ID, START_ID, END_ID, UNKNOWN_ID
    FILES = (
        checkpoint.SOURCE_SPM,
        checkpoint.TARGET_SPM,
        checkpoint.VOCAB,
        checkpoint.TARGET_VOCAB,
    )

    def __init__(self, files):
        super().__init__(name="marian_tokenizer")
        self.files = {name: bytes(files[name]) for name in self.FILES if name in files}
        source_vocab = json.loads(self.files[checkpoint.VOCAB])
        target_vocab = source_vocab
        if checkpoint.TARGET_VOCAB in self.files:
            target_vocab = json.loads(self.files[checkpoint.TARGET_VOCAB])
        self.source_pieces = vocabulary.our_pieces(source_vocab, checkpoint.VOCAB)
        self.target_pieces = vocabulary.our_pieces(
            target_vocab, checkpoint.TARGET_VOCAB
        )
        self.vocab_size = len(self.source_pieces)
        self.target_vocab_size = len(self.target_pieces)
        self._source = _PieceTokenizer(
            self.files[checkpoint.SOURCE_SPM], self.source_pieces
        )
        self._target = _PieceTokenizer(
            self.files[checkpoint.TARGET_SPM], self.target_pieces
        )
        pieces = enumerate(self.target_pieces)
        surface = ["" if i <= UNKNOWN_ID else piece for i, piece in pieces]
        self._surface = tf.constant(surface)  # (V,)
        self._target_piece_names = tf.constant(self.target_pieces)

    @classmethod
    def from_folder(cls, folder):
        """The tokenizer of a Hugging Face Marian folder."""
        files = {}
        for name in cls.FILES:
            path = os.path.join(folder, name)
            if os.path.exists(path):
                with open(path, "rb") as file:
                    files[name] = file.read()
        for name in cls.FILES[:3]:
            if name not in files:
                raise FileNotFoundError(
                    f"{os.path.join(folder, name)} does not exist: not a Marian "
                    "checkpoint."
                )
        return cls(files)

    @classmethod
    def load(cls, path):
        """Reads a tokenizer written by `save`."""
        with zipfile.ZipFile(path) as archive:
            return cls({name: archive.read(name) for name in archive.namelist()})

    def save(self, path):
        """Writes the original files into one zip archive at `path`."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in self.files.items():
                archive.writestr(name, data)
        with open(path, "wb") as file:
            file.write(buffer.getvalue())

    def sampling(self, alpha):
        raise ValueError(
            "Marian tokenizers do not sample segmentations: leave sampling_alpha unset."
        )

    def tokenize(self, texts):
        """Source strings (B,) -> int32 ragged ids (B, None), without the end id."""
        return self._source.tokenize(texts)

    def tokenize_target(self, texts):
        """Target strings (B,) -> int32 ragged ids (B, None), without the end id."""
        return self._target.tokenize(texts)

    def detokenize(self, ids):
        """Target ids (B, L), dense or ragged -> strings (B,)."""
        pieces = tf.gather(self._surface, tf.cast(ids, tf.int32))  # (B, L)
        text = tf.strings.reduce_join(pieces, axis=-1)  # (B,)
        return tf.strings.strip(tf.strings.regex_replace(text, WORD_START, " "))

    def pieces(self):
        """`(source pieces, target pieces)`, lists of str by our id."""
        return list(self.source_pieces), list(self.target_pieces)

    def id_to_piece(self, ids):
        """The target pieces of `ids` ("<pad>" is the start token)."""
        return tf.gather(self._target_piece_names, tf.cast(ids, tf.int32))


class _PieceTokenizer(tf.Module):
    """One SentencePiece model and one vocabulary: text -> our ids."""

    def __init__(self, model, pieces):
        super().__init__()
        self._sentencepiece = sentencepiece_tokenizer(model, out_type=tf.string)
        self._ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(pieces[1:]), tf.range(1, len(pieces), dtype=tf.int32)
            ),
            default_value=UNKNOWN_ID,
        )

    def tokenize(self, texts):
        texts = tf.strings.unicode_transcode(
            tf.convert_to_tensor(texts, tf.string), "UTF-8", "UTF-8", errors="replace"
        )
        pieces = self._sentencepiece.tokenize(texts)  # (B, None) strings
        return tf.ragged.map_flat_values(self._ids.lookup, pieces)
