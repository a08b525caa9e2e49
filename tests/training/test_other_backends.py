"""The paper's loss, metric, schedule and optimizer under JAX, without TensorFlow.

One subprocess under `KERAS_BACKEND=jax`, where `import tensorflow` fails,
computes the loss (and its gradient), the metric and the schedule on inputs
this process saves, and trains the tiny model with all four pieces; this
process, on TensorFlow, computes the same numbers and compares.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.training import (
    FusedAdam,
    LabelSmoothedCrossEntropy,
    MaskedAccuracy,
    TransformerSchedule,
    transformer_optimizer,
)
from tests.fixtures.backends import run_python

RNG = np.random.default_rng(0)
LABELS = np.array([[4, 2, 7, 0, 0], [1, 3, 0, 0, 0]])
LOGITS = RNG.normal(size=(2, 5, 9)).astype("float32")
PROBABILITIES = np.asarray(keras.ops.softmax(LOGITS))
STEPS = np.arange(0, 13000, 250)
# The paper's schedule, one with accumulation, one with a cool-down.
SCHEDULES = (
    {"d_model": 512, "warmup_steps": 4000},
    {"d_model": 64, "warmup_steps": 100, "steps_per_update": 3},
    {"d_model": 64, "warmup_steps": 100, "cooldown_steps": 2000, "total_steps": 4000},
)

JAX = f"""
import json

import jax
import keras
import numpy as np

from keras_transformer.models import TransformerConfig, build_transformer
from keras_transformer.training import (
    LabelSmoothedCrossEntropy,
    MaskedAccuracy,
    TransformerSchedule,
    transformer_optimizer,
)

inputs = np.load("inputs.npz")
labels, logits = inputs["labels"], inputs["logits"]
loss = LabelSmoothedCrossEntropy(0.1)
on_probabilities = LabelSmoothedCrossEntropy(0.1, from_logits=False)
metric = MaskedAccuracy()
for half in (slice(0, 1), slice(1, 2)):
    metric.update_state(labels[half], logits[half])
schedules = [TransformerSchedule(**kwargs) for kwargs in {SCHEDULES!r}]
results = {{
    "loss": float(loss(labels, logits)),
    "probabilities": float(on_probabilities(labels, inputs["probabilities"])),
    "gradient": np.asarray(jax.grad(lambda z: loss(labels, z))(logits)).tolist(),
    "accuracy": float(metric.result()),
    "schedules": [np.asarray(s(inputs["steps"])).tolist() for s in schedules],
}}

keras.utils.set_random_seed(0)
config = TransformerConfig.tiny(50, d_model=16, d_ff=32)
model = build_transformer(config)
optimizer = transformer_optimizer(config.d_model, warmup_steps=20)
model.compile(optimizer=optimizer, loss=loss, metrics=[MaskedAccuracy()])
source = np.random.default_rng(0).integers(4, 50, size=(16, 6))
source[8:, 4:] = 0  # half the sentences padded
target = np.concatenate([np.ones((16, 1), "int64"), source[:, :-1]], axis=1)
history = model.fit(
    {{"encoder_inputs": source, "decoder_inputs": target}},
    source,
    batch_size=8,
    epochs=10,
    verbose=0,
)
results["keras_adam"] = type(optimizer) is keras.optimizers.Adam
results["losses"] = history.history["loss"]
print(json.dumps(results))
"""


@pytest.mark.slow
@pytest.mark.tensorflow  # the reference numbers are TensorFlow's
def test_the_training_pieces_match_tensorflow_and_train_under_jax(tmp_path):
    np.savez(
        tmp_path / "inputs.npz",
        labels=LABELS,
        logits=LOGITS,
        probabilities=PROBABILITIES,
        steps=STEPS,
    )
    output = run_python(tmp_path, JAX, "jax", tensorflow=False)
    jax = json.loads(output.strip().splitlines()[-1])

    loss = LabelSmoothedCrossEntropy(0.1)
    logits = tf.Variable(LOGITS)
    with tf.GradientTape() as tape:
        value = loss(LABELS, logits)
    probabilities = LabelSmoothedCrossEntropy(0.1, from_logits=False)
    metric = MaskedAccuracy()
    for half in (slice(0, 1), slice(1, 2)):
        metric.update_state(LABELS[half], LOGITS[half])
    np.testing.assert_allclose(jax["loss"], float(value), rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        jax["probabilities"],
        float(probabilities(LABELS, PROBABILITIES)),
        rtol=0,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        jax["gradient"], tape.gradient(value, logits), rtol=0, atol=1e-6
    )
    assert jax["accuracy"] == float(metric.result())
    for kwargs, values in zip(SCHEDULES, jax["schedules"], strict=True):
        expected = TransformerSchedule(**kwargs)(STEPS)
        np.testing.assert_allclose(values, expected, rtol=1e-6, atol=0)

    assert jax["keras_adam"]
    assert jax["losses"][-1] < 0.9 * jax["losses"][0], jax["losses"]


@pytest.mark.tensorflow
def test_the_optimizer_is_fused_adam_on_tensorflow():
    assert type(transformer_optimizer(d_model=64)) is FusedAdam
