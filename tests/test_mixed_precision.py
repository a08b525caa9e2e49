"""Training and attention under the mixed_float16 and mixed_bfloat16 policies."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
from examples.train_reverse import reversal_data

VOCAB_SIZE = 24
BATCH = 8
STEPS = 4
LABEL_SMOOTHING = 0.1  # the paper's


@pytest.fixture(params=["mixed_float16", "mixed_bfloat16"])
def policy(request):
    """Sets a global mixed policy for one test and restores float32 after."""
    keras.mixed_precision.set_global_policy(request.param)
    try:
        yield keras.mixed_precision.global_policy()
    finally:
        keras.mixed_precision.set_global_policy("float32")


def tiny_config(**overrides):
    values = dict(
        d_model=32,
        num_heads=4,
        d_ff=64,
        num_encoder_layers=1,
        num_decoder_layers=1,
    )
    return kt.TransformerConfig.tiny(VOCAB_SIZE, **{**values, **overrides})


def copy_task(count, seed):
    """Random sources of 2-8 tokens, their reversal as target, 0-padded."""
    sources, decoder_inputs, labels = reversal_data(count, VOCAB_SIZE, 8, seed)
    return {"encoder_inputs": sources, "decoder_inputs": decoder_inputs}, labels


def test_fit_under_mixed_policy_is_finite(policy):
    keras.utils.set_random_seed(0)
    config = tiny_config()
    model = kt.build_transformer(config)
    assert model.compute_dtype == policy.compute_dtype
    assert model.compute_dtype in ("float16", "bfloat16")
    assert {w.dtype for w in model.trainable_weights} == {"float32"}

    inputs, labels = copy_task(BATCH * STEPS, seed=0)
    logits = model({name: x[:BATCH] for name, x in inputs.items()}, training=False)
    assert logits.dtype == "float32"
    assert tuple(logits.shape) == (BATCH, labels.shape[1], VOCAB_SIZE)
    assert np.isfinite(np.asarray(logits)).all()

    model.compile(
        optimizer=kt.transformer_optimizer(config.d_model, warmup_steps=10),
        loss=kt.LabelSmoothedCrossEntropy(LABEL_SMOOTHING),
        metrics=[kt.MaskedAccuracy()],
    )
    # Keras 3 wraps the optimizer in dynamic loss scaling for float16 only;
    # bfloat16 has float32's exponent range and needs none.
    is_loss_scaled = isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert is_loss_scaled == (policy.name == "mixed_float16")

    before = [np.array(w) for w in model.trainable_weights]
    data = tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(BATCH)
    history = model.fit(data, epochs=1, verbose=0)
    loss = history.history["loss"][0]
    assert np.isfinite(loss) and loss > 0
    after = [np.array(w) for w in model.trainable_weights]
    assert all(np.isfinite(w).all() for w in after)
    # At least one step was applied (loss scaling skips non-finite steps).
    assert any(not np.array_equal(b, a) for b, a in zip(before, after, strict=True))
    assert {w.dtype for w in model.trainable_weights} == {"float32"}


def test_fully_padded_keys_give_finite_attention(policy):
    keras.utils.set_random_seed(1)
    layer = kt.MultiHeadAttention(num_heads=2, key_dim=8)
    rng = np.random.default_rng(1)
    # Large activations, so that a fill value overflowing the compute dtype
    # or an unmasked row maximum would show up as inf or NaN.
    query = (30 * rng.standard_normal((2, 3, 16))).astype("float32")
    value = (30 * rng.standard_normal((2, 5, 16))).astype("float32")
    padding_mask = np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]], bool)

    outputs, probabilities = layer(
        query, value, padding_mask=padding_mask, return_attention_scores=True
    )
    assert outputs.dtype == policy.compute_dtype
    outputs = np.asarray(ops_float32(outputs))
    probabilities = np.asarray(ops_float32(probabilities))
    assert np.isfinite(outputs).all()
    assert np.isfinite(probabilities).all()
    # Padding gets no weight where a real key exists; rows still sum to 1.
    np.testing.assert_array_equal(probabilities[0, :, :, 3:], 0.0)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-2)

    causal_outputs = layer(
        query, query, padding_mask=np.zeros((2, 3), bool), use_causal_mask=True
    )
    assert np.isfinite(np.asarray(ops_float32(causal_outputs))).all()


def test_fully_padded_source_gives_finite_logits(policy):
    keras.utils.set_random_seed(2)
    model = kt.build_transformer(tiny_config(dropout=0.0))
    inputs, _ = copy_task(2, seed=2)
    inputs["encoder_inputs"][1] = 0  # the second source is all padding
    logits = np.asarray(model(inputs, training=False))
    assert logits.dtype == np.float32
    assert np.isfinite(logits).all()


def ops_float32(x):
    return keras.ops.cast(x, "float32")


LONG_RUN_EPOCHS = 20
LONG_RUN_STEPS_PER_EPOCH = 30


@pytest.mark.slow
def test_hundreds_of_mixed_precision_steps_learn_and_stay_finite(policy):
    """600 steps of the reversal task: the loss falls and is never NaN/inf."""
    keras.utils.set_random_seed(0)
    config = tiny_config(dropout=0.1)
    model = kt.build_transformer(config)
    model.compile(
        optimizer=kt.transformer_optimizer(config.d_model, warmup_steps=50),
        loss=kt.LabelSmoothedCrossEntropy(LABEL_SMOOTHING),
        metrics=[kt.MaskedAccuracy()],
    )
    count = 32 * LONG_RUN_STEPS_PER_EPOCH
    data = tf.data.Dataset.from_tensor_slices(copy_task(count, seed=1))
    history = model.fit(
        data.shuffle(count, seed=0).batch(32).repeat(),
        epochs=LONG_RUN_EPOCHS,
        steps_per_epoch=LONG_RUN_STEPS_PER_EPOCH,
        callbacks=[keras.callbacks.TerminateOnNaN()],
        verbose=0,
    )
    losses = history.history["loss"]
    assert len(losses) == LONG_RUN_EPOCHS  # TerminateOnNaN never stopped it
    assert np.isfinite(losses).all()
    assert losses[-1] < 0.6 * losses[0]
    assert history.history["masked_accuracy"][-1] > 0.5
    assert all(np.isfinite(np.asarray(w)).all() for w in model.weights)
