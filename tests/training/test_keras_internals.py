"""Each part of `keras_internals` against stock Keras.

`FusedAdam` must follow `keras.optimizers.Adam`; `batches_applied` must read
a counter of batches that the schedule sees and checkpoints keep. For
`fix_distributed_fit`
(keras-team/keras#20585), each test named `test_stock_keras_*` runs stock
Keras and expects the bug that a workaround exists for: when one fails,
Keras has fixed that bug and its part of `keras_internals` can go.
Strategies over several devices or processes must be set up before
TensorFlow starts, so those runs happen in fresh interpreters, each case
printing its outcome as JSON.
"""

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.training import FusedAdam
from keras_transformer.training.keras_internals import batches_applied
from keras_transformer.training.schedules import TransformerSchedule
from tests import test_multi_worker
from tests.test_distribution import REPO_ROOT

# Each case fits a small model on the given strategy and records "ok" or
# the error. `build_only` keeps Keras's own train_step after the fix, to
# show the second bug alone.
CASES = textwrap.dedent(
    """
    import json
    import sys

    import keras
    import numpy as np
    import tensorflow as tf

    from keras_transformer.training import fix_distributed_fit


    def fit(strategy, dataset, fix):
        with strategy.scope():
            inputs = {"a": keras.Input((4,), name="a")}
            model = keras.Model(inputs, keras.layers.Dense(1)(inputs["a"]))
            model.compile("sgd", "mse")
            if fix:
                fix_distributed_fit(model)
            if fix == "build_only":
                model.train_step = keras.Model.train_step.__get__(model)
        try:
            history = model.fit(dataset, steps_per_epoch=2, verbose=0)
        except Exception as error:
            return f"{type(error).__name__}: {error}"
        return "ok" if np.isfinite(history.history["loss"][-1]) else "not finite"


    def dataset(batch_size):
        x = np.ones((8, 4), "float32")
        pairs = ({"a": x}, np.ones((8, 1), "float32"))
        return tf.data.Dataset.from_tensor_slices(pairs).batch(batch_size).repeat()
    """
)

# Two logical CPUs, a first global batch of 3: 2 and 1 rows per replica.
MIRRORED_SCRIPT = (
    textwrap.dedent(
        """
    import sys

    import tensorflow as tf

    (cpu,) = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    sys.path.insert(0, sys.argv[1])
    """
    )
    + CASES
    + textwrap.dedent(
        """
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    print(json.dumps({
        "stock": fit(strategy, dataset(3), fix=False),
        "fixed": fit(strategy, dataset(3), fix=True),
    }))
    """
    )
)

# Run by each of `test_multi_worker.WORKERS` processes (TF_CONFIG set).
MULTI_WORKER_SCRIPT = (
    textwrap.dedent(
        """
    import sys

    sys.path.insert(0, sys.argv[2])
    """
    )
    + CASES
    + textwrap.dedent(
        """
    from keras_transformer.training.distribution import make_strategy

    workdir, index = sys.argv[1], sys.argv[3]
    strategy = make_strategy("multi_worker")
    results = {
        "stock": fit(strategy, dataset(4), fix=False),
        "build_only": fit(strategy, dataset(4), fix="build_only"),
        "fixed": fit(strategy, dataset(4), fix=True),
    }
    with open(f"{workdir}/results{index}.json", "w") as f:
        json.dump(results, f)
    """
    )
)


@pytest.fixture(scope="module")
def mirrored_results():
    result = subprocess.run(
        [sys.executable, "-c", MIRRORED_SCRIPT, str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def multi_worker_results(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("workers")
    runs = test_multi_worker.run_workers(workdir, MULTI_WORKER_SCRIPT)
    for index, (returncode, log) in runs.items():
        assert returncode == 0, f"worker {index} failed:\n{log[-5000:]}"
    return [
        json.loads((workdir / f"results{index}.json").read_text()) for index in runs
    ]


@pytest.mark.slow
def test_stock_keras_fails_on_a_first_batch_split_unevenly(mirrored_results):
    assert "must have the same size and shape" in mirrored_results["stock"]


@pytest.mark.slow
def test_fixed_model_fits_a_first_batch_split_unevenly(mirrored_results):
    assert mirrored_results["fixed"] == "ok"


@pytest.mark.slow
def test_stock_keras_cannot_reduce_the_first_batch_over_workers(
    multi_worker_results,
):
    for results in multi_worker_results:
        assert "Attempt to convert a value" in results["stock"]
        assert "PerReplica" in results["stock"]


@pytest.mark.slow
def test_stock_keras_cannot_average_scalar_logs_over_workers(multi_worker_results):
    for results in multi_worker_results:
        assert "Invalid reduction dimension 0" in results["build_only"]


@pytest.mark.slow
def test_fixed_model_fits_on_several_workers(multi_worker_results):
    for results in multi_worker_results:
        assert results["fixed"] == "ok"


SETTINGS = dict(beta_1=0.9, beta_2=0.98, epsilon=1e-9)


def trajectories(accumulation=None, steps=12):
    """Weights after each step under Keras's Adam and FusedAdam, same gradients."""
    rng = np.random.default_rng(0)
    start = rng.normal(size=(6, 4)).astype("float32")
    weights, optimizers = [], []
    for kind in (keras.optimizers.Adam, FusedAdam):
        weights.append(keras.Variable(start))
        optimizers.append(
            kind(
                learning_rate=TransformerSchedule(d_model=16, warmup_steps=4),
                gradient_accumulation_steps=accumulation,
                **SETTINGS,
            )
        )
    history = []
    for _ in range(steps):
        gradient = rng.normal(size=start.shape).astype("float32")
        for weight, optimizer in zip(weights, optimizers, strict=True):
            optimizer.apply([gradient], [weight])
        history.append([np.array(weight) for weight in weights])
    return start, history


@pytest.mark.parametrize("accumulation", [None, 3])
def test_follows_keras_adam(accumulation):
    start, history = trajectories(accumulation)
    for keras_weights, fused_weights in history:
        np.testing.assert_allclose(fused_weights, keras_weights, atol=1e-6)
    assert not np.allclose(history[-1][1], start)  # it moved


def test_serializes():
    optimizer = FusedAdam(learning_rate=0.01, **SETTINGS)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(restored, FusedAdam)
    assert restored.get_config() == optimizer.get_config()


class StepAsRate(keras.optimizers.schedules.LearningRateSchedule):
    """A learning rate of 1e-6 x the step the optimizer calls it with."""

    def __call__(self, step):
        return keras.ops.cast(step, "float32") * 1e-6


def applied(optimizer, batches):
    weight = keras.Variable(np.ones(3, "float32"))
    for _ in range(batches):
        optimizer.apply([np.ones(3, "float32")], [weight])
    return optimizer


@pytest.mark.parametrize("accumulation", [None, 3])
def test_batches_applied_counts_batches_the_schedule_sees(accumulation):
    optimizer = applied(
        keras.optimizers.SGD(StepAsRate(), gradient_accumulation_steps=accumulation),
        batches=7,
    )
    assert batches_applied(optimizer) == 7
    assert int(optimizer.iterations) == 7 // (accumulation or 1)
    np.testing.assert_allclose(float(optimizer.learning_rate) * 1e6, 7, rtol=1e-5)


def test_batches_applied_is_checkpointed(tmp_path):
    def optimizer():
        return keras.optimizers.SGD(gradient_accumulation_steps=3)

    path = tf.train.Checkpoint(optimizer=applied(optimizer(), 7)).save(tmp_path / "c")
    restored = optimizer()
    restored.build([keras.Variable(np.ones(3, "float32"))])
    tf.train.Checkpoint(optimizer=restored).restore(path).assert_consumed()
    assert batches_applied(restored) == 7
