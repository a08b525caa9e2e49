"""A Transformer trained to reverse sequences decodes held-out inputs exactly."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.decoding import decode
from tests.reversal import reversal_data

VOCAB, MAX_LENGTH = 16, 8


def trained_model():
    keras.utils.set_random_seed(0)
    config = kt.TransformerConfig.tiny(
        VOCAB, d_model=64, d_ff=128, dropout=0.0, warmup_steps=200
    )
    model = kt.build_transformer(config)
    sources, decoder_inputs, labels = reversal_data(10000, VOCAB, MAX_LENGTH, seed=0)
    epochs, batch_size = 8, 64
    # Without the cool-down the final learning rate is still high enough to
    # swing exact-match accuracy between 0.86 and 0.99 from epoch to epoch,
    # by CPU (the numerics differ between CPUs).
    optimizer = kt.transformer_optimizer(
        config.d_model,
        config.warmup_steps,
        0.5,
        cooldown_steps=400,
        total_steps=epochs * math.ceil(len(sources) / batch_size),
    )
    model.compile(
        optimizer=optimizer, loss=kt.LabelSmoothedCrossEntropy(config.label_smoothing)
    )
    inputs = {"encoder_inputs": sources, "decoder_inputs": decoder_inputs}
    train = tf.data.Dataset.from_tensor_slices((inputs, labels))
    train = train.shuffle(len(sources), seed=0).batch(batch_size)
    model.fit(train, epochs=epochs, verbose=0)
    return model


@pytest.mark.slow
def test_greedy_and_beam_search_reverse_held_out_sequences():
    model = trained_model()
    sources, _, expected = reversal_data(300, VOCAB, MAX_LENGTH, seed=1)  # labels
    for beam_size in (1, 4):
        translate = tf.function(
            lambda x, k=beam_size: decode(model, x, beam_size=k, extra_length=5),
            input_signature=[tf.TensorSpec([None, None], tf.int32)],
        )
        ids = translate(sources)[0].numpy()[:, 0]  # (N, MAX_LENGTH + 5)
        padded_expected = np.pad(
            expected, [(0, 0), (0, ids.shape[1] - expected.shape[1])]
        )
        exact = np.all(ids == padded_expected, axis=1)
        assert exact.mean() >= 0.95, (beam_size, exact.mean())
