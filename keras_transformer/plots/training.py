"""Pictures of a run: position encodings, learning-rate schedule, curves."""

import csv

import numpy as np

from keras_transformer.layers.sinusoidal_position_encoding import sinusoidal_encoding
from keras_transformer.plots.figures import new_figure, save_figure
from keras_transformer.recipe.run_directory import PLOTS, RunDirectory
from keras_transformer.training.schedules import TransformerSchedule

KINDS = tuple(PLOTS)


def positional_encoding_figure(d_model, length=100):
    """The sinusoidal encoding of `d_model` channels over `length` positions.

    Left, the sines of four channels as waves over the positions, their
    wavelengths 2 pi 10000^(channel / d_model) growing with the channel
    (the odd channels are the cosines of the same wavelengths); right, the
    whole (length, d_model) matrix.
    """
    encoding = np.asarray(sinusoidal_encoding(length, d_model))  # (L, D)
    figure = new_figure(11, 4)
    waves, matrix = figure.subplots(1, 2, width_ratios=[1, 1.2])
    for share in (1 / 16, 1 / 8, 1 / 4, 3 / 8):  # wavelengths ~11, 20, 60, 200
        channel = round(d_model * share / 2) * 2
        wavelength = 2 * np.pi * 10000 ** (channel / d_model)
        waves.plot(
            encoding[:, channel],
            label=f"channel {channel}, wavelength {wavelength:.0f}",
        )
    waves.set(xlabel="position", ylabel="value", title="Position encoding waves")
    waves.legend(fontsize=8, ncols=2, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    image = matrix.imshow(
        encoding, aspect="auto", cmap="RdBu", vmin=-1, vmax=1, interpolation="none"
    )
    matrix.set(
        xlabel="channel",
        ylabel="position",
        title=f"Position encoding, d_model = {d_model}",
    )
    figure.colorbar(image, ax=matrix)
    return figure


def schedule_figure(schedule):
    """The learning rate of each update of a `TransformerSchedule`'s run.

    Marks the end of the warm-up and the start of the cool-down.
    """
    updates = schedule.total_steps or 4 * schedule.warmup_steps
    update = np.arange(updates)
    rate = np.asarray(schedule(update * schedule.steps_per_update))
    figure = new_figure(7, 4)
    ax = figure.subplots()
    ax.plot(update, rate)
    ax.axvline(schedule.warmup_steps, color="gray", linestyle=":")
    ax.annotate(
        f" warm-up: {schedule.warmup_steps:,}",
        (schedule.warmup_steps, rate.max()),
        fontsize=9,
    )
    if schedule.cooldown_steps:
        start = updates - schedule.cooldown_steps
        ax.axvline(start, color="gray", linestyle=":")
        ax.annotate(
            f" cool-down: {schedule.cooldown_steps:,}",
            (start, rate.max() / 2),
            fontsize=9,
        )
    ax.set(
        xlabel="update",
        ylabel="learning rate",
        title=f"Learning rate, {updates:,} updates (d_model {schedule.d_model}, "
        f"scale {schedule.scale:g})",
    )
    return figure


def curves_figure(history):
    """Training curves from a run's history, one point per epoch.

    Args:
        history: {epoch number: {metric: value}}, with `loss` and, where
            present, `val_loss`, `val_bleu` and `val_chrf`.
    """
    epochs = sorted(history)
    figure = new_figure(11, 4)
    losses, scores = figure.subplots(1, 2)

    def curve(ax, key, label):
        points = [(e, history[e][key]) for e in epochs if key in history[e]]
        if points:
            ax.plot(*zip(*points, strict=True), marker=".", label=label)

    curve(losses, "loss", "training loss")
    curve(losses, "val_loss", "validation loss")
    losses.set(xlabel="epoch", ylabel="loss (label-smoothed)", title="Loss")
    curve(scores, "val_bleu", "validation BLEU")
    curve(scores, "val_chrf", "validation chrF")
    scores.set(xlabel="epoch", ylabel="score", title="Validation BLEU and chrF")
    for ax in (losses, scores):
        ax.xaxis.get_major_locator().set_params(integer=True)  # whole epochs
        if ax.get_lines():
            ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    return figure


def read_history(path):
    """{epoch number (from 1): {metric: value}} from a Keras `CSVLogger` file.

    An epoch logged twice (interrupted, then finished by a resumed run)
    keeps its last row; empty and "NA" values are left out.
    """
    history = {}
    with open(path, newline="") as file:
        for row in csv.DictReader(file):
            epoch = int(row.pop("epoch")) + 1
            history[epoch] = {
                key: float(value)
                for key, value in row.items()
                if value not in ("", "NA")
            }
    return history


def run_figure(run_dir, kind):
    """The figure of one `kind` ("pe", "schedule" or "curves") for a run."""
    run = RunDirectory(run_dir)
    if kind == "pe":
        return positional_encoding_figure(run.read_model_config().d_model)
    if kind == "schedule":
        return schedule_figure(TransformerSchedule(**run.read_schedule()))
    if kind == "curves":
        return curves_figure(read_history(run.require(run.history)))
    raise ValueError(f"Unknown kind {kind!r}; choose from {', '.join(KINDS)}.")


def plot_run(run_dir, output_dir=None, kinds=KINDS, image_format="png"):
    """Draws a run's pictures into `output_dir` (default `run_dir/plots`).

    Returns:
        The paths written, e.g. `runs/ding-de-en/plots/learning_rate.png`.
    """
    run = RunDirectory(run_dir)
    return [
        save_figure(run_figure(run_dir, kind), run.plot(kind, image_format, output_dir))
        for kind in kinds
    ]
