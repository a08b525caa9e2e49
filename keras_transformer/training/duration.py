"""How long a training run lasts: its length for a corpus size, and its time.

The translation job trains for `default_epochs` passes over its data, with
`default_warmup_steps` of warm-up (docs/experiments.md, "Training length and
corpus size"), and `TimeEstimate` tells how long that will take once the
first updates are timed.
"""

import math
import time

import keras

# 15 passes over Ding's 16,913 training pairs (150 batches of 2,048 tokens, the
# corpus the recipe was tuned on): 2,250 updates. A smaller corpus gets as many
# passes as make those updates; a larger one of B batches 15 * sqrt(150 / B),
# so above Ding's size the updates grow as the square root of the corpus.
REFERENCE_EPOCHS = 15
REFERENCE_BATCHES = 150
# The warm-up of the recipe, cut to a fifth of a shorter run.
WARMUP_STEPS = 400


def default_epochs(batches_per_pass):
    """Passes over a corpus of `batches_per_pass` batches: 15 at Ding's size.

    Example:

    >>> [default_epochs(batches) for batches in (39, 150, 672, 9000)]
    [58, 15, 7, 2]
    """
    if batches_per_pass < 1:
        raise ValueError(f"batches_per_pass must be >= 1, got {batches_per_pass}.")
    ratio = REFERENCE_BATCHES / batches_per_pass
    return max(1, round(REFERENCE_EPOCHS * max(ratio, math.sqrt(ratio))))


def default_warmup_steps(updates):
    """The warm-up of a run of `updates` updates: 400, or a fifth if fewer.

    Example:

    >>> default_warmup_steps(2295), default_warmup_steps(1140)
    (400, 228)
    """
    return max(1, min(WARMUP_STEPS, updates // 5))


class TimeEstimate(keras.callbacks.Callback):
    """Logs how long the rest of training will take, twice.

    First from `measured_steps` updates after the first (which traces the
    step function), for the updates alone; then, at the end of the second
    epoch, from that epoch's time, validation included.

    Args:
        total_steps: the batches left to train, over all `fit` calls.
        log: a callable taking the message, e.g. `print`.
        measured_steps: the batches timed for the first estimate.
    """

    def __init__(self, total_steps, log, measured_steps=20):
        super().__init__()
        self.total_steps = total_steps
        self.log = log
        self.measured_steps = measured_steps
        self._steps = 0
        self._epochs = 0
        self._started = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_started = time.perf_counter()
        self._epoch_steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self._steps += 1
        self._epoch_steps += 1
        if self._steps == 1:
            self._started = time.perf_counter()
        elif self._steps == 1 + self.measured_steps:
            per_step = (time.perf_counter() - self._started) / self.measured_steps
            left = per_step * (self.total_steps - self.measured_steps)
            self.log(
                f"Estimated training time: {_duration(left)} for the updates "
                f"({per_step:.2f} s each), and validation after each epoch"
            )

    def on_epoch_end(self, epoch, logs=None):
        self._epochs += 1
        if self._epochs == 2 and self._steps < self.total_steps:
            per_step = (time.perf_counter() - self._epoch_started) / self._epoch_steps
            left = per_step * (self.total_steps - self._steps)
            self.log(f"About {_duration(left)} of training left, validation included")


def _duration(seconds):
    """`seconds` as "1 h 05 min", "14 min" or "40 s"."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"
