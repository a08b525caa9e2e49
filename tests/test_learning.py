"""The model, loss, metric and optimizer together learn a toy task.

Sequence reversal needs both attention paths: cross-attention to find the
source token at the mirrored position and causal self-attention to know how
far the target has got. The shared reversal translator learns it in a few
CPU epochs; the example script's data (`examples/train_reverse.py`) is
checked here too.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
from examples.train_reverse import END, START, reversal_data
from keras_transformer.data import make_dataset
from tests.fixtures.reversal import MAX_LENGTH

VOCAB_SIZE = 16  # 0 padding, 1 start, 2 end, 3..15 tokens
MAX_SOURCE_LENGTH = 10
PAD = 0
TARGET_ACCURACY = 0.97  # an untrained model scores under 0.5


def reversal_task(count, seed):
    return reversal_data(count, VOCAB_SIZE, MAX_SOURCE_LENGTH, seed)


def test_reversal_task_is_well_formed():
    sources, decoder_inputs, labels = reversal_task(50, seed=3)
    examples = zip(sources, decoder_inputs, labels, strict=True)
    for source, decoder_input, label in examples:
        tokens = source[source != PAD]
        assert 2 <= len(tokens) <= MAX_SOURCE_LENGTH
        assert tokens.min() >= 3 and tokens.max() < VOCAB_SIZE
        np.testing.assert_array_equal(label[label != PAD], [*tokens[::-1], END])
        np.testing.assert_array_equal(
            decoder_input[decoder_input != PAD], [START, *tokens[::-1]]
        )
        # Teacher forcing: the decoder sees the labels shifted right by one,
        # and every real label has a real decoder input at its position.
        shifted = decoder_input[1:] != PAD
        np.testing.assert_array_equal(decoder_input[1:][shifted], label[:-1][shifted])
        np.testing.assert_array_equal(decoder_input != PAD, label != PAD)


@pytest.mark.slow
def test_learns_to_reverse_held_out_sequences(translator, held_out):
    """The shared reversal translator (tests/fixtures/reversal.py) was trained
    with the paper's pieces: `LabelSmoothedCrossEntropy(0.1)`,
    `transformer_optimizer` (warm-up, then inverse square root) and
    `MaskedAccuracy`, from the weights an untrained model of its config has."""
    sources, targets = (list(texts) for texts in zip(*held_out, strict=True))
    batches = make_dataset(
        tf.data.Dataset.from_tensor_slices((sources, targets)),
        translator.tokenizer,
        max_length=MAX_LENGTH,
        tokens_per_batch=640,
    )
    keras.utils.set_random_seed(0)
    untrained = kt.build_transformer(translator.model.config)
    assert masked_accuracy(untrained, batches) < 0.5
    assert masked_accuracy(translator.model, batches) >= TARGET_ACCURACY


def masked_accuracy(model, batches):
    """`MaskedAccuracy` of `model` over `batches` of (inputs, labels)."""
    metric = kt.MaskedAccuracy()
    for inputs, labels in batches:
        metric.update_state(labels, model(inputs, training=False))
    return float(metric.result())


def test_guided_alignment_trains_one_head_toward_any_given_links():
    """Links the task does not need (every target token to the first source
    token) are learned by the head that aligns, one head of one layer,
    while the translation loss falls too."""
    sources, decoder_inputs, labels = reversal_task(512, seed=4)
    links = np.zeros(labels.shape + sources.shape[1:], "float32")  # (N, T, S)
    links[..., 0] = labels > 2  # each token's row, not the end's
    config = kt.TransformerConfig.tiny(
        VOCAB_SIZE, d_model=32, d_ff=64, dropout=0.0, alignment_heads=1
    )
    model = kt.build_transformer(config, alignment_output=True)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss={
            "logits": kt.LabelSmoothedCrossEntropy(0.0),
            "alignment": kt.training.GuidedAlignmentLoss(heads=1),
        },
        loss_weights={"logits": 1.0, "alignment": 1.0},
    )
    inputs = {"encoder_inputs": sources, "decoder_inputs": decoder_inputs}
    history = model.fit(
        inputs,
        {"logits": labels, "alignment": links},
        batch_size=64,
        epochs=4,
        verbose=0,
    ).history
    assert history["logits_loss"][-1] < history["logits_loss"][0]
    assert history["alignment_loss"][-1] < 0.2 * history["alignment_loss"][0]
    attention = np.asarray(model.predict(inputs, verbose=0)["alignment"])[:, 0]
    linked = links.sum(axis=-1) > 0  # (N, T)
    assert (attention.argmax(axis=-1)[linked] == 0).mean() > 0.95
