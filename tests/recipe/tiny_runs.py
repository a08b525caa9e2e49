"""Tiny runs of the main job on the Ding corpus, for the recipe's tests."""

import shutil

from keras_transformer.recipe.config import RunConfig


def tiny_config(tmp_path, **sections):
    """A run of 6 updates of a 32-wide tiny model into `tmp_path`/run, its
    exports into `tmp_path`/saved_models; `sections` override fields, e.g.
    `training={"epochs": 2}`."""
    values = {
        "data": {"vocab_size": 500},
        "model": {
            "preset": "tiny",
            "max_length": 24,
            "d_model": 32,
            "d_ff": 64,
            "num_heads": 2,
        },
        "training": {
            "tokens_per_batch": 768,
            "epochs": 1,
            "steps_per_epoch": 6,
            "checkpoint_every": 4,
        },
        "evaluation": {
            "average_last": 2,
            "beam_size": 2,
            "bleu_sample": 8,
            "test_sample": 16,
            "samples": 1,
        },
        "output": {
            "output_dir": str(tmp_path / "run"),
            "export_dir": str(tmp_path / "saved_models"),
        },
    }
    for name, fields in sections.items():
        values[name] = {**values.get(name, {}), **fields}
    return RunConfig.from_dict(values)


def copy_finished_run(finished_run, tmp_path):
    """Copies the `finished_run` fixture's run folder and exports into
    `tmp_path`, where `tiny_config(tmp_path)` names them. The output section
    is no training setting: the copy resumes as the original would."""
    output = finished_run[0].output
    shutil.copytree(output.output_dir, tmp_path / "run")
    shutil.copytree(output.export_dir, tmp_path / "saved_models")
