"""The run config: sections, files, --set, flags, version 1, and bad settings."""

import dataclasses
import json
import os
import subprocess
import sys

import pytest
import sacrebleu

from keras_transformer import decoding_defaults
from keras_transformer.cli import main
from keras_transformer.decoding_defaults import decoding_settings
from keras_transformer.recipe import run as run_module
from keras_transformer.recipe.config import (
    SECTIONS,
    DataSection,
    EvaluationSection,
    RunConfig,
)
from keras_transformer.recipe.config_files import (
    dump_config,
    load_config,
    read_config_file,
    upgrade_flat_config,
)
from keras_transformer.training import PRECISIONS
from tests.fixtures.backends import run_python

FIXTURE_RUN = os.path.join(os.path.dirname(__file__), "..", "fixtures", "run_v1")


def parsed_config(monkeypatch, *argv):
    """The `RunConfig` that `keras-transformer train ARGV` would run."""
    configs = []

    def run(config):
        configs.append(config)
        return dict.fromkeys(("bleu", "chrf", "export_path"))

    monkeypatch.setattr(run_module, "run", run)
    main(["train", *argv])
    return configs[0]


def one_line_error(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1, error
    return error


def test_cli_train_has_a_flag_for_every_setting(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = capsys.readouterr().out
    for section in SECTIONS.values():
        for field in dataclasses.fields(section):
            flag = field.metadata.get("flag", "--" + field.name.replace("_", "-"))
            assert f"{flag} " in help_text
    assert "--config FILE" in help_text and "--print-config" in help_text


def test_cli_train_defaults_are_the_configs(monkeypatch):
    assert parsed_config(monkeypatch) == RunConfig()


def test_cli_train_reads_every_kind_of_flag(monkeypatch):
    config = parsed_config(
        monkeypatch,
        *("--train-files", "a.de", "a.en", "--valid-files", "v.tsv"),
        "--bidirectional",
        *("--model", '{"dropout": 0.3}', "--epochs", "3", "--test-sample", "7"),
        *("--sampling-alpha", "0.1", "--precision", "float32", "--export-dir="),
        *("--bleu-sample", "all", "--label-smoothing", "0.2"),
    )
    assert config == RunConfig.from_dict(
        {
            "data": {
                "train_files": ["a.de", "a.en"],
                "valid_files": ["v.tsv"],
                "bidirectional": True,
            },
            "model": {"dropout": 0.3},
            "training": {"epochs": 3, "sampling_alpha": 0.1, "label_smoothing": 0.2},
            "runtime": {"precision": "float32"},
            "evaluation": {"test_sample": 7, "bleu_sample": "all"},
            "output": {"export_dir": ""},
        }
    )
    assert config.data.corpus == "files"


def test_file_then_set_then_flags(tmp_path, monkeypatch):
    path = tmp_path / "run.yaml"
    path.write_text(
        "model:\n  preset: tiny\n  dropout: 0.3\n"
        "training:\n  epochs: 2\n  label_smoothing: 0.0\n"
        "evaluation:\n  beam_size: 5\n"
    )
    config = parsed_config(
        monkeypatch,
        *("--config", str(path), "--set", "training.epochs=4"),
        *("--set", "evaluation.beam_size=6", "--beam-size", "7"),
    )
    assert config.model.preset == "tiny" and config.model.overrides["dropout"] == 0.3
    assert config.training.epochs == 4 and config.training.label_smoothing == 0.0
    assert config.evaluation.beam_size == 7  # the flag wins
    json_path = tmp_path / "run.json"
    json_path.write_text(json.dumps(config.to_dict()))
    assert load_config(str(json_path)) == config


def test_print_config_writes_a_file_that_reads_back(tmp_path, monkeypatch, capsys):
    main(["train", "--preset", "tiny", "--set", "model.d_model=64", "--print-config"])
    text = capsys.readouterr().out
    assert text.startswith("version: 2\ndata:\n")
    (tmp_path / "printed.yaml").write_text(text)
    config = load_config(str(tmp_path / "printed.yaml"))
    assert config.model.overrides == {"d_model": 64}
    assert dump_config(config) == text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--set", "training.label_smothing=0.2"], "Unknown setting training.label_"),
        (["--set", "trainig.epochs=2"], "Unknown config section 'trainig'"),
        (["--set", "training.epochs"], "--set takes section.key=value"),
        (["--set", "model.d_modle=64"], "Unknown TransformerConfig field 'd_modle'"),
        (["--model", '{"d_modle": 64}'], "Unknown TransformerConfig field 'd_modle'"),
        (["--model", "[1]"], "--model takes a JSON object"),
        (["--model", '{"vocab_size": 9}'], "cannot set vocab_size"),
        (["--model", '{"warmup_steps": 9}'], "training.warmup_steps"),
        (["--model", '{"label_smoothing": 0.2}'], "training.label_smoothing"),
        (["--test-sample", "0"], "test_sample must be 'all' or an int >= 1"),
        (["--bleu-sample", "-1"], "bleu_sample must be 'all' or an int >= 0"),
        (["--strategy", "multi_worker", "--overwrite"], "the chief would delete"),
        (["--config", "missing.yaml"], "No config file at missing.yaml"),
    ],
)
def test_bad_settings_are_one_line(capsys, argv, message):
    assert message in one_line_error(capsys, ["train", *argv])


def test_an_unknown_key_in_a_file_is_named(tmp_path, capsys):
    path = tmp_path / "run.yaml"
    path.write_text("training:\n  epoch: 2\n")
    error = one_line_error(capsys, ["train", "--config", str(path)])
    assert "Unknown setting training.epoch;" in error and "epochs" in error


def test_bad_section_settings_are_value_errors():
    bad = [
        ({"model": {"preset": "huge"}}, "preset"),
        ({"data": {"corpus": "files"}}, "train_files"),
        ({"training": {"epochs": 0}}, "epochs"),
        ({"runtime": {"strategy": "tpu"}}, "strategy"),
        ({"runtime": {"precision": "bfloat16"}}, "precision must be one of"),
        ({"output": {"export_precision": "bfloat16"}}, "precision must be one of"),
        ({"runtime": {"logical_cpus": 2}}, "logical_cpus=2 needs strategy 'mirrored'"),
        ({"data": {"extra_train_fraction": 0.2}}, "needs an extra_train_split"),
        (
            {"data": {"extra_train_split": "phrases", "extra_train_fraction": 1.0}},
            "extra_train_fraction must be in",
        ),
        ({"training": {"sampling_alpha": 0.0}}, "sampling_alpha"),
        ({"training": {"weight_decay": -0.1}}, "weight_decay"),
        ({"training": {"cooldown_fraction": 1.5}}, "cooldown_fraction"),
        ({"training": {"label_smoothing": 1.0}}, "label_smoothing"),
        (
            {
                "training": {"gradient_accumulation": 2},
                "runtime": {"strategy": "mirrored"},
            },
            "one device only, not with strategy",
        ),
        ({"training": {"warmup_steps": 0}}, "warmup_steps must be an int >= 1"),
        (
            {"model": {"max_length": 4096}},
            "tokens_per_batch=2048 must be >= max_length",
        ),
        ({"model": {"max_length": 1}}, "max_length must be an int >= 2, got 1"),
        (
            {"model": {"overrides": {"max_length": 32}}},
            r"max_length as model.max_length \(--max-length\)",
        ),
        ({"evaluation": {"test_sample": None}}, "test_sample must be 'all'"),
        ({"runs": {}}, "Unknown config section 'runs'"),
    ]
    for values, message in bad:
        with pytest.raises(ValueError, match=message):
            RunConfig.from_dict(values)


def test_files_settle_the_corpus_and_bad_files_settings_are_value_errors():
    config = RunConfig.from_dict(
        {"data": {"train_files": ["data/train.fr", "data/train.en"]}}
    )
    assert config.data.corpus == "files"
    assert config.output.output_dir == os.path.join("runs", "data-train")
    assert (config.data.source_language, config.data.target_language) == (None, None)
    named = RunConfig.from_dict(
        {"data": {"train_files": ["a.tsv"], "source_language": "fr"}}
    )
    assert named.output.output_dir == os.path.join(
        "runs", f"{os.path.basename(os.getcwd())}-a-fr"
    )
    ding = RunConfig.from_dict({"data": {"target_language": "de"}})
    assert (ding.data.corpus, ding.data.source_language, ding.output.output_dir) == (
        "ding",
        "en",
        os.path.join("runs", "ding-en-de"),
    )
    with pytest.raises(ValueError, match="train_files read your own files, but corpus"):
        DataSection(corpus="ding", train_files=("a.tsv",))
    with pytest.raises(ValueError, match="needs train_files"):
        DataSection(valid_files=("valid.tsv",))
    with pytest.raises(ValueError, match="test_files takes SOURCE TARGET or one TSV"):
        DataSection(train_files=("a.tsv",), test_files=("a", "b", "c"))
    with pytest.raises(ValueError, match="extra_train_split is a split of a TFDS"):
        DataSection(train_files=("a.tsv",), extra_train_split="phrases")


def test_a_target_language_sacrebleu_cannot_score_is_refused_up_front():
    try:
        sacrebleu.metrics.BLEU(trg_lang="ja")
    except RuntimeError:
        pass
    else:
        pytest.skip("sacreBLEU's Japanese tokenizer is installed here")
    with pytest.raises(ValueError, match=r"cannot score 'ja' here.*sacrebleu\[ja\]"):
        DataSection(train_files=("a.tsv",), target_language="ja")


def test_the_recipe_is_the_same_in_every_precision():
    for precision in PRECISIONS:
        config = RunConfig.from_dict({"runtime": {"precision": precision}})
        assert config.model.transformer_config(100).dropout == 0.2
    model = RunConfig.from_dict({"model": {"preset": "big"}}).model
    assert model.transformer_config(100).dropout == 0.3
    model = RunConfig.from_dict({"model": {"dropout": 0.1}}).model
    assert model.transformer_config(100).dropout == 0.1
    # max_length is the run's (data and decoding), no part of the architecture.
    assert RunConfig().model.max_length == 64
    assert not hasattr(RunConfig().model.transformer_config(100), "max_length")


def test_a_version_1_job_json_reads_as_sections():
    config = load_config(os.path.join(FIXTURE_RUN, "job.json"))
    flat = json.loads(open(os.path.join(FIXTURE_RUN, "job.json")).read())
    assert "version" not in flat and config.to_dict()["version"] == 2
    assert config.model.overrides == flat["model"]
    assert config.model.max_length == flat["max_length"] == 24
    assert config.training.epochs == flat["epochs"]
    assert config.evaluation.test_sample == flat["test_sample"]
    upgraded = read_config_file(os.path.join(FIXTURE_RUN, "job.json"))
    assert upgraded["evaluation"]["beam_size"] == flat["beam_size"]
    old = {**flat, "test_sample": None, "model": {"label_smoothing": 0.2}}
    config = RunConfig.from_dict(upgrade_flat_config(old))
    assert config.evaluation.test_sample == "all"
    assert config.training.label_smoothing == 0.2 and config.model.overrides == {}


def test_decoding_settings_have_one_owner():
    recipe = EvaluationSection()
    assert (recipe.beam_size, recipe.alpha, recipe.scoring) == (4, 1.0, "gnmt")
    assert recipe.alpha == decoding_defaults.RECIPE_ALPHA != decoding_defaults.ALPHA
    run = {"beam_size": 2, "alpha": 0.6}
    assert decoding_settings(None, None, run) == (2, 0.6)
    assert decoding_settings(1, None, run) == (1, 0.6)
    assert decoding_settings(3, 0.0, run) == (3, 0.0)


def test_help_imports_no_tensorflow():
    code = (
        "import sys\nfrom keras_transformer.cli import main\n"
        "try:\n    main(['train', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


FIND_THE_RUN_FOLDER = """
import argparse
import sys

from keras_transformer.cli.train import add_train_parser

parser = argparse.ArgumentParser()
add_train_parser(parser.add_subparsers())
for argv in (
    ["train", "--output-dir", "out", "--sampling-alpha", "0.5",
     "--strategy", "mirrored"],
    ["train", "--train-files", "data/train.de", "data/train.en", "--preset", "tiny"],
    ["train", "--corpus", "wmt14_translate/de-en", "--extra-train-split", "train",
     "--extra-train-fraction", "0.5"],
    ["train", "--train-files", "data/train.tsv", "--target-language", "zh",
     "--print-config"],
):
    args = parser.parse_args(argv)
    print(args.written_folder(args))
args.run(args)
print(sorted(name for name in ("keras", "tensorflow") if name in sys.modules))
"""


def test_train_finds_its_run_folder_and_prints_its_config_without_tensorflow(
    tmp_path,
):
    """`main` locks the run folder `train` writes before TensorFlow starts, so
    that a second `train` on it is refused at once: resolving the config
    (Ding, TFDS or files, and their checks, under a strategy too) imports
    neither Keras nor TensorFlow, and neither does `--print-config`."""
    lines = run_python(tmp_path, FIND_THE_RUN_FOLDER, "tensorflow").splitlines()
    runs = [
        os.path.join("runs", name) for name in ("data-train", "wmt14_translate-de-en")
    ]
    assert lines[:4] == ["out", *runs, "None"]
    assert "  corpus: files" in lines and "  target_language: zh" in lines
    assert lines[-1] == "[]"


def test_the_example_config_is_the_default_recipe():
    example = os.path.join(
        os.path.dirname(__file__), "..", "..", "examples", "run.yaml"
    )
    config = load_config(example)
    assert config.model.transformer_config(100) == RunConfig().model.transformer_config(
        100
    )
    assert config.replace(model={"dropout": 0.2}) == RunConfig().replace(
        model={"dropout": 0.2}
    )
