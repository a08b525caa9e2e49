"""The command line: its commands, Ctrl-C, and a quiet TensorFlow start."""

import pytest

from keras_transformer import cli
from keras_transformer.cli import main
from keras_transformer.recipe import run as run_module


def test_cli_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "train" in capsys.readouterr().out


def test_ctrl_c_before_training_is_one_line_and_status_130(monkeypatch, capsys):
    def interrupted(config):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "run", interrupted)
    with pytest.raises(SystemExit) as exit_info:
        main(["train"])
    assert exit_info.value.code == 130
    assert capsys.readouterr().err == "keras-transformer: interrupted\n"


def test_a_user_set_log_level_keeps_tensorflows_lines(monkeypatch):
    silenced = []
    monkeypatch.setattr(cli, "_standard_error_to_null", lambda: silenced.append(1))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    cli.start_tensorflow(quiet=True)
    assert silenced == []
