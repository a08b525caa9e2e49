"""One small translator trained to reverse words, exported once, for the session.

Sources are 3..8 "words", each one of 16 lowercase letters, and targets are
the same words reversed; each word is one SentencePiece piece ("▁a"), so the
reversal is also a reversal of pieces, which the alignment tests rely on.
"""

import os

import filelock
import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
import keras_transformer.models.transformer  # noqa: F401  (registers the model for loading)
from keras_transformer.data import SubwordTokenizer, make_dataset, train_tokenizer
from keras_transformer.export import Translator, export_translator

LETTERS = "abcdefghijklmnop"
MAX_LENGTH = 16
LABEL_SMOOTHING = 0.1  # the paper's
TRAIN_PAIRS = 10000


def reversal_pairs(count, seed):
    """`count` (source, target) pairs: 3..8 space-separated letters, reversed."""
    rng = np.random.default_rng(seed)
    pairs = []
    for length in rng.integers(3, 9, count):
        words = [str(word) for word in rng.choice(list(LETTERS), length)]
        pairs.append((" ".join(words), " ".join(words[::-1])))
    return pairs


def train_reversal_translator():
    train = reversal_pairs(TRAIN_PAIRS, seed=0)
    keras.utils.set_random_seed(0)
    tokenizer = train_tokenizer(
        [text for pair in train for text in pair], vocab_size=40, byte_fallback=False
    )
    pieces = tokenizer.tokenize(list(LETTERS)).to_list()
    assert [tokenizer.id_to_piece(ids[0]).numpy() for ids in pieces] == [
        f"▁{letter}".encode() for letter in LETTERS
    ]
    assert all(len(ids) == 1 for ids in pieces)
    return reversal_translator(tokenizer, train)


def reversal_translator(tokenizer, train, epochs=10, warmup_steps=200, **overrides):
    """A tiny model trained on the `train` pairs for `epochs` x 100 steps.

    `overrides` change its config, e.g. `norm_first=True`. The caller seeds.
    """
    config = kt.TransformerConfig.tiny(
        tokenizer.vocab_size,
        d_model=64,
        d_ff=128,
        # Without dropout, held-out greedy accuracy swung between 0.36 and 1.0
        # with float rounding changes alone (training accuracy near 1.0 in
        # each); with 0.1 it was 0.99 for two seeds.
        dropout=0.1,
    ).replace(**overrides)
    model = kt.build_transformer(config)
    model.compile(
        optimizer=kt.transformer_optimizer(config.d_model, warmup_steps, 0.5),
        loss=kt.LabelSmoothedCrossEntropy(LABEL_SMOOTHING),
        metrics=[kt.MaskedAccuracy()],
    )
    sources, targets = (list(texts) for texts in zip(*train, strict=True))
    batches = make_dataset(
        tf.data.Dataset.from_tensor_slices((sources, targets)),
        tokenizer,
        max_length=MAX_LENGTH,
        tokens_per_batch=640,
        seed=0,
        repeat=True,
    )
    model.fit(batches, steps_per_epoch=100, epochs=epochs, shuffle=False, verbose=0)
    return Translator(model, tokenizer, max_length=MAX_LENGTH)


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """(the translator, its training sources), trained once per test run.

    Under pytest-xdist the first worker to ask trains and saves it in the
    folder its workers share; the others wait for it and load it.
    """
    folder = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = folder.parent  # this run's, shared by its workers
    folder = folder / "reversal_translator"
    with filelock.FileLock(f"{folder}.lock"):
        if folder.exists():
            model = keras.saving.load_model(folder / "model.keras", compile=False)
            tokenizer = SubwordTokenizer.load(folder / "tokenizer.model")
            translator = Translator(model, tokenizer, max_length=MAX_LENGTH)
        else:
            translator = train_reversal_translator()
            folder.mkdir()
            translator.model.save(folder / "model.keras")
            translator.tokenizer.save(folder / "tokenizer.model")
    return translator, {source for source, _ in reversal_pairs(TRAIN_PAIRS, seed=0)}


@pytest.fixture(scope="session")
def translator(trained):
    return trained[0]


@pytest.fixture(scope="session")
def held_out(trained):
    """200 (source, reversed source) pairs whose sources were not trained on."""
    seen = trained[1]
    pairs = [pair for pair in reversal_pairs(400, seed=1) if pair[0] not in seen]
    return pairs[:200]


@pytest.fixture(scope="session")
def exported(translator, tmp_path_factory):
    """The path of `translator` exported as `<tmp>/translator/1`."""
    return export_translator(
        translator, str(tmp_path_factory.mktemp("saved_models")), "translator"
    )


@pytest.fixture(scope="session")
def reloaded(exported):
    return tf.saved_model.load(exported)


@pytest.fixture(params=["in_process", "saved_model"])
def signatures(request):
    """The serving signatures by name, of the translator or of its SavedModel.

    Both are called the way TF Serving calls them: keyword tensors only.
    """
    if request.param == "in_process":
        return request.getfixturevalue("translator").signatures()
    return request.getfixturevalue("reloaded").signatures
