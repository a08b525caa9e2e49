"""Artifacts saved by earlier versions keep loading, to the same numbers.

`tests/fixtures/saved_d0de694/` holds, for a post-norm and a pre-norm
(gradient accumulation) tiny Transformer, a `.keras` file and a run folder's
`TrainingCheckpoints` checkpoint written by commit d0de694, when the blocks
kept their sub-layers in dicts (see `tests/fixtures/saved_artifacts.py`).
Both must restore the weights and the optimizer's state: the logits equal
the saved ones, and so do the logits after one more training batch.
"""

import json
import shutil
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer import TransformerConfig, build_transformer
from keras_transformer.training import (  # registers the saved optimizer and loss
    FusedAdam,  # noqa: F401
    LabelSmoothedCrossEntropy,  # noqa: F401
    MaskedAccuracy,  # noqa: F401
    TransformerSchedule,  # noqa: F401
)
from keras_transformer.training.checkpoints import (
    TrainingCheckpoints,
    average_checkpoints,
    batches_trained,
)
from tests.fixtures.saved_artifacts import VARIANTS, compile_model, logits, train

FIXTURES = Path(__file__).parents[1] / "fixtures" / "saved_d0de694"
# The training recipe (TF loss, FusedAdam, checkpoints) is TensorFlow.
pytestmark = pytest.mark.tensorflow


def saved(variant):
    folder = FIXTURES / variant
    arrays = dict(np.load(folder / "arrays.npz"))
    config = json.loads((folder / "config.json").read_text())
    return folder, arrays, TransformerConfig.from_dict(config["model"])


def assert_same_logits_before_and_after_a_step(model, arrays):
    batch = arrays["source"], arrays["target"], arrays["labels"]
    np.testing.assert_allclose(logits(model, *batch[:2]), arrays["logits"], atol=1e-6)
    train(model, batch)
    np.testing.assert_allclose(
        logits(model, *batch[:2]), arrays["logits_after_step"], atol=1e-5
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_keras_file_loads_with_its_optimizer_state(variant):
    folder, arrays, _ = saved(variant)
    model = keras.saving.load_model(folder / "model.keras")
    assert batches_trained(model.optimizer) == arrays["step"]
    assert_same_logits_before_and_after_a_step(model, arrays)


@pytest.mark.parametrize("variant", VARIANTS)
def test_run_folder_checkpoint_resumes(variant, tmp_path):
    folder, arrays, config = saved(variant)
    shutil.copytree(folder / "checkpoints", tmp_path / "checkpoints")
    model = compile_model(build_transformer(config), variant)
    assert (
        TrainingCheckpoints(model, tmp_path / "checkpoints").restore() == arrays["step"]
    )
    assert_same_logits_before_and_after_a_step(model, arrays)


@pytest.mark.parametrize("variant", VARIANTS)
def test_checkpoint_averages_into_a_model(variant):
    folder, arrays, config = saved(variant)
    model = build_transformer(config)
    average_checkpoints(model, [tf.train.latest_checkpoint(folder / "checkpoints")])
    np.testing.assert_allclose(
        logits(model, arrays["source"], arrays["target"]), arrays["logits"], atol=1e-6
    )
