"""`fit` under MirroredStrategy on two CPUs equals `fit` on one device.

The loss divides each replica's summed token losses by the token count of the
whole global batch (`training/losses.py`, `global_sum`), so splitting a batch
whose examples have very different numbers of real tokens must not change the
loss, the gradients or the weights. Logical devices can only be configured
before TensorFlow initialises, so the two-replica run happens in a subprocess.
"""

import json
import pathlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

import keras_transformer as kt
from examples.train_reverse import reversal_dataset, reversal_rows

VOCAB_SIZE = 20
GLOBAL_BATCH = 8
NUM_BATCHES = 4
LABEL_SMOOTHING = 0.1
LEARNING_RATE = 0.5
LOSS_RTOL = 1e-5
WEIGHT_ATOL = 1e-5
SUBPROCESS_TIMEOUT_S = 240
REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]

CONFIG = dict(
    vocab_size=VOCAB_SIZE,
    d_model=32,
    num_heads=4,
    d_ff=64,
    num_encoder_layers=1,
    num_decoder_layers=1,
    dropout=0.0,
)

# Runs in a fresh interpreter: two logical CPUs first, then the same model,
# weights, data and optimizer as the single-device run, under MirroredStrategy.
MIRRORED_SCRIPT = textwrap.dedent(
    """
    import json
    import sys

    import tensorflow as tf

    (cpu,) = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )

    import numpy as np

    sys.path.insert(0, sys.argv[2])
    from tests import test_distribution as t
    from keras_transformer.training import fix_distributed_fit

    workdir = sys.argv[1]
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2, strategy.num_replicas_in_sync
    with strategy.scope():
        model = fix_distributed_fit(t.build_model(workdir + "/initial.weights.h5"))
    losses = t.fit_and_record_losses(model, t.load_data(workdir + "/data.npz"))
    np.savez(
        workdir + "/mirrored_weights.npz",
        *[np.asarray(w) for w in model.get_weights()],
    )
    with open(workdir + "/mirrored.json", "w") as f:
        json.dump({"losses": losses, "replicas": strategy.num_replicas_in_sync}, f)
    """
)


def make_data():
    """Global batches whose first half is short and second half long.

    MirroredStrategy hands the first half of each global batch to replica 0
    and the second half to replica 1, so the replicas see very different
    numbers of real tokens (2-3 against 9-10 per example): a per-replica
    mean would weight the tokens of the short half more heavily.
    """
    rng = np.random.default_rng(7)
    is_short = np.arange(GLOBAL_BATCH * NUM_BATCHES) % GLOBAL_BATCH < GLOBAL_BATCH // 2
    lengths = [
        rng.integers(2, 4) if short else rng.integers(9, 11) for short in is_short
    ]
    return reversal_rows(lengths, VOCAB_SIZE, 10, rng)


def load_data(path):
    with np.load(path) as data:
        return data["sources"], data["decoder_inputs"], data["labels"]


def dataset(data):
    return reversal_dataset(data).batch(GLOBAL_BATCH)


def build_model(weights_path):
    """The compiled model with the weights stored at `weights_path`."""
    model = kt.build_transformer(kt.TransformerConfig.tiny(**CONFIG))
    model.load_weights(weights_path)
    model.compile(
        optimizer=keras.optimizers.SGD(LEARNING_RATE),
        loss=kt.LabelSmoothedCrossEntropy(LABEL_SMOOTHING),
        jit_compile=False,
    )
    return model


class BatchLosses(keras.callbacks.Callback):
    """Records the running mean loss `fit` reports after every batch."""

    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))


def fit_and_record_losses(model, data):
    """One epoch of `NUM_BATCHES` steps; returns the per-step losses."""
    recorder = BatchLosses()
    model.fit(dataset(data), epochs=1, callbacks=[recorder], verbose=0)
    # `fit` reports a running mean over equal-sized batches; undo it.
    running = np.asarray(recorder.losses)
    totals = running * np.arange(1, len(running) + 1)
    return np.diff(totals, prepend=0.0).tolist()


def reference_loss(labels, logits, epsilon):
    """The label-smoothed loss, averaged over the given real tokens, in NumPy."""
    logits = logits.astype("float64")
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    true = np.take_along_axis(log_probabilities, labels[..., None], -1)[..., 0]
    losses = -(1 - epsilon) * true - epsilon * log_probabilities.mean(-1)
    real = labels != 0
    return losses[real].sum() / real.sum()


@pytest.mark.slow
def test_mirrored_fit_equals_single_device_fit(tmp_path):
    data = make_data()
    sources, decoder_inputs, labels = data
    np.savez(
        tmp_path / "data.npz",
        sources=sources,
        decoder_inputs=decoder_inputs,
        labels=labels,
    )
    keras.utils.set_random_seed(0)
    initial = kt.build_transformer(kt.TransformerConfig.tiny(**CONFIG))
    initial.save_weights(tmp_path / "initial.weights.h5")

    # Step 0 by hand: mean over all real tokens of the first global batch.
    first = slice(0, GLOBAL_BATCH)
    inputs = {"encoder_inputs": sources[first], "decoder_inputs": decoder_inputs[first]}
    logits = np.asarray(initial(inputs, training=False))
    expected_step0 = reference_loss(labels[first], logits, LABEL_SMOOTHING)
    # What averaging each replica's own token mean would give instead.
    half = GLOBAL_BATCH // 2
    naive_step0 = np.mean(
        [
            reference_loss(labels[:half], logits[:half], LABEL_SMOOTHING),
            reference_loss(labels[half : first.stop], logits[half:], LABEL_SMOOTHING),
        ]
    )
    # The data must be able to tell the two apart, or the test proves nothing.
    assert abs(naive_step0 - expected_step0) > 100 * LOSS_RTOL * expected_step0

    single = build_model(tmp_path / "initial.weights.h5")
    single_losses = fit_and_record_losses(single, data)
    np.testing.assert_allclose(single_losses[0], expected_step0, rtol=LOSS_RTOL)

    script = tmp_path / "mirrored.py"
    script.write_text(MIRRORED_SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    mirrored = json.loads((tmp_path / "mirrored.json").read_text())
    assert mirrored["replicas"] == 2

    assert len(mirrored["losses"]) == len(single_losses) == NUM_BATCHES
    np.testing.assert_allclose(mirrored["losses"], single_losses, rtol=LOSS_RTOL)
    with np.load(tmp_path / "mirrored_weights.npz") as stored:
        mirrored_weights = [stored[f"arr_{i}"] for i in range(len(stored.files))]
    single_weights = single.get_weights()
    assert len(mirrored_weights) == len(single_weights)
    moved = 0.0
    for initial_weight, single_weight, mirrored_weight in zip(
        initial.get_weights(), single_weights, mirrored_weights, strict=True
    ):
        np.testing.assert_allclose(mirrored_weight, single_weight, atol=WEIGHT_ATOL)
        moved = max(moved, np.abs(single_weight - initial_weight).max())
    # Training must have changed the weights by far more than the tolerance.
    assert moved > 1000 * WEIGHT_ATOL
