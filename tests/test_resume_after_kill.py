"""The real training command, killed with SIGKILL mid-epoch, resumes exactly.

`keras-transformer train` runs in a subprocess until it has written at least
one checkpoint, is killed without warning in the middle of its only epoch,
and is started again with the same arguments. The second run must start at
the newest checkpoint the first one completed (the step counter continues:
no checkpointed step is trained twice or skipped), finish the epoch, and
leave a model that loads and translates.
"""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the exported tokenizer's ops)

from keras_transformer.recipe.run_directory import RunDirectory

STEPS = 200
CHECKPOINT_EVERY = 20
ACCUMULATION = 2  # also checks that steps count batches, not updates
START_TIMEOUT_S = 300
RUN_TIMEOUT_S = 600


def run_directory(tmp_path):
    return RunDirectory(tmp_path / "run")


def train_command(tmp_path, export=True):
    """The train command; `export=False` leaves out the export at the end."""
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
        f"--export-dir={tmp_path / 'saved_models' if export else ''}",
    ]


def completed_checkpoints(directory):
    """Steps of the checkpoints the manager has finished writing."""
    state = tf.train.get_checkpoint_state(str(directory))
    paths = state.all_model_checkpoint_paths if state else []
    return [int(path.rsplit("-", 1)[1]) for path in paths]


ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def start_and_wait_for_a_checkpoint(tmp_path, stderr=subprocess.DEVNULL, export=True):
    """Starts training; returns the process once `fit` has saved a checkpoint.

    The process is killed if it fails to get there.
    """
    process = subprocess.Popen(
        train_command(tmp_path, export),
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


def rerun(tmp_path, export=True):
    return subprocess.run(
        train_command(tmp_path, export),
        capture_output=True,
        text=True,
        env=ENV,
        timeout=RUN_TIMEOUT_S,
    )


@pytest.mark.slow
def test_sigkill_mid_epoch_then_rerun_resumes_from_the_last_checkpoint(tmp_path):
    checkpoints = run_directory(tmp_path).checkpoints
    first = start_and_wait_for_a_checkpoint(tmp_path)
    try:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        first.kill()
    assert first.returncode == -signal.SIGKILL
    saved = completed_checkpoints(checkpoints)
    assert saved and max(saved) < STEPS, f"not killed mid-epoch: {saved}"
    assert all(step % CHECKPOINT_EVERY == 0 for step in saved)

    second = rerun(tmp_path)
    assert second.returncode == 0, second.stderr[-5000:]
    resumed = re.search(r"resuming at step (\d+)", second.stdout)
    assert resumed, second.stdout[-3000:]
    assert int(resumed.group(1)) == max(saved)
    assert completed_checkpoints(checkpoints)[-1] == STEPS
    results = run_directory(tmp_path).read_results()
    assert results["steps"] == STEPS  # the counter continued, no batch repeated

    export = tmp_path / "saved_models" / "translator" / "1"
    translate = tf.saved_model.load(str(export)).signatures["serving_default"]
    translations = translate(text=tf.constant(["Guten Morgen!", "Ich bin müde."]))
    assert translations["translation"].shape == (2,)


@pytest.mark.slow
def test_sigint_saves_the_current_step_and_says_how_to_resume(tmp_path):
    # No export: this test reads only what the two runs print.
    first = start_and_wait_for_a_checkpoint(
        tmp_path, stderr=subprocess.PIPE, export=False
    )
    try:
        first.send_signal(signal.SIGINT)
        _, errors = first.communicate(timeout=120)
    finally:
        first.kill()
    assert first.returncode == 130, errors[-3000:]
    stopped = re.search(r"Stopped by SIGINT at step (\d+)", errors)
    assert stopped and "Rerun the same command to resume" in errors, errors[-3000:]
    step = int(stopped.group(1))
    checkpoints = run_directory(tmp_path).checkpoints
    assert completed_checkpoints(checkpoints)[-1] == step < STEPS
    assert "Traceback" not in errors

    second = rerun(tmp_path, export=False)
    assert second.returncode == 0, second.stderr[-5000:]
    assert f"resuming at step {step}" in second.stdout
