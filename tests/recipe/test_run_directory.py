"""The run folder: its names, and the errors of a folder that is no run."""

import os

import pytest

from keras_transformer.recipe.run_directory import PLOTS, RunDirectory, model_and_run


def test_the_run_directory_names_every_file(tmp_path):
    run = RunDirectory(tmp_path)
    names = {
        os.path.relpath(getattr(run, name), tmp_path)
        for name in (
            "config",
            "model_config",
            "tokenizer",
            "schedule",
            "checkpoints",
            "history",
            "logs",
            "model",
            "results",
            "plots",
        )
    }
    assert len(names) == 10  # all different
    assert run.plot("pe", "svg") == os.path.join(run.plots, f"{PLOTS['pe']}.svg")
    assert run.plot("curves", folder="x") == os.path.join("x", "training_curves.png")


def test_a_folder_that_is_no_run_says_so(tmp_path):
    run = RunDirectory(tmp_path)
    assert not run.exists()
    with pytest.raises(FileNotFoundError, match="is not the output_dir of a"):
        run.read_config()
    with pytest.raises(FileNotFoundError, match="the run has not finished"):
        model_and_run(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="No model at"):
        model_and_run(str(tmp_path / "missing.keras"))
