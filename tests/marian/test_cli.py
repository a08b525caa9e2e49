"""`keras-transformer import-marian`, and the run folder it writes."""

import json
import os
import shutil

import pytest

from keras_transformer.cli import main
from keras_transformer.recipe.run_directory import RunDirectory
from tests.marian.test_import import FIXTURES, check_strings

VARIANT = os.path.join(FIXTURES, "separate_swish")


def reference():
    with open(os.path.join(VARIANT, "reference.json"), encoding="utf-8") as file:
        return json.load(file)


def run_cli(capsys, *argv):
    """(status, stdout, stderr) of the command line."""
    try:
        main([*map(str, argv)])
        status = 0
    except SystemExit as exit:
        status = exit.code
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.slow
def test_imported_run_exports_and_translates_as_transformers(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert run_cli(capsys, "import-marian", VARIANT, "--output-dir", run_dir)[0] == 0
    run = RunDirectory(run_dir)
    assert run.read_config().evaluation.beam_size == 4  # generation_config's
    export = tmp_path / "export" / "opus"
    status, out, err = run_cli(
        capsys, "export", run_dir, "--format", "saved_model", "--output", export
    )
    assert status == 0, err
    sources = reference()["sources"]
    status, out, err = run_cli(
        capsys, "translate", export / "1", *sources, "--beam-size", "1"
    )
    assert status == 0, err
    check_strings(out.split("\n")[: len(sources)], reference(), "greedy")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"activation_function": "tanh"}, "activation_function 'tanh'"),
        ({"model_type": "bart"}, "model_type 'bart'"),
        ({"normalize_before": True}, "normalize_before True"),
        ({"some_new_field": 1}, "field 'some_new_field'"),
    ],
)
def test_unsupported_config_is_one_line_and_writes_nothing(
    change, message, tmp_path, capsys
):
    folder = tmp_path / "hf"
    shutil.copytree(VARIANT, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    status, _, err = run_cli(
        capsys, "import-marian", folder, "--output-dir", tmp_path / "run"
    )
    assert status == 1
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_a_folder_that_is_not_marian_is_one_line(tmp_path, capsys):
    status, _, err = run_cli(
        capsys, "import-marian", tmp_path, "--output-dir", tmp_path / "run"
    )
    assert status == 1 and "config.json does not exist" in err
    assert not (tmp_path / "run").exists()
