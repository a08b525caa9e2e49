"""Artifacts saved in the layers' old layout keep loading, to the same numbers.

`tests/fixtures/saved_d0de694/` (a post-norm and a pre-norm, gradient
accumulation, tiny Transformer) and `tests/fixtures/saved_393643e/` (an
output bias with Marian's sinusoid, as imported Marian models have; separate
embeddings and an output projection) hold a `.keras` file and a run
folder's `TrainingCheckpoints` checkpoint written by those commits, in the
layout `keras_transformer.training.saved_layout` converts (see
`tests/fixtures/saved_artifacts.py`). Each must restore the weights and the
optimizer's state: the logits equal the saved ones, and so do the logits
after one more training batch.
"""

import json
import shutil
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer import TransformerConfig, build_transformer
from keras_transformer.training.checkpoints import (
    TrainingCheckpoints,
    average_checkpoints,
    batches_trained,
)
from keras_transformer.training.saved_layout import load_model, load_weights
from tests.fixtures.saved_artifacts import compile_model, logits, train

FIXTURES = Path(__file__).parents[1] / "fixtures"
SAVED = [
    "saved_d0de694/post_norm",
    "saved_d0de694/pre_norm",
    "saved_393643e/output_bias",
    "saved_393643e/separate_embeddings",
]
# The training recipe (TF loss, FusedAdam, checkpoints) is TensorFlow.
pytestmark = pytest.mark.tensorflow


def saved(name):
    """(folder, arrays, TransformerConfig, variant) of a saved artifact."""
    folder = FIXTURES / name
    arrays = dict(np.load(folder / "arrays.npz"))
    config = json.loads((folder / "config.json").read_text())
    return folder, arrays, TransformerConfig.from_dict(config["model"]), folder.name


def assert_same_logits_before_and_after_a_step(model, arrays):
    batch = arrays["source"], arrays["target"], arrays["labels"]
    np.testing.assert_allclose(logits(model, *batch[:2]), arrays["logits"], atol=1e-6)
    train(model, batch)
    np.testing.assert_allclose(
        logits(model, *batch[:2]), arrays["logits_after_step"], atol=1e-5
    )


@pytest.mark.parametrize("name", SAVED)
def test_keras_file_loads_with_its_optimizer_state(name):
    folder, arrays, _, _ = saved(name)
    model = load_model(folder / "model.keras")
    assert batches_trained(model.optimizer) == arrays["step"]
    assert_same_logits_before_and_after_a_step(model, arrays)


@pytest.mark.parametrize("name", SAVED[2:])
def test_weights_load_into_a_compiled_model(name, tmp_path):
    folder, arrays, config, variant = saved(name)
    with zipfile.ZipFile(folder / "model.keras") as archive:
        archive.extract("model.weights.h5", tmp_path)
    weights_file = tmp_path / "model.weights.h5"
    weights_file.rename(tmp_path / "best.weights.h5")
    for path in (folder / "model.keras", tmp_path / "best.weights.h5"):
        model = compile_model(build_transformer(config), variant)
        model.optimizer.build(model.trainable_variables)
        load_weights(model, path)
        assert batches_trained(model.optimizer) == arrays["step"]
        assert_same_logits_before_and_after_a_step(model, arrays)


@pytest.mark.parametrize("name", SAVED)
def test_run_folder_checkpoint_resumes(name, tmp_path):
    folder, arrays, config, variant = saved(name)
    shutil.copytree(folder / "checkpoints", tmp_path / "checkpoints")
    model = compile_model(build_transformer(config), variant)
    assert (
        TrainingCheckpoints(model, tmp_path / "checkpoints").restore() == arrays["step"]
    )
    assert_same_logits_before_and_after_a_step(model, arrays)


@pytest.mark.parametrize("name", SAVED)
def test_checkpoint_averages_into_a_model(name):
    folder, arrays, config, _ = saved(name)
    model = build_transformer(config)
    average_checkpoints(model, [tf.train.latest_checkpoint(folder / "checkpoints")])
    np.testing.assert_allclose(
        logits(model, arrays["source"], arrays["target"]), arrays["logits"], atol=1e-6
    )


def test_keras_refuses_an_old_file_that_load_model_converts():
    with pytest.raises(ValueError, match="could not be loaded"):
        keras.saving.load_model(FIXTURES / SAVED[0] / "model.keras")


def test_weights_load_into_a_model_whose_optimizer_starts_afresh():
    folder, arrays, config, variant = saved(SAVED[2])
    model = compile_model(build_transformer(config), variant)
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer"):
        load_weights(model, folder / "model.keras")
    np.testing.assert_allclose(
        logits(model, arrays["source"], arrays["target"]), arrays["logits"], atol=1e-6
    )
