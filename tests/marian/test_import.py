"""A Marian checkpoint imported computes what transformers computed.

The references were written by tests/fixtures/make_marian_fixtures.py
(transformers + torch); these tests read only those files.
"""

import json
import os

import numpy as np
import pytest

from keras_transformer.marian import checkpoint, load_marian, vocabulary

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "marian")
VARIANTS = ("shared_swish", "shared_relu", "separate_swish")
_LOADED = {}


def loaded(variant):
    """(model, tokenizer, generation, reference, folder), loaded once a variant."""
    if variant not in _LOADED:
        folder = os.path.join(FIXTURES, variant)
        with open(os.path.join(folder, "reference.json"), encoding="utf-8") as file:
            reference = json.load(file)
        _LOADED[variant] = (*load_marian(folder), reference, folder)
    return _LOADED[variant]


def orders(folder):
    """Marian's ids in our order, of the source and the target vocabulary."""
    source = checkpoint.read_json(folder, checkpoint.VOCAB)
    target = source
    if os.path.exists(os.path.join(folder, checkpoint.TARGET_VOCAB)):
        target = checkpoint.read_json(folder, checkpoint.TARGET_VOCAB)
    return vocabulary.marian_order(source), vocabulary.marian_order(target)


def to_ours(ids, order):
    """Marian's ids -> ours."""
    table = np.empty(len(order), "int64")
    table[order] = np.arange(1, len(order) + 1)
    return table[np.asarray(ids, "int64")]


@pytest.mark.parametrize("variant", VARIANTS)
def test_logits_equal_transformers(variant):
    model, _, _, reference, folder = loaded(variant)
    source_order, target_order = orders(folder)
    source_pad = int(source_order[0])
    inputs = np.array(reference["input_ids"])
    encoder_inputs = np.where(inputs == source_pad, 0, to_ours(inputs, source_order))
    labels = np.array(reference["labels"])
    start = target_order[0]
    decoder_inputs = to_ours(
        np.concatenate([np.full((len(labels), 1), start), labels[:, :-1]], 1),
        target_order,
    )
    logits = np.array(
        model({"encoder_inputs": encoder_inputs, "decoder_inputs": decoder_inputs})
    )
    # Our column k + 1 is Marian's id order[k]; Marian's <pad> is banned.
    marian_logits = logits[..., 1:][..., np.argsort(target_order)]
    expected = np.load(os.path.join(folder, "logits.npy"))
    real = labels != start
    kept = np.arange(expected.shape[-1]) != start
    np.testing.assert_allclose(
        marian_logits[real][:, kept], expected[real][:, kept], atol=1e-4
    )
    # Padding and start (Marian's <pad>) are never generated.
    assert (logits[..., :2] < logits[..., 2:].min(axis=-1, keepdims=True)).all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_tokenizer_gives_transformers_ids(variant):
    _, tokenizer, _, reference, folder = loaded(variant)
    source_order, _ = orders(folder)
    ids = tokenizer.tokenize(reference["sources"]).to_list()
    expected = [
        to_ours(row[:-1], source_order).tolist() for row in reference["source_ids"]
    ]
    assert ids == expected
