"""The WMT14 recipes in examples/: files that hold the paper's settings."""

import os

import pytest
import yaml

from keras_transformer.cli import main
from keras_transformer.recipe.config_files import load_config, read_config_file

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")

# Vaswani et al. 2017, Table 3 and sections 5 and 6.1, English-German.
PAPER = {
    "base": {"dropout": 0.1, "updates": 100_000, "averaged": 5},
    "big": {"dropout": 0.3, "updates": 300_000, "averaged": 20},
}


def printed_config(capsys, path):
    """What `keras-transformer train --config PATH --print-config` prints, read."""
    main(["train", "--config", path, "--print-config"])
    return yaml.safe_load(capsys.readouterr().out)


@pytest.mark.parametrize("preset", sorted(PAPER))
def test_the_wmt14_files_print_the_papers_settings(preset, capsys):
    path = os.path.join(EXAMPLES, f"wmt14_{preset}.yaml")
    assert read_config_file(path)["model"]["preset"] == preset  # parses as is
    printed = printed_config(capsys, path)
    data, model = printed["data"], printed["model"]
    training, evaluation = printed["training"], printed["evaluation"]
    paper = PAPER[preset]
    assert data["corpus"] == "wmt14_translate/de-en"
    assert (data["source_language"], data["target_language"]) == ("en", "de")
    assert data["vocab_size"] == 37_000
    assert model["preset"] == preset and model["dropout"] == paper["dropout"]
    assert training["tokens_per_batch"] == 25_000
    assert training["gradient_accumulation"] == 1
    assert training["warmup_steps"] == 4000
    assert training["label_smoothing"] == 0.1
    assert training["cooldown_fraction"] == 0 and training["weight_decay"] == 0
    assert training["learning_rate_scale"] == 1
    updates = training["epochs"] * training["steps_per_epoch"]
    assert updates == paper["updates"]
    assert evaluation["beam_size"] == 4 and evaluation["alpha"] == 0.6
    assert evaluation["scoring"] == "gnmt"
    assert evaluation["average_last"] == paper["averaged"]
    # The checkpoints averaged are evenly spaced: an epoch's end is a multiple
    # of checkpoint_every, so it adds no checkpoint between them.
    assert training["steps_per_epoch"] % training["checkpoint_every"] == 0
    config = load_config(path)
    assert config.to_dict() == printed  # the file is the whole run
    # The model the run builds keeps the paper's dropout (not raised to 0.2).
    assert config.model.transformer_config(37_000).dropout == paper["dropout"]


def test_the_base_and_big_runs_write_apart():
    configs = [
        load_config(os.path.join(EXAMPLES, f"wmt14_{preset}.yaml"))
        for preset in sorted(PAPER)
    ]
    folders = {config.output.output_dir for config in configs}
    exports = {config.output.export_name for config in configs}
    assert len(folders) == len(exports) == len(configs)
