"""The model, loss, metric and optimizer together learn a toy task.

Sequence reversal needs both attention paths: cross-attention to find the
source token at the mirrored position and causal self-attention to know how
far the target has got. A tiny model learns it in a few CPU epochs.
"""

import keras
import numpy as np
import pytest

import keras_transformer as kt
from examples.train_reverse import END, START, reversal_data, reversal_dataset

VOCAB_SIZE = 16  # 0 padding, 1 start, 2 end, 3..15 tokens
MAX_SOURCE_LENGTH = 10
PAD = 0
TRAIN_EXAMPLES = 20_000
HELD_OUT_EXAMPLES = 2_000
BATCH = 64
EPOCHS = 5
TARGET_ACCURACY = 0.97  # an untrained model scores under 0.5
LABEL_SMOOTHING = 0.1  # the paper's


def reversal_task(count, seed):
    return reversal_data(count, VOCAB_SIZE, MAX_SOURCE_LENGTH, seed)


def dataset(data, shuffle=False):
    examples = reversal_dataset(data)
    if shuffle:
        examples = examples.shuffle(len(data[0]), seed=0)
    return examples.batch(BATCH)


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
def test_learns_to_reverse_held_out_sequences():
    train = reversal_task(TRAIN_EXAMPLES, seed=0)
    held_out = reversal_task(HELD_OUT_EXAMPLES, seed=1)
    seen = {source.tobytes() for source in train[0]}
    unseen = np.array([source.tobytes() not in seen for source in held_out[0]])
    held_out = tuple(array[unseen] for array in held_out)
    assert len(held_out[0]) > HELD_OUT_EXAMPLES // 2

    keras.utils.set_random_seed(0)
    config = kt.TransformerConfig.tiny(
        VOCAB_SIZE, d_model=64, d_ff=128, num_heads=4, dropout=0.0
    )
    model = kt.build_transformer(config)
    # A learning rate 5-10x below scale 1-2 avoids the loss spikes that the
    # paper's Adam (beta_2=0.98, epsilon=1e-9) shows on this task; with it,
    # eight seeds ended at 0.998-1.0 held-out accuracy after five epochs.
    # Since the blocks make their sub-layers in build() (issue 54) seed 0
    # draws other weights and ends at 0.978, seeds 1 and 2 at >= 0.99.
    model.compile(
        optimizer=kt.transformer_optimizer(config.d_model, warmup_steps=200, scale=0.2),
        loss=kt.LabelSmoothedCrossEntropy(LABEL_SMOOTHING),
        metrics=[kt.MaskedAccuracy()],
    )
    untrained = model.evaluate(dataset(held_out), verbose=0, return_dict=True)
    assert untrained["masked_accuracy"] < 0.5

    model.fit(dataset(train, shuffle=True), epochs=EPOCHS, verbose=0)

    trained = model.evaluate(dataset(held_out), verbose=0, return_dict=True)
    assert trained["masked_accuracy"] >= TARGET_ACCURACY, trained
