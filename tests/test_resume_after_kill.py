"""The real training command, stopped mid-epoch, resumes exactly.

`keras-transformer train` runs in a subprocess until it has written at least
one checkpoint and is stopped by SIGTERM in the middle of its only epoch, as
a spot machine stops it before its SIGKILL: it saves the step it was at and
exits (status 130) within the grace period, and the rerun resumes at that
step (the step counter continues, counting batches under gradient
accumulation) and finishes. SIGINT (Ctrl-C) takes the same path, tested
in-process on `fit`. Killed without warning (SIGKILL) in any phase of the
run: tests/test_crash_recovery.py.
"""

import os
import re
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.recipe.run_directory import RunDirectory
from keras_transformer.recipe.trainer import check_stopped_well
from keras_transformer.training.checkpoints import (
    CheckpointCallback,
    TrainingCheckpoints,
    TrainingInterrupted,
)

STEPS = 200
CHECKPOINT_EVERY = 20
ACCUMULATION = 2  # also checks that steps count batches, not updates
START_TIMEOUT_S = 300
RUN_TIMEOUT_S = 600
GRACE_S = 30  # a spot machine's: SIGTERM, then SIGKILL this much later


def run_directory(tmp_path):
    return RunDirectory(tmp_path / "run")


def train_command(tmp_path):
    """The train command, without the export at the end (these tests read
    only what the runs print and leave)."""
    return [
        sys.executable,
        "-m",
        "keras_transformer.cli",
        "train",
        "--preset=tiny",
        '--model={"d_model": 32, "d_ff": 64, "num_heads": 2}',
        "--vocab-size=500",
        "--max-length=24",
        "--tokens-per-batch=256",
        f"--gradient-accumulation={ACCUMULATION}",
        "--epochs=1",
        f"--steps-per-epoch={STEPS}",
        f"--checkpoint-every={CHECKPOINT_EVERY}",
        "--average-last=1",
        "--beam-size=2",
        "--bleu-sample=4",
        "--test-sample=4",
        "--samples=0",
        f"--output-dir={run_directory(tmp_path).path}",
        "--export-dir=",
    ]


def completed_checkpoints(directory):
    """Steps of the checkpoints the manager has finished writing."""
    state = tf.train.get_checkpoint_state(str(directory))
    paths = state.all_model_checkpoint_paths if state else []
    return [int(path.rsplit("-", 1)[1]) for path in paths]


ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def start_and_wait_for_a_checkpoint(tmp_path, stderr=subprocess.DEVNULL):
    """Starts training; returns the process once `fit` has saved a checkpoint.

    The process is killed if it fails to get there.
    """
    process = subprocess.Popen(
        train_command(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
        env=ENV,
    )
    checkpoints = run_directory(tmp_path).checkpoints
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while not completed_checkpoints(checkpoints):
            assert process.poll() is None, "training ended before its first checkpoint"
            assert time.monotonic() < deadline, "no checkpoint in time"
            time.sleep(0.05)
    except AssertionError:
        process.kill()
        raise
    return process


def rerun(tmp_path):
    return subprocess.run(
        train_command(tmp_path),
        capture_output=True,
        text=True,
        env=ENV,
        timeout=RUN_TIMEOUT_S,
    )


@pytest.mark.slow
@pytest.mark.longest
def test_sigterm_saves_and_exits_within_a_spot_machines_grace_period(
    tmp_path, record_property
):
    """A spot machine's SIGTERM: saved and gone before its SIGKILL would come."""
    first = start_and_wait_for_a_checkpoint(tmp_path, stderr=subprocess.PIPE)
    try:
        first.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        try:
            _, errors = first.communicate(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {GRACE_S} s after SIGTERM: SIGKILL now")
        record_property("sigterm_to_exit_seconds", round(time.monotonic() - sent, 2))
    finally:
        first.kill()
    assert first.returncode == 130, errors[-3000:]
    stopped = re.search(r"Stopped by SIGTERM at step (\d+)", errors)
    assert stopped and "Rerun the same command to resume" in errors, errors[-3000:]
    step = int(stopped.group(1))
    checkpoints = run_directory(tmp_path).checkpoints
    assert completed_checkpoints(checkpoints)[-1] == step < STEPS
    assert "Traceback" not in errors

    second = rerun(tmp_path)
    assert second.returncode == 0, second.stderr[-5000:]
    assert f"resuming at step {step}" in second.stdout
    assert completed_checkpoints(checkpoints)[-1] == STEPS
    assert run_directory(tmp_path).read_results()["steps"] == STEPS


class SignalAfter(keras.callbacks.Callback):
    """Sends this process `number` after batch `batch`, where `fit` runs."""

    def __init__(self, number, batch, saver):
        super().__init__()
        self.number = number
        self.batch = batch
        self.saver = saver

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.batch:
            # Without the saver's handler (e.g. `fit` off the main thread)
            # the signal would stop pytest itself.
            assert signal.getsignal(self.number) == self.saver._stop
            signal.raise_signal(self.number)


def dense_model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", run_eagerly=True)  # no tracing
    return model


def test_sigint_stops_fit_after_a_checkpoint_of_the_step_it_came_in(tmp_path):
    """Ctrl-C in-process: the same path as SIGTERM (tested on the command
    above: status 130 and the resume), with the signal's own name."""
    model = dense_model()
    checkpoints = TrainingCheckpoints(model, str(tmp_path / "checkpoints"))
    saver = CheckpointCallback(checkpoints, every_steps=4)
    before = signal.getsignal(signal.SIGINT)
    model.fit(
        np.ones((16, 2), "float32"),
        np.ones((16, 1), "float32"),
        batch_size=1,
        callbacks=[SignalAfter(signal.SIGINT, 5, saver), saver],
        verbose=0,
    )
    assert saver.interrupted_by == "SIGINT"
    assert signal.getsignal(signal.SIGINT) == before  # Ctrl-C stops at once again
    assert completed_checkpoints(tmp_path / "checkpoints") == [4, 6]
    with pytest.raises(TrainingInterrupted, match=r"Stopped by SIGINT at step 6,"):
        check_stopped_well(saver, checkpoints)

    resumed = TrainingCheckpoints(dense_model(), str(tmp_path / "checkpoints"))
    assert resumed.restore() == 6
