"""k accumulated micro-batches update the model like one batch k times larger."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.training import fix_distributed_fit
from keras_transformer.training.checkpoints import batches_trained

MICRO_BATCH = 4
ACCUMULATION = 3
UPDATES = 2
LENGTH = 6
VOCAB_SIZE = 24
SCALE = 0.02  # Adam then moves weights by about 0.0025 per update
# Adam's update g / (sqrt(v) + epsilon) is about sign(g) for the paper's
# epsilon of 1e-9, so a gradient at round-off level (attention key biases
# have a zero gradient; so do dead ReLU units) would move its weight a whole
# step either way. A larger epsilon makes such updates vanish instead.
EPSILON = 1e-4
WEIGHT_ATOL = 2e-6


def reversal_batches(batch_size):
    """Every example has LENGTH real target tokens, so every micro-batch holds
    the same token count and the mean of micro-batch means is the batch mean."""
    rng = np.random.default_rng(0)
    count = MICRO_BATCH * ACCUMULATION * UPDATES
    sources = rng.integers(3, VOCAB_SIZE, size=(count, LENGTH)).astype("int32")
    targets = sources[:, ::-1]
    start = np.ones((count, 1), "int32")
    inputs = {
        "encoder_inputs": sources,
        "decoder_inputs": np.concatenate([start, targets[:, :-1]], axis=1),
    }
    return tf.data.Dataset.from_tensor_slices((inputs, targets)).batch(batch_size)


def tiny_model():
    config = kt.TransformerConfig.tiny(VOCAB_SIZE, d_model=32, d_ff=64, dropout=0.0)
    return kt.build_transformer(config)


def weights_by_path(model):
    return {weight.path: np.asarray(weight) for weight in model.weights}


def trained(initial_weights, batch_size, accumulation):
    model = tiny_model()
    model.set_weights(initial_weights)
    model.compile(
        optimizer=kt.transformer_optimizer(
            32,
            warmup_steps=2,
            scale=SCALE,
            gradient_accumulation_steps=accumulation,
            epsilon=EPSILON,
        ),
        loss=kt.LabelSmoothedCrossEntropy(0.1),
    )
    model.fit(reversal_batches(batch_size), epochs=1, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == UPDATES
    return model


def test_accumulated_micro_batches_equal_one_large_batch():
    keras.utils.set_random_seed(1)
    initial = tiny_model()
    large = trained(initial.get_weights(), MICRO_BATCH * ACCUMULATION, None)
    accumulated = trained(initial.get_weights(), MICRO_BATCH, ACCUMULATION)
    assert batches_trained(large.optimizer) == UPDATES
    assert batches_trained(accumulated.optimizer) == UPDATES * ACCUMULATION

    before = weights_by_path(initial)
    expected = weights_by_path(large)
    moved = max(np.abs(expected[path] - before[path]).max() for path in before)
    assert moved > 100 * WEIGHT_ATOL  # the updates are far above the tolerance
    for path, weight in weights_by_path(accumulated).items():
        np.testing.assert_allclose(
            weight, expected[path], atol=WEIGHT_ATOL, err_msg=path
        )


def test_accumulation_under_a_strategy_is_refused_with_the_keras_issue():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        kt.transformer_optimizer(32, gradient_accumulation_steps=1)  # no error
        with pytest.raises(ValueError, match="keras-team/keras#20582"):
            kt.transformer_optimizer(32, gradient_accumulation_steps=2)


def test_keras_accumulation_still_fails_under_a_strategy():
    """Why the refusal above exists; once Keras fixes keras#20582 this fails,
    and the checks in `transformer_optimizer` and the run config can go."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        model = fix_distributed_fit(tiny_model())
        model.compile(
            optimizer=keras.optimizers.Adam(gradient_accumulation_steps=2),
            loss=kt.LabelSmoothedCrossEntropy(0.1),
        )
    with pytest.raises(RuntimeError, match="merge_call"):
        model.fit(reversal_batches(MICRO_BATCH), epochs=1, verbose=0)
