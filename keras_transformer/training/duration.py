"""How long a training run lasts: its length for a corpus size, and its time.

The translation job trains for `default_length` batches by default, with
`default_warmup_steps` of warm-up (docs/experiments.md, "Training length and
corpus size"), and `TimeEstimate` tells how long that will take once the
first updates are timed.
"""

import math
import time
from typing import NamedTuple

import keras

# Ding's 16,913 training pairs (150 batches of 2,048 tokens, the corpus the
# recipe was tuned on) train 15 passes: 2,250 batches. A smaller corpus trains
# as many whole passes as make those batches.
REFERENCE_EPOCHS = 15
REFERENCE_BATCHES = 150
# The paper's budget (section 5.1): updates of about 25,000 source and 25,000
# target tokens; presets without one (tiny, small) take base's.
PAPER_UPDATES = {"base": 100_000, "big": 300_000}
PAPER_BATCH_TOKENS = 25_000
# The paper's corpus, WMT14 en-de (4.5M pairs): about 5,400 batches of 25,000
# tokens a pass. From this size on, a run trains the paper's budget.
PAPER_CORPUS_TOKENS = 135_000_000
# The warm-up of the recipe, cut to a fifth of a shorter run.
WARMUP_STEPS = 400


class DefaultLength(NamedTuple):
    """A default training length and the rule that chose it.

    `steps`: the batches to train; `rule`: "ding" (up to Ding's size),
    "between" or "budget" (the paper's); `budget_tokens`: the paper's
    budget for the preset, in tokens seen.
    """

    steps: int
    rule: str
    budget_tokens: int


def paper_budget_tokens(preset):
    """The paper's training budget of `preset` in tokens seen (target side).

    Example:

    >>> paper_budget_tokens("base"), paper_budget_tokens("big")
    (2500000000, 7500000000)
    >>> paper_budget_tokens("small") == paper_budget_tokens("base")
    True
    """
    return PAPER_UPDATES.get(preset, PAPER_UPDATES["base"]) * PAPER_BATCH_TOKENS


def default_length(batches_per_pass, tokens_per_batch=2048, preset="base"):
    """The batches a run trains by default on a corpus of `batches_per_pass`.

    Tokens are counted at the batch budget (`tokens_per_batch` a batch,
    padding included), like the paper's "about 25,000"; the budget is in
    tokens seen, so smaller batches or fewer devices make more updates of
    fewer tokens, and gradient accumulation changes only the updates.

    - Up to Ding's size (150 batches): as many whole passes as make 2,250
      batches (15 passes at Ding's size), whatever the batch size.
    - From the paper's corpus size (`PAPER_CORPUS_TOKENS` a pass): the
      paper's budget for `preset`: 100,000 updates of 25,000 tokens for
      base, 300,000 for big; tiny and small take base's, a bound that
      smaller models reach no later.
    - Between: a straight line on log-log axes (a power of the corpus size)
      from Ding's 2,250 batches to the budget, so the length is continuous
      and grows with the corpus. For base that is 15 to 18.5 passes; for big,
      15 to 56.

    Never fewer than 2,250 batches above Ding's size.

    Example:

    >>> [default_length(b).steps for b in (39, 150, 600, 70_000)]
    [2262, 2250, 9443, 1220703]
    >>> default_length(600, preset="big").rule, default_length(70_000).rule
    ('between', 'budget')
    """
    if batches_per_pass < 1:
        raise ValueError(f"batches_per_pass must be >= 1, got {batches_per_pass}.")
    budget = paper_budget_tokens(preset)
    if batches_per_pass <= REFERENCE_BATCHES:
        passes = max(1, round(REFERENCE_EPOCHS * REFERENCE_BATCHES / batches_per_pass))
        return DefaultLength(passes * batches_per_pass, "ding", budget)
    reference = REFERENCE_EPOCHS * REFERENCE_BATCHES
    budget_steps = budget / tokens_per_batch
    corpus = batches_per_pass / REFERENCE_BATCHES  # in Ding's sizes
    paper_corpus = PAPER_CORPUS_TOKENS / (REFERENCE_BATCHES * tokens_per_batch)
    if corpus >= paper_corpus:
        steps, rule = budget_steps, "budget"
    else:
        exponent = math.log(budget_steps / reference) / math.log(paper_corpus)
        steps, rule = reference * corpus**exponent, "between"
    return DefaultLength(max(reference, round(steps)), rule, budget)


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
