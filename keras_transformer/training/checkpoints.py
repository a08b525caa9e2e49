"""Checkpoints that resume training exactly, and checkpoint averaging."""

import logging
import os
import shutil
import signal
import threading

import keras
import numpy as np
import tensorflow as tf

from keras_transformer.training.keras_internals import batches_applied
from keras_transformer.training.saved_layout import restore_checkpoint

log = logging.getLogger(__name__)

CHECKPOINT_NAME = "ckpt"  # the checkpoints' prefix: ckpt-STEP


class CheckpointCorruptedError(RuntimeError):
    """No checkpoint in a folder could be read."""


class TrainingInterrupted(Exception):
    """Training stopped on a signal, after saving a checkpoint to resume from."""


class TrainingCheckpoints:
    """The model and optimizer state on disk, numbered by training step.

    A `tf.train.CheckpointManager` over the model's weights and the
    optimizer's slots and iteration counter (so the learning-rate schedule
    resumes too). `restore` reads the newest checkpoint that is readable and
    falls back to older ones, with a warning, when the newest is corrupted
    or truncated.

    Args:
        model: a compiled Keras model.
        directory: the folder of the checkpoints.
        max_to_keep: how many recent checkpoints stay on disk (enough for
            checkpoint averaging).
    """

    def __init__(self, model, directory, max_to_keep=5):
        self.model = model
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint,
            directory,
            max_to_keep=max_to_keep,
            checkpoint_name=CHECKPOINT_NAME,
        )
        self.saved_step = None

    @property
    def step(self):
        """Training batches done (micro-batches under gradient accumulation)."""
        return batches_trained(self.model.optimizer)

    def save(self):
        """Writes a checkpoint numbered by the current step; returns its path.

        A save that fails (e.g. on a full disk) raises, and leaves the
        checkpoints before it as they were: TensorFlow writes the new one's
        parts into a folder "ckpt-STEP_temp" and renames them into place
        when all are written; that folder, which TensorFlow leaves behind
        (empty) when a write fails, is removed.
        """
        step = self.step
        try:
            path = self.manager.save(checkpoint_number=step)
        except BaseException:
            parts = os.path.join(self.manager.directory, f"{CHECKPOINT_NAME}-{step}")
            shutil.rmtree(f"{parts}_temp", ignore_errors=True)
            raise
        self.saved_step = step
        return path

    def restore(self):
        """Restores the newest readable checkpoint; returns the step (0 if none).

        Raises:
            CheckpointCorruptedError: checkpoints exist but none is readable.
        """
        paths = list(reversed(self.manager.checkpoints))
        if not paths:
            return 0
        self.model.optimizer.build(self.model.trainable_variables)
        for path in paths:
            try:
                restore_checkpoint(path, self.model, self.model.optimizer)
            # A truncated data file raises IndexError from the reader.
            except (tf.errors.OpError, ValueError, AssertionError, IndexError) as error:
                log.warning(
                    "Checkpoint %s is unreadable (%s); trying an older one.",
                    path,
                    type(error).__name__,
                )
                continue
            self.saved_step = self.step
            return self.step
        raise CheckpointCorruptedError(
            f"None of the checkpoints in {self.manager.directory} is readable: "
            f"{', '.join(paths)}. Delete them to start over."
        )


def batches_trained(optimizer):
    """The batches `optimizer` has been applied to, a checkpointed counter.

    Keras's `optimizer.iterations` counts updates; under gradient
    accumulation an update takes several batches, and Keras counts those in
    the variable behind `iterations` (the one its learning-rate schedules
    read; see `keras_internals.batches_applied`). A loss-scale optimizer
    counts in its inner optimizer.
    """
    return batches_applied(getattr(optimizer, "inner_optimizer", optimizer))


class CheckpointCallback(keras.callbacks.Callback):
    """Saves `TrainingCheckpoints` every `every_steps` steps, at epoch ends,
    and when the process is asked to stop.

    Once a batch reports a loss that is not finite, nothing more is saved,
    so the newest checkpoint is always a good one to resume from. While
    `fit` runs (in the main thread), SIGINT (Ctrl-C) and SIGTERM stop
    training at the end of the current batch, after a checkpoint of that
    step; `interrupted_by` then names the signal. A second signal stops at
    once, as it would without this callback.
    """

    STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, checkpoints, every_steps=None):
        super().__init__()
        self.checkpoints = checkpoints
        self.every_steps = every_steps
        self.loss_not_finite = False
        self.interrupted_by = None
        self._previous_handlers = {}

    def on_train_begin(self, logs=None):
        if threading.current_thread() is threading.main_thread():
            for number in self.STOP_SIGNALS:
                self._previous_handlers[number] = signal.signal(number, self._stop)

    def _stop(self, number, frame):
        if self.interrupted_by is not None:  # asked twice: stop now
            self._restore_handlers()
            signal.raise_signal(number)
            return
        self.interrupted_by = signal.Signals(number).name
        if self.model is not None:
            self.model.stop_training = True

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(loss):
            self.loss_not_finite = True
        if self.loss_not_finite:
            return
        due = self.every_steps and self.checkpoints.step % self.every_steps == 0
        if due or self.interrupted_by is not None:
            self._save_once()

    def on_epoch_end(self, epoch, logs=None):
        if not self.loss_not_finite:
            self._save_once()

    def on_train_end(self, logs=None):
        self._restore_handlers()

    def _save_once(self):
        if self.checkpoints.saved_step != self.checkpoints.step:
            self.checkpoints.save()

    def _restore_handlers(self):
        for number, handler in self._previous_handlers.items():
            signal.signal(number, handler)
        self._previous_handlers = {}


def average_checkpoints(model, checkpoint_paths):
    """Sets `model`'s weights to the mean of its weights in several checkpoints.

    Section 6.1 of the paper averages the last 5 (base) or 20 (big)
    checkpoints. Checkpoints are those of `TrainingCheckpoints` (or any
    `tf.train.Checkpoint(model=...)`); only the model's weights are read.

    Args:
        model: the model whose weights are replaced (built).
        checkpoint_paths: checkpoint prefixes, e.g. `manager.checkpoints`.

    Returns:
        `model`, with averaged weights.
    """
    paths = list(checkpoint_paths)
    if not paths:
        raise ValueError("average_checkpoints needs at least one checkpoint.")
    totals = [np.zeros(weight.shape, "float64") for weight in model.weights]
    for path in paths:
        restore_checkpoint(path, model)
        for total, weight in zip(totals, model.weights, strict=True):
            total += np.asarray(weight.numpy(), "float64")
    for total, weight in zip(totals, model.weights, strict=True):
        weight.assign((total / len(paths)).astype(weight.dtype))
    return model
