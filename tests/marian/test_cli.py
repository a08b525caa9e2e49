"""`keras-transformer import-marian`, and the run folder it writes."""

import json
import os
import shutil

import pytest

from keras_transformer.cli import main
from keras_transformer.data import DING_PATH
from keras_transformer.marian.run import MAX_POSITIONS, import_marian
from keras_transformer.recipe.run_directory import RunDirectory
from tests.fixtures.make_marian_fixtures import ding_lines
from tests.marian.test_import import FIXTURES, check_strings, reference_of

pytestmark = pytest.mark.tensorflow  # the Marian import builds TensorFlow runs

VARIANT = os.path.join(FIXTURES, "separate_swish")


def reference():
    return reference_of("separate_swish")


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
    import tensorflow as tf

    run_dir = tmp_path / "run"
    assert run_cli(capsys, "import-marian", VARIANT, "--output-dir", run_dir)[0] == 0
    config = RunDirectory(run_dir).read_config()
    evaluation = config.evaluation
    # generation_config's beams and length penalty, searched as transformers
    assert (evaluation.beam_size, evaluation.alpha) == (4, 1.0)
    assert evaluation.scoring == "transformers"
    assert config.model.max_length == 64  # config.json's max_position_embeddings
    export = tmp_path / "export" / "opus"
    status, out, err = run_cli(
        capsys, "export", run_dir, "--format", "saved_model", "--output", export
    )
    assert status == 0, err
    exported = tf.saved_model.load(str(export / "1"))
    assert int(exported.max_source_pieces.numpy()) == 64 - 1
    sources = reference()["sources"]
    status, out, err = run_cli(
        capsys, "translate", export / "1", *sources, "--beam-size", "1"
    )
    assert status == 0, err
    check_strings(out.split("\n")[: len(sources)], reference(), "greedy")
    status, out, err = run_cli(capsys, "translate", export / "1", *sources)
    assert status == 0, err  # the export's own beam search, as the run's
    check_strings(out.split("\n")[: len(sources)], reference(), "beam4")


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


@pytest.mark.parametrize("positions, max_length", [(40, 40), (None, MAX_POSITIONS)])
def test_max_position_embeddings_is_the_run_s_max_length(
    positions, max_length, tmp_path
):
    folder = tmp_path / "hf"
    shutil.copytree(VARIANT, folder)
    config = json.loads((folder / "config.json").read_text())
    del config["max_position_embeddings"]
    if positions is not None:
        config["max_position_embeddings"] = positions
    (folder / "config.json").write_text(json.dumps(config))
    run = import_marian(folder, tmp_path / "run")
    assert run.read_config().model.max_length == max_length
    assert "max_length" not in json.loads(open(run.model_config).read())


def test_a_folder_that_is_not_marian_is_one_line(tmp_path, capsys):
    status, _, err = run_cli(
        capsys, "import-marian", tmp_path, "--output-dir", tmp_path / "run"
    )
    assert status == 1 and "config.json does not exist" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_fine_tuning_an_imported_model_lowers_its_loss_and_exports(tmp_path, capsys):
    assert (
        run_cli(capsys, "import-marian", VARIANT, "--output-dir", tmp_path / "run")[0]
        == 0
    )
    pairs = zip(*ding_lines(DING_PATH, 300), strict=True)
    (tmp_path / "train.tsv").write_text("".join(f"{de}\t{en}\n" for de, en in pairs))
    status, _, err = run_cli(
        capsys,
        "train",
        "--init-from",
        tmp_path / "run",
        "--train-files",
        tmp_path / "train.tsv",
        "--output-dir",
        tmp_path / "tuned",
        "--export-dir",
        tmp_path / "models",
        "--epochs",
        2,
        "--steps-per-epoch",
        4,
        "--tokens-per-batch",
        256,
        "--set",
        "evaluation.bleu_sample=4",
        "--set",
        "evaluation.test_sample=4",
        "--set",
        "evaluation.average_last=1",
    )
    assert status == 0, err
    tuned = RunDirectory(tmp_path / "tuned")
    assert (
        tuned.read_model_config() == RunDirectory(tmp_path / "run").read_model_config()
    )
    history = tuned.read_results()["history"]
    assert history["2"]["loss"] < history["1"]["loss"]
    status, out, err = run_cli(
        capsys, "translate", tmp_path / "models" / "translator" / "1", "Guten Morgen!"
    )
    assert status == 0, err
