"""One subword vocabulary shared by source and target (SentencePiece)."""

import io
import itertools
import math
import os
import random
import zipfile

import sentencepiece
import tensorflow as tf

from keras_transformer.data.checks import check_sampling_alpha
from keras_transformer.data.sentencepiece_model import sentencepiece_tokenizer
from keras_transformer.special_ids import END_ID, PAD_ID, START_ID, UNKNOWN_ID

# Sentences a vocabulary is trained on at most (both sides of 250k pairs): a
# larger corpus is sampled. SentencePiece's peak memory follows its input,
# at about 20 bytes a character: some 1.5 GB for 500k sentences of WMT length.
SAMPLE_SENTENCES = 500_000
# SentencePiece's threads for a sampled corpus. Its result depends on the
# thread count, so it is fixed (not the machine's core count): the same
# corpus gives the same vocabulary everywhere. Smaller corpora use one
# thread, as they always did.
SAMPLED_THREADS = 16
_END = object()


def train_tokenizer(
    texts,
    vocab_size=8000,
    model_type="unigram",
    byte_fallback=True,
    sample_size=SAMPLE_SENTENCES,
    seed=0,
    num_threads=None,
):
    """Learns a SentencePiece vocabulary from sentences, or from a sample of them.

    Source and target sentences go into one vocabulary, as in the paper's
    shared source-target vocabulary. Reserved ids: 0 padding, 1 start,
    2 end, 3 unknown. With `byte_fallback` (the default) a character
    missing from the vocabulary is spelled as its UTF-8 bytes (256 reserved
    pieces), so tokenization round-trips any text; without it, it becomes
    the unknown id.

    The texts are read once, as a stream. Up to `sample_size` non-empty
    sentences, all of them are used in their order, with one thread, as
    they always were. A larger corpus is represented by a uniform random
    sample of `sample_size` sentences (`reservoir_sample`, seeded by
    `seed`), and only the sample is held in memory; SentencePiece then
    trains with `SAMPLED_THREADS` threads. SentencePiece's result depends
    on its thread count (its sums are split by thread), and not on the
    machine: training is deterministic for the same texts in the same order.

    Args:
        texts: an iterable of `str`, a `tf.data.Dataset` of scalar strings,
            or a `tf.data.Dataset` of `(source, target)` string pairs (for
            which the vocabulary is trained on all the sources, then all the
            targets, of the pairs or of a sample of `sample_size // 2` pairs).
        vocab_size: number of pieces, reserved ids included.
        model_type: "unigram" or "bpe".
        byte_fallback: spell unseen characters as bytes instead of unknown.
        sample_size: most sentences to train on.
        seed: the seed of the sample.
        num_threads: SentencePiece's threads; None for `SAMPLED_THREADS`
            when the texts are sampled, else 1. Pass `SAMPLED_THREADS` for
            texts that are already a sample of a larger corpus.

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
    if int(sample_size) < 2:
        raise ValueError(f"sample_size must be >= 2, got {sample_size}.")
    sentences, sampled = _training_sentences(texts, int(sample_size), seed)
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
            num_threads=num_threads or (SAMPLED_THREADS if sampled else 1),
            hard_vocab_limit=False,
            byte_fallback=byte_fallback,
            minloglevel=2,
        )
    except RuntimeError as error:  # how SentencePiece reports bad settings
        raise ValueError(
            f"Could not train a {vocab_size}-piece vocabulary: {error}"
        ) from error
    return SubwordTokenizer(model.getvalue())


def _training_sentences(texts, sample_size, seed):
    """(the non-empty sentences of `texts` or of their sample, whether sampled)."""
    if isinstance(texts, tf.data.Dataset) and isinstance(texts.element_spec, tuple):
        pairs, read = reservoir_sample(_rows(texts), sample_size // 2, seed)
        sentences = [
            text.decode("utf-8") for pair in zip(*pairs, strict=True) for text in pair
        ]
        return [text for text in sentences if text.strip()], read > len(pairs)
    if isinstance(texts, tf.data.Dataset):
        texts = (text.decode("utf-8") for text in _rows(texts))
    sample, read = reservoir_sample(
        (text for text in texts if text.strip()), sample_size, seed
    )
    return sample, read > len(sample)


def _rows(dataset, batch_size=4096):
    """The elements of a dataset of scalars or of tuples of scalars, as numpy
    values, read in batches (one element at a time is slow)."""
    for batch in dataset.batch(batch_size).as_numpy_iterator():
        yield from zip(*batch, strict=True) if isinstance(batch, tuple) else batch


def reservoir_sample(items, size, seed=0):
    """A uniform random sample of `size` items of a stream read once.

    Only the sample is held: memory follows `size`, not the stream. With at
    most `size` items, the sample is all of them in their order. Otherwise
    each item is kept with the same probability, by Li's reservoir
    algorithm L ("Reservoir-sampling algorithms of time complexity
    O(n(1 + log(N/n)))", 1994), which draws O(size log(n / size)) random
    numbers and skips the items between.

    Args:
        items: an iterable, read once.
        size: the sample's size, >= 1.
        seed: the seed of the draws.

    Returns:
        `(sample, read)`: a list of at most `size` items, and the number of
        items read.

    Example:

    >>> reservoir_sample("abc", 5)
    (['a', 'b', 'c'], 3)
    >>> sample, read = reservoir_sample(range(1000), 5, seed=1)
    >>> len(sample), read, all(0 <= n < 1000 for n in sample)
    (5, 1000, True)
    """
    items = iter(items)
    sample = list(itertools.islice(items, size))
    read = len(sample)
    if read < size:
        return sample, read
    draw = random.Random(seed)

    def shrink():  # U ** (1 / size) for U uniform in (0, 1]
        return math.exp(math.log(1.0 - draw.random()) / size)

    weight = shrink()
    while True:
        # items to pass over: geometric with success probability `weight`
        skip = math.floor(math.log(1.0 - draw.random()) / math.log1p(-weight))
        if skip:
            read += sum(1 for _ in itertools.islice(items, skip))
        item = next(items, _END)
        if item is _END:
            return sample, read
        read += 1
        sample[draw.randrange(size)] = item
        weight *= shrink()


def check_vocabulary(model, name="the SentencePiece model"):
    """Raises a one-line `ValueError` unless `model` (bytes) is a SentencePiece
    model with the package's reserved ids: 0 padding, 1 start, 2 end,
    3 unknown. `name` (e.g. the file) is named in the message.

    Returns:
        The model's number of pieces.

    Example:

    >>> tokenizer = train_tokenizer(["a b c d e"] * 10, 20, byte_fallback=False)
    >>> check_vocabulary(tokenizer.model) == tokenizer.vocab_size
    True
    >>> check_vocabulary(b"no model")
    Traceback (most recent call last):
    ...
    ValueError: the SentencePiece model is not a SentencePiece model.
    """
    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(bytes(model))
    except (OSError, RuntimeError):
        raise ValueError(f"{name} is not a SentencePiece model.") from None
    ids = {
        "padding": processor.pad_id(),
        "start": processor.bos_id(),
        "end": processor.eos_id(),
        "unknown": processor.unk_id(),
    }
    if list(ids.values()) != [PAD_ID, START_ID, END_ID, UNKNOWN_ID]:
        has = ", ".join(f"{role} {id_}" for role, id_ in ids.items())
        raise ValueError(
            f"{name} does not reserve ids 0 padding, 1 start, 2 end, 3 unknown "
            f"(it has {has}; -1 is none): train it with SentencePiece's "
            "--pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3, or with "
            "keras_transformer.data.train_tokenizer."
        )
    return processor.get_piece_size()


def load_tokenizer(path):
    """The tokenizer saved at `path`: a `SubwordTokenizer`'s SentencePiece
    model, or the zip of an imported Marian checkpoint's tokenizer files
    (`keras_transformer.marian.MarianTokenizer`)."""
    if os.path.exists(path) and zipfile.is_zipfile(path):
        from keras_transformer.marian.tokenizer import MarianTokenizer

        return MarianTokenizer.load(path)
    return SubwordTokenizer.load(path)


def sentencepiece_processors(path):
    """`(source, target)` `sentencepiece.SentencePieceProcessor`s of a saved
    tokenizer file (see `load_tokenizer`): its SentencePiece model twice, or
    an imported Marian tokenizer's source.spm and target.spm. Their pieces
    are the vocabulary's (a Marian vocabulary maps each piece to one id).
    Plain Python, for engines that take pieces (CTranslate2).
    """
    if zipfile.is_zipfile(path):
        from keras_transformer.marian.checkpoint import SOURCE_SPM, TARGET_SPM

        with zipfile.ZipFile(path) as archive:
            models = archive.read(SOURCE_SPM), archive.read(TARGET_SPM)
    else:
        with open(path, "rb") as file:
            models = (file.read(),) * 2
    return tuple(
        sentencepiece.SentencePieceProcessor(model_proto=model) for model in models
    )


def vocabulary_size(model, name="the SentencePiece model"):
    """The source ids of a saved tokenizer's bytes (see `load_tokenizer`),
    checked as `check_vocabulary` checks a SentencePiece model."""
    if zipfile.is_zipfile(io.BytesIO(model)):
        from keras_transformer.marian.tokenizer import MarianTokenizer

        with zipfile.ZipFile(io.BytesIO(model)) as archive:
            files = {name: archive.read(name) for name in archive.namelist()}
        return MarianTokenizer(files).vocab_size
    return check_vocabulary(model, name)


class SubwordTokenizer(tf.Module):
    """A SentencePiece model applied with tensorflow-text ops.

    Tokenization and detokenization are graph ops, so the tokenizer can live
    inside a SavedModel. Whitespace is part of the pieces, so detokenizing
    gives back the text with its original casing and punctuation spacing
    (after SentencePiece's NFKC normalisation). Bytes that are not valid
    UTF-8 become U+FFFD, which the normalisation then drops, and
    characters the vocabulary has never seen are spelled as bytes (or map
    to the unknown id, for a model trained without byte fallback).

    The model lives in a TensorFlow resource that seeding TensorFlow does
    not discard (`sentencepiece_model.sentencepiece_tokenizer`).

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
        check_vocabulary(model)
        self.model = bytes(model)
        self.sampling_alpha = sampling_alpha
        self._tokenizer = sentencepiece_tokenizer(
            self.model,
            nbest_size=0 if sampling_alpha is None else -1,
            alpha=1.0 if sampling_alpha is None else float(sampling_alpha),
        )
        self.vocab_size = int(self._tokenizer.vocab_size())

    @classmethod
    def load(cls, path):
        """Reads a model written by `save`."""
        if not os.path.exists(path):
            raise FileNotFoundError(f"No tokenizer model at {path}.")
        with open(path, "rb") as file:
            model = file.read()
        check_vocabulary(model, os.fspath(path))
        return cls(model)

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

    def tokenize_target(self, texts):
        """`tokenize`: targets share the vocabulary."""
        return self.tokenize(texts)

    def pieces(self):
        """`(source pieces, target pieces)`, lists of str by id: the same."""
        ids = tf.range(self.vocab_size)
        pieces = [piece.decode("utf-8") for piece in self.id_to_piece(ids).numpy()]
        return pieces, pieces

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
