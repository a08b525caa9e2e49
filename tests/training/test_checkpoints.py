"""Checkpoints: averaging, fallback past corrupted files, no save after NaN."""

import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.cli import main
from keras_transformer.recipe.config import RunConfig
from keras_transformer.recipe.evaluation import averaged_model
from keras_transformer.recipe.run_directory import RunDirectory
from keras_transformer.training.checkpoints import (
    CheckpointCallback,
    CheckpointCorruptedError,
    TrainingCheckpoints,
    average_checkpoints,
)

CONFIG = kt.TransformerConfig.tiny(
    30, d_model=16, d_ff=32, num_heads=2, num_encoder_layers=1, num_decoder_layers=1
)


def compiled_model():
    model = kt.build_transformer(CONFIG)
    model.compile(
        optimizer=kt.transformer_optimizer(CONFIG.d_model, warmup_steps=2),
        loss=kt.LabelSmoothedCrossEntropy(0.1),
    )
    return model


def batches(count=8, batch_size=4):
    rng = np.random.default_rng(0)
    sources = rng.integers(3, 30, size=(count * batch_size, 5)).astype("int32")
    inputs = {"encoder_inputs": sources, "decoder_inputs": sources[:, ::-1]}
    return tf.data.Dataset.from_tensor_slices((inputs, sources)).batch(batch_size)


def checkpoints_with_random_weights(directory, count):
    """Saves `count` checkpoints of random weights; returns them and the model."""
    model = compiled_model()
    model.optimizer.build(model.trainable_variables)  # slots, as after `fit`
    checkpoints = TrainingCheckpoints(model, str(directory), max_to_keep=count)
    rng = np.random.default_rng(1)
    saved = []
    for step in range(count):
        weights = [rng.normal(size=w.shape).astype("float32") for w in model.weights]
        model.set_weights(weights)
        model.optimizer.iterations.assign(step + 1)
        checkpoints.save()
        saved.append(weights)
    return model, checkpoints, saved


def test_a_checkpoint_of_the_model_holds_every_weight(tmp_path):
    # Uncompiled: no optimizer whose variable list would hold the weights.
    model = kt.build_transformer(CONFIG)
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    keys = tf.train.load_checkpoint(path).get_variable_to_shape_map()
    stored = [key for key in keys if key.startswith("model/")]
    assert len(stored) == len(model.weights)


@pytest.mark.parametrize("full_context", [False, True])
def test_a_guided_alignment_model_s_checkpoint_restores_into_the_plain_model(
    full_context, tmp_path
):
    """A guided run's checkpoints are read by `average`, `evaluate` and
    resumes into the plain model: the alignment output, and the second
    pass of full context, add no operation to the graph, through which a
    checkpoint reaches the layers (3 decoder layers: the aligning one has
    a layer after it)."""
    config = kt.TransformerConfig.small(
        100, d_model=32, d_ff=64, num_heads=2, full_context_alignment=full_context
    )
    guided = kt.build_transformer(config, alignment_output=True)
    path = tf.train.Checkpoint(model=guided).save(str(tmp_path / "ckpt"))
    plain = kt.build_transformer(config)
    status = tf.train.Checkpoint(model=plain).restore(path)
    status.assert_existing_objects_matched()
    for restored, saved in zip(plain.weights, guided.weights, strict=True):
        np.testing.assert_array_equal(restored, saved)


def test_average_checkpoints_sets_the_mean_of_the_weights(tmp_path):
    model, checkpoints, saved = checkpoints_with_random_weights(tmp_path, 3)
    average_checkpoints(model, checkpoints.manager.checkpoints[-2:])
    for i, weight in enumerate(model.get_weights()):
        np.testing.assert_allclose(weight, (saved[1][i] + saved[2][i]) / 2, atol=1e-6)
    with pytest.raises(ValueError, match="at least one"):
        average_checkpoints(model, [])


def run_with_checkpoints(folder, count):
    """A run folder with the model config and `count` checkpoints; the
    `RunDirectory` and the weights saved."""
    folder.mkdir()
    run = RunDirectory(folder)
    run.write_model_config(CONFIG)
    _, _, saved = checkpoints_with_random_weights(run.checkpoints, count)
    return run, saved


def test_average_command_writes_the_averaged_model(tmp_path, capsys):
    run, saved = run_with_checkpoints(tmp_path / "run", 3)
    main(["average", run.path, str(tmp_path / "averaged.keras"), "--last", "3"])
    assert "Averaged 3 checkpoints" in capsys.readouterr().out
    averaged = keras.saving.load_model(tmp_path / "averaged.keras")
    for i, weight in enumerate(averaged.get_weights()):
        np.testing.assert_allclose(weight, np.mean([s[i] for s in saved], 0), atol=1e-6)
    with pytest.raises(SystemExit) as exit_info:  # one line, status 1
        main(["average", str(tmp_path), str(tmp_path / "x.keras")])
    assert exit_info.value.code == 1
    assert "not the output_dir" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError, match="not the output_dir"):
        main(["--debug", "average", str(tmp_path), str(tmp_path / "x.keras")])


@pytest.mark.parametrize("layout", ["nested", "flat"])
def test_the_averaged_model_computes_in_the_runs_precision(tmp_path, layout):
    run, _ = run_with_checkpoints(tmp_path / "run", 2)
    if layout == "nested":
        run.write_config(
            RunConfig.from_dict({"runtime": {"precision": "mixed_bfloat16"}})
        )
    else:  # the job.json of a run of version 1
        with open(run.config, "w") as file:
            json.dump({"precision": "mixed_bfloat16"}, file)
    model, paths = averaged_model(run.path, last=2)
    assert model.dtype_policy.name == "mixed_bfloat16" and len(paths) == 2
    assert keras.mixed_precision.global_policy().name == "float32"


@pytest.mark.parametrize("damage", ["corrupt", "truncate"])
def test_restore_falls_back_past_a_damaged_newest_checkpoint(tmp_path, damage, caplog):
    model, checkpoints, saved = checkpoints_with_random_weights(tmp_path, 2)
    (data,) = tmp_path.glob("ckpt-2.data-*")
    content = data.read_bytes()
    if damage == "corrupt":
        data.write_bytes(bytes(b ^ 0xFF for b in content))
    else:
        data.write_bytes(content[: len(content) // 3])

    restored = compiled_model()
    with caplog.at_level(logging.WARNING):
        step = TrainingCheckpoints(restored, str(tmp_path)).restore()
    assert step == 1
    assert "ckpt-2 is unreadable" in caplog.text
    for weight, expected in zip(restored.get_weights(), saved[0], strict=True):
        np.testing.assert_array_equal(weight, expected)


def test_no_readable_checkpoint_is_a_clear_error(tmp_path):
    checkpoints_with_random_weights(tmp_path, 1)
    (data,) = tmp_path.glob("ckpt-1.data-*")
    data.write_bytes(b"")
    with pytest.raises(CheckpointCorruptedError, match="None of the checkpoints"):
        TrainingCheckpoints(compiled_model(), str(tmp_path)).restore()


class PoisonWeights(keras.callbacks.Callback):
    """Sets a weight to NaN after batch `at`, as a diverging run would."""

    def __init__(self, at):
        super().__init__()
        self.at = at

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.at:
            weight = self.model.trainable_weights[0]
            weight.assign(np.full(weight.shape, np.nan, "float32"))


def test_a_nan_loss_stops_training_and_saving(tmp_path):
    model = compiled_model()
    checkpoints = TrainingCheckpoints(model, str(tmp_path))
    saver = CheckpointCallback(checkpoints, every_steps=2)
    callbacks = [saver, keras.callbacks.TerminateOnNaN(), PoisonWeights(at=2)]
    model.fit(batches(), epochs=3, callbacks=callbacks, verbose=0)
    assert saver.loss_not_finite
    assert checkpoints.step == 4  # stopped at the first NaN batch
    assert [int(p.rsplit("-", 1)[1]) for p in checkpoints.manager.checkpoints] == [2]
