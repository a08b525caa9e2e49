"""One subword vocabulary shared by source and target (SentencePiece)."""

import io
import os

import sentencepiece
import tensorflow as tf
import tensorflow_text as tf_text

PAD_ID, START_ID, END_ID, UNKNOWN_ID = 0, 1, 2, 3


def train_tokenizer(texts, vocab_size=8000, model_type="unigram", byte_fallback=True):
    """Learns a SentencePiece vocabulary from an iterable of sentences.

    Source and target sentences go into one vocabulary, as in the paper's
    shared source-target vocabulary. Training is deterministic for the same
    texts in the same order. Reserved ids: 0 padding, 1 start, 2 end,
    3 unknown. With `byte_fallback` (the default) a character missing from
    the vocabulary is spelled as its UTF-8 bytes (256 reserved pieces), so
    tokenization round-trips any text; without it, it becomes the unknown
    id.

    Args:
        texts: an iterable of `str` (or a `tf.data.Dataset` of scalar
            strings), e.g. the training split's source and target sentences.
        vocab_size: number of pieces, reserved ids included.
        model_type: "unigram" or "bpe".
        byte_fallback: spell unseen characters as bytes instead of unknown.

    Returns:
        A `SubwordTokenizer`.

    Example:

    >>> tokenizer = train_tokenizer(
    ...     ["Guten Morgen!", "Good morning!", "Wie geht es?", "How are you?"] * 20,
    ...     vocab_size=40,
    ...     byte_fallback=False,
    ... )
    >>> tokenizer.detokenize(tokenizer.tokenize(["Good morning!"])).numpy()
    array([b'Good morning!'], dtype=object)
    """
    if int(vocab_size) <= UNKNOWN_ID + 1:
        raise ValueError(f"vocab_size must be > {UNKNOWN_ID + 1}, got {vocab_size}.")
    if model_type not in ("unigram", "bpe"):
        raise ValueError(f"model_type must be 'unigram' or 'bpe', got {model_type!r}.")
    if isinstance(texts, tf.data.Dataset):
        texts = (text.decode("utf-8") for text in texts.as_numpy_iterator())
    sentences = [text for text in texts if text.strip()]
    if not sentences:
        raise ValueError("train_tokenizer needs at least one non-empty sentence.")
    model = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences),
            model_writer=model,
            vocab_size=int(vocab_size),
            model_type=model_type,
            pad_id=PAD_ID,
            bos_id=START_ID,
            eos_id=END_ID,
            unk_id=UNKNOWN_ID,
            character_coverage=1.0,
            shuffle_input_sentence=False,
            num_threads=1,
            hard_vocab_limit=False,
            byte_fallback=byte_fallback,
            minloglevel=2,
        )
    except RuntimeError as error:  # how SentencePiece reports bad settings
        raise ValueError(
            f"Could not train a {vocab_size}-piece vocabulary: {error}"
        ) from error
    return SubwordTokenizer(model.getvalue())


def check_sampling_alpha(alpha):
    """Raises `ValueError` unless `alpha` is None or a number > 0."""
    if alpha is not None and not alpha > 0:
        raise ValueError(f"sampling_alpha must be > 0, got {alpha}.")


class SubwordTokenizer(tf.Module):
    """A SentencePiece model applied with tensorflow-text ops.

    Tokenization and detokenization are graph ops, so the tokenizer can live
    inside a SavedModel. Whitespace is part of the pieces, so detokenizing
    gives back the text with its original casing and punctuation spacing
    (after SentencePiece's NFKC normalisation). Bytes that are not valid
    UTF-8 become U+FFFD, which the normalisation then drops, and
    characters the vocabulary has never seen are spelled as bytes (or map
    to the unknown id, for a model trained without byte fallback).

    The tensorflow-text op keeps the model in a TensorFlow resource, which
    `tf.random.set_seed` (and `keras.utils.set_random_seed`) discards in
    eager mode: seed first, then create or load tokenizers.

    Args:
        model: the serialized SentencePiece model (bytes).
        sampling_alpha: None (the default) for the most likely
            segmentation; a float > 0 to sample a segmentation for every
            tokenization instead (see `sampling`).

    Attributes:
        vocab_size: number of ids.
        sampling_alpha: the `sampling_alpha` argument.
        pad_id, start_id, end_id, unknown_id: the reserved ids.
    """

    pad_id, start_id, end_id, unknown_id = PAD_ID, START_ID, END_ID, UNKNOWN_ID

    def __init__(self, model, sampling_alpha=None):
        super().__init__(name="subword_tokenizer")
        check_sampling_alpha(sampling_alpha)
        self.model = bytes(model)
        self.sampling_alpha = sampling_alpha
        self._tokenizer = tf_text.SentencepieceTokenizer(
            model=self.model,
            nbest_size=0 if sampling_alpha is None else -1,
            alpha=1.0 if sampling_alpha is None else float(sampling_alpha),
        )
        self.vocab_size = int(self._tokenizer.vocab_size())
        if self._tokenizer.id_to_string(PAD_ID).numpy() != b"<pad>":
            raise ValueError(
                "The SentencePiece model does not reserve id 0 for padding; "
                "train it with train_tokenizer()."
            )

    @classmethod
    def load(cls, path):
        """Reads a model written by `save`."""
        if not os.path.exists(path):
            raise FileNotFoundError(f"No tokenizer model at {path}.")
        with open(path, "rb") as file:
            return cls(file.read())

    def sampling(self, alpha):
        """The same vocabulary, sampling segmentations: subword regularisation.

        Each call to `tokenize` draws a segmentation of every sentence from
        the unigram model's distribution over all segmentations, sharpened
        by `alpha` (Kudo, 2018); for a BPE model `alpha` is the BPE-dropout
        probability. Training on sampled segmentations is a data
        augmentation for small corpora. Smaller `alpha` gives more, shorter
        pieces; at alpha 0.3 the Ding sentences get about a fifth more
        pieces than the most likely segmentation. The samples come from
        SentencePiece's own random generator, which TensorFlow's seeds do
        not control.

        Example:

        >>> tokenizer = train_tokenizer(["Guten Morgen!", "Good morning!"] * 40,
        ...                             vocab_size=40, byte_fallback=False)
        >>> sampler = tokenizer.sampling(0.1)
        >>> tokenizer.detokenize(sampler.tokenize(["Good morning!"])).numpy()
        array([b'Good morning!'], dtype=object)
        """
        return SubwordTokenizer(self.model, sampling_alpha=alpha)

    def save(self, path):
        """Writes the SentencePiece model file (the vocabulary) to `path`."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as file:
            file.write(self.model)

    def tokenize(self, texts):
        """Strings (B,) -> int32 ragged ids (B, None), without start/end."""
        texts = tf.strings.unicode_transcode(
            tf.convert_to_tensor(texts, tf.string),
            "UTF-8",
            "UTF-8",
            errors="replace",
        )
        return tf.cast(self._tokenizer.tokenize(texts), tf.int32)

    def detokenize(self, ids):
        """Ids (B, L), dense or ragged -> strings (B,).

        Padding, start and end ids are dropped first.
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(ids))
        ids = tf.cast(ids, tf.int32)
        keep = (ids != PAD_ID) & (ids != START_ID) & (ids != END_ID)
        return self._tokenizer.detokenize(tf.ragged.boolean_mask(ids, keep))

    def id_to_piece(self, ids):
        """The pieces' strings, for inspection."""
        return self._tokenizer.id_to_string(ids)
