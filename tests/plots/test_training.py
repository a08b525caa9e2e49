"""Pictures of a run: files, sizes and the data they show."""

import sys

import numpy as np
import pytest

from keras_transformer.cli import main
from keras_transformer.layers.sinusoidal_position_encoding import sinusoidal_encoding
from keras_transformer.models import TransformerConfig
from keras_transformer.plots import (
    curves_figure,
    plot_run,
    positional_encoding_figure,
    read_history,
    save_figure,
    schedule_figure,
)
from keras_transformer.recipe.run_directory import RunDirectory
from keras_transformer.training import TransformerSchedule

HISTORY_CSV = """epoch,loss,val_bleu,val_loss
0,5.5,1.5,5.0
1,4.9,NA,4.6
1,4.8,3.25,4.5
2,4.1,6.0,4.2
"""


def png_size(path):
    """(width, height) from a PNG file's header."""
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def write_run(folder):
    """A run folder with the files `plot` reads: its model config, schedule
    and history."""
    folder.mkdir()
    run = RunDirectory(folder)
    run.write_model_config(TransformerConfig.tiny(100, d_model=32))
    schedule = TransformerSchedule(32, 40, 2.0, cooldown_steps=60, total_steps=180)
    run.write_schedule(schedule.get_config())
    with open(run.history, "w") as file:
        file.write(HISTORY_CSV)
    return folder


def test_read_history_keeps_the_last_row_of_an_epoch(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text(HISTORY_CSV)
    assert read_history(path) == {
        1: {"loss": 5.5, "val_bleu": 1.5, "val_loss": 5.0},
        2: {"loss": 4.8, "val_bleu": 3.25, "val_loss": 4.5},
        3: {"loss": 4.1, "val_bleu": 6.0, "val_loss": 4.2},
    }


def test_curves_show_each_logged_metric_per_epoch(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text(HISTORY_CSV)
    losses, scores = curves_figure(read_history(path)).axes
    assert [line.get_label() for line in losses.get_lines()] == [
        "training loss",
        "validation loss",
    ]
    np.testing.assert_array_equal(losses.get_lines()[0].get_xdata(), [1, 2, 3])
    np.testing.assert_array_equal(losses.get_lines()[1].get_ydata(), [5.0, 4.5, 4.2])
    (bleu,) = scores.get_lines()  # no chrF logged
    np.testing.assert_array_equal(bleu.get_ydata(), [1.5, 3.25, 6.0])


def test_schedule_figure_plots_the_rate_of_every_update():
    schedule = TransformerSchedule(32, 40, 2.0, cooldown_steps=60, total_steps=180)
    (line,) = schedule_figure(schedule).axes[0].get_lines()[:1]
    rates = line.get_ydata()
    assert len(rates) == 180
    assert np.argmax(rates) == 40  # the end of the warm-up
    np.testing.assert_allclose(rates[100], float(schedule(100)))
    assert rates[-1] < rates[120] / 50  # cooled down


def test_positional_encoding_figure_shows_the_model_encoding():
    figure = positional_encoding_figure(64, length=50)
    matrix = figure.axes[1].images[0].get_array()
    np.testing.assert_allclose(matrix, sinusoidal_encoding(50, 64), atol=1e-6)


def test_plot_run_writes_each_kind_at_its_size(tmp_path):
    run = write_run(tmp_path / "run")
    paths = plot_run(str(run))
    assert [path.rsplit("/", 1)[1] for path in paths] == [
        "positional_encoding.png",
        "learning_rate.png",
        "training_curves.png",
    ]
    sizes = [
        png_size(run / "plots" / name)
        for name in sorted(run.joinpath("plots").iterdir())
    ]
    assert sizes == [(700, 400), (1100, 400), (1100, 400)]


def test_cli_plot_draws_one_kind_as_svg(tmp_path, capsys):
    run = write_run(tmp_path / "run")
    main(
        [
            "plot",
            str(run),
            "--what",
            "schedule",
            "-o",
            str(tmp_path / "out"),
            "--format",
            "svg",
        ]
    )
    assert capsys.readouterr().out == f"Wrote {tmp_path}/out/learning_rate.svg\n"
    assert (tmp_path / "out" / "learning_rate.svg").read_text().startswith("<?xml")


def test_cli_plot_errors_are_one_line(tmp_path, capsys, monkeypatch):
    run = write_run(tmp_path / "run")
    (run / "history.csv").unlink()
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", str(run), "--what", "curves"])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "history.csv does not exist" in error
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # not installed
    with pytest.raises(SystemExit):
        main(["plot", str(run), "--what", "pe"])
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and 'pip install -e ".[plots]"' in error


def test_save_figure_takes_png_or_svg_only(tmp_path):
    figure = positional_encoding_figure(8, length=4)
    with pytest.raises(ValueError, match=".png or .svg"):
        save_figure(figure, str(tmp_path / "figure.jpg"))
    path = save_figure(figure, str(tmp_path / "new" / "figure.PNG"))
    assert png_size(tmp_path / "new" / "figure.PNG") == (1100, 400) and path
