"""Fine-tuning (`--init-from`), the best epoch's weights and early stopping."""

import dataclasses
import json

import numpy as np
import pytest

from keras_transformer.cli import main
from keras_transformer.models.config import TransformerConfig
from keras_transformer.recipe.best_weights import BestWeights, read_record
from keras_transformer.recipe.config import RunConfig
from keras_transformer.recipe.fine_tuning import model_section, source_of
from keras_transformer.recipe.model_section import ModelSection
from keras_transformer.recipe.run import run
from keras_transformer.recipe.run_directory import RunDirectory
from tests.recipe.tiny_runs import tiny_config


def trained_weights(run_dir):
    import keras

    import keras_transformer  # noqa: F401  (registers the model's classes)

    model = keras.saving.load_model(RunDirectory(run_dir).model, compile=False)
    return [weight.numpy() for weight in model.weights]


@pytest.mark.slow
def test_a_fine_tuning_run_starts_from_its_source_with_its_vocabulary(
    tmp_path, finished_run
):
    source_run, source, _, _ = finished_run  # read, not changed
    source_dir = RunDirectory(source_run.output.output_dir)
    logged = []
    tuned = run(
        tiny_config(
            tmp_path,
            data={"vocab_size": None},
            model={"dropout": 0.3},  # only dropouts may change
            training={"init_from": source_dir.path, "learning_rate_scale": 1e-9},
            evaluation={"average_last": 1},
            output={"output_dir": str(tmp_path / "tuned"), "export_dir": ""},
        ),
        log=logged.append,
    )
    tuned_dir = RunDirectory(tmp_path / "tuned")
    with open(source_dir.tokenizer, "rb") as a, open(tuned_dir.tokenizer, "rb") as b:
        assert a.read() == b.read()
    source_config = source_dir.read_model_config()
    assert tuned_dir.read_model_config() == source_config.replace(dropout=0.3)
    assert tuned_dir.read_config().model.max_length == source_run.model.max_length
    summary = next(line for line in logged if line.startswith("Data:"))
    assert f"Fine-tuning: from {source_dir.path}" in summary
    assert f"Starting from the weights of {source_dir.model}." in logged
    # With a learning rate of ~0 the tuned weights are the source's.
    for before, after in zip(
        trained_weights(source_dir.path), trained_weights(tuned_dir.path), strict=True
    ):
        np.testing.assert_allclose(before, after, atol=1e-5)
    assert tuned["steps"] == source["steps"]
    assert tuned["exported_weights"] == {"weights": "best", "epoch": 1}
    assert read_record(tuned_dir.best)["epoch"] == 1


def test_the_source_brings_the_architecture_and_only_dropouts_may_change():
    source = TransformerConfig.tiny(500, d_model=32, d_ff=64, num_heads=2)
    section = model_section(source, ModelSection(), max_length=24)
    assert section.transformer_config(500) == source
    assert section.max_length == 24  # the source run's, not the default 64
    tuned = model_section(source, ModelSection(overrides={"dropout": 0.4}), 24)
    assert tuned.transformer_config(500) == source.replace(dropout=0.4)
    assert tuned.max_length == 24
    with pytest.raises(ValueError, match=r"keeps the architecture.*d_model 32 -> 512"):
        model_section(source, ModelSection(preset="base"), 24)
    longer = dataclasses.replace(section, max_length=32)
    with pytest.raises(ValueError, match=r"settings change max_length 24 -> 32 \("):
        model_section(source, longer, 24)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--init-from", "missing"], "No model at missing"),
        (["--init-from", "run.keras"], "tokenizer.model does not exist: init_from"),
    ],
)
def test_a_bad_source_is_one_line_before_the_run_folder_is_used(
    tmp_path, monkeypatch, capsys, argv, message
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.keras").write_text("not a model")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", *argv, "--output-dir", "out", "--export-dir="])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not (tmp_path / "out" / "job.json").exists()


def test_source_of_reads_the_updates_of_the_source_schedule(tmp_path):
    run_dir = RunDirectory(tmp_path)
    for path in (run_dir.model, run_dir.tokenizer):
        open(path, "w").close()
    run_dir.write_model_config(TransformerConfig.tiny(100))
    run_dir.write_schedule({"total_steps": 2500, "warmup_steps": 400})
    source = source_of(str(tmp_path))
    assert (source.model, source.updates) == (run_dir.model, 2500)
    assert source.learning_rate_scale(100) == pytest.approx(0.2)
    assert source.max_length == ModelSection().max_length  # no job.json


def test_source_of_reads_max_length_from_the_source_job_json(tmp_path):
    run_dir = RunDirectory(tmp_path)
    for path in (run_dir.model, run_dir.tokenizer):
        open(path, "w").close()
    # A model_config.json written before max_length left the architecture.
    saved = {**TransformerConfig.tiny(100).to_dict(), "max_length": 64}
    with open(run_dir.model_config, "w") as file:
        json.dump(saved, file)
    run_dir.write_config(RunConfig.from_dict({"model": {"max_length": 24}}))
    source = source_of(str(tmp_path))
    assert source.config == TransformerConfig.tiny(100)
    assert source.max_length == 24


class Model:
    stop_training = False

    def save_weights(self, path):
        with open(path, "w") as file:
            file.write(str(self.epoch))


def test_best_weights_keep_the_lowest_validation_loss_and_stop_after_patience(
    tmp_path,
):
    weights, record = str(tmp_path / "best.weights.h5"), str(tmp_path / "best.json")
    model = Model()
    best = BestWeights(weights, record, patience=2)
    best.set_model(model)
    for epoch, loss in enumerate([3.0, 2.0, 2.5]):
        model.epoch = epoch
        best.on_epoch_end(epoch, {"val_loss": loss})
    assert read_record(record) == {"epoch": 2, "val_loss": 2.0}
    assert open(weights).read() == "1" and not model.stop_training
    resumed = BestWeights(weights, record, patience=2)  # a resumed run
    resumed.set_model(model)
    resumed.on_epoch_end(3, {"val_loss": 2.1})  # epoch 4: two without a gain
    assert model.stop_training and resumed.stopped_epoch == 4
    assert json.load(open(record))["epoch"] == 2
