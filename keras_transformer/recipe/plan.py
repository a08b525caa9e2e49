"""The `TrainingPlan`: what a run will do, computed once from its config and data."""

import dataclasses
import math

from keras_transformer.models.config import TransformerConfig
from keras_transformer.recipe.fine_tuning import FINE_TUNING_SHARE, FINE_TUNING_WARMUP
from keras_transformer.training.duration import (
    PAPER_CORPUS_TOKENS,
    REFERENCE_BATCHES,
    REFERENCE_EPOCHS,
    default_length,
    default_warmup_steps,
)

# What chose a default length (`DefaultLength.rule`), for the summary.
LENGTH_RULES = {
    "ding": f"up to Ding's size ({REFERENCE_BATCHES} batches), whole passes that "
    f"make {REFERENCE_EPOCHS * REFERENCE_BATCHES:,} batches",
    "between": "between Ding's size and the paper's corpus, a power of the corpus "
    "size from Ding's length to the paper's budget",
    "budget": "from the paper's corpus size, the paper's budget",
}


@dataclasses.dataclass(frozen=True)
class TrainingPlan:
    """Every number a run is planned by, and the summary printed before it.

    Make it with `make_plan`; the trainer, the evaluation and the summary
    read it, and none of them computes any of it again.
    """

    training_pairs: int
    validation_pairs: int
    test_pairs: int
    bidirectional: bool
    vocab_size: int
    tokens_per_batch: int
    batches_per_pass: int
    batches_estimated: bool  # from a sample of the corpus, not counted
    epochs: int
    steps_per_epoch: int
    length_rule: str | None  # a key of LENGTH_RULES; None: the config's
    budget_tokens: int  # the paper's budget for the model, in tokens seen
    gradient_accumulation: int
    warmup_steps: int
    cooldown_steps: int
    precision: str  # the Keras dtype policy
    replicas: int
    jit_compile: bool  # XLA for the training step
    model: TransformerConfig
    learning_rate_scale: float  # the config's, times a fine-tuning run's own
    init_from: str | None  # the model a fine-tuning run starts from

    @property
    def total_steps(self):
        """Batches to train, over all epochs."""
        return self.epochs * self.steps_per_epoch

    @property
    def length_is_default(self):
        """Whether the length comes from the corpus size (no epochs set)."""
        return self.length_rule is not None

    @property
    def tokens_seen(self):
        """Tokens the run trains on, counted at the batch budget."""
        return self.total_steps * self.tokens_per_batch

    @property
    def updates(self):
        """Optimizer updates: batches over the gradient accumulation."""
        return self.total_steps // self.gradient_accumulation

    def summary(self, parameters, resumed_step=0):
        """The lines printed before training.

        Args:
            parameters: the model's parameter count.
            resumed_step: the step a resumed run starts from (0: a new run).
        """
        both_ways = " (both directions)" if self.bidirectional else ""
        budget = (
            f"the paper's budget, {_tokens(self.budget_tokens)} tokens, applies "
            f"from {_tokens(PAPER_CORPUS_TOKENS)} tokens a pass"
        )
        length = (
            f"by default for {self._pass_batches()} a pass: "
            f"{LENGTH_RULES[self.length_rule]} ({budget})"
            if self.length_is_default
            else f"set by the config ({budget})"
        )
        replica_tokens = self.tokens_per_batch // self.replicas
        accumulated = (
            f", {self.gradient_accumulation} batches "
            f"({self.gradient_accumulation * self.tokens_per_batch:,} tokens) an update"
            if self.gradient_accumulation > 1
            else ""
        )
        resuming = f", resuming at step {resumed_step}" if resumed_step else ""
        estimate = (
            " (estimated from a sample of the training pairs)"
            if self.batches_estimated
            else ""
        )
        return (
            f"Data: {self.training_pairs:,} training pairs{both_ways}, "
            f"{self.validation_pairs:,} validation, {self.test_pairs:,} test; "
            f"vocabulary: {self.vocab_size:,} pieces; {self._pass_batches()} of up "
            f"to {self.tokens_per_batch:,} tokens a pass{estimate}\n"
            f"Model: {parameters:,} parameters, {self.model}\n"
            f"Training: {self.epochs} epochs of {self.steps_per_epoch} steps, "
            f"{self.updates:,} updates, warm-up {self.warmup_steps}, cool-down "
            f"over the last {self.cooldown_steps:,}\n"
            f"Length: {_tokens(self.tokens_seen)} tokens seen, {length}\n"
            f"Devices: {self.replicas} replica(s), {self.precision}, XLA "
            f"{'on' if self.jit_compile else 'off'}; a batch of up to "
            f"{self.tokens_per_batch:,} tokens, {replica_tokens:,} a replica"
            f"{accumulated}{resuming}" + self._fine_tuning()
        )

    def _fine_tuning(self):
        if not self.init_from:
            return ""
        return (
            f"\nFine-tuning: from {self.init_from}, its vocabulary and "
            f"architecture; a fresh optimizer, learning rate x"
            f"{self.learning_rate_scale:.3g} (the source's rate at its last "
            f"update), {FINE_TUNING_SHARE:.0%} of the default length"
        )

    def _pass_batches(self):
        about = "about " if self.batches_estimated else ""
        return f"{about}{self.batches_per_pass:,} batches"


def _tokens(count):
    """`count` tokens, short: "2.5B", "4.61M", "307k" or "512".

    Example:

    >>> _tokens(2_500_000_000), _tokens(4_608_000), _tokens(307_200), _tokens(512)
    ('2.5B', '4.61M', '307k', '512')
    """
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if count >= size:
            return f"{count / size:.3g}{suffix}"
    return str(count)


def training_length(training, batches_per_pass, preset="small"):
    """`(epochs, steps_per_epoch)` on a corpus of `batches_per_pass` batches.

    Each is the training section's own. By default the run trains the
    batches of `default_length` (training/duration.py) for the `preset`, in
    epochs of one pass over the data, or a little less so that the epochs
    make that length (up to Ding's size, whole passes); with
    `steps_per_epoch` alone, in as many epochs as come closest.

    Example:

    >>> from keras_transformer.recipe.config import TrainingSection
    >>> training_length(TrainingSection(), 150)
    (15, 150)
    >>> training_length(TrainingSection(steps_per_epoch=125), 150)
    (18, 125)
    >>> training_length(TrainingSection(epochs=2), 600)
    (2, 600)
    >>> training_length(TrainingSection(), 600)  # 9,443 batches
    (16, 590)
    >>> training_length(TrainingSection(), 2_000_000)  # the budget, < a pass
    (1, 1220703)
    """
    return _length(training, batches_per_pass, preset)[:2]


def _length(training, batches_per_pass, preset, share=1.0):
    """`(epochs, steps_per_epoch, DefaultLength)` of `training_length`, the
    default length times `share`."""
    default = default_length(batches_per_pass, training.tokens_per_batch, preset)
    default = default._replace(steps=max(1, round(default.steps * share)))
    if training.epochs:
        return training.epochs, training.steps_per_epoch or batches_per_pass, default
    if training.steps_per_epoch:
        epochs = max(1, round(default.steps / training.steps_per_epoch))
        return epochs, training.steps_per_epoch, default
    epochs = math.ceil(default.steps / batches_per_pass)
    return epochs, round(default.steps / epochs), default


def make_plan(
    config,
    sizes,
    vocab_size,
    batches_per_pass,
    replicas,
    precision,
    jit_compile=False,
    batches_estimated=False,
    source=None,
):
    """The `TrainingPlan` of `config` on data of `sizes`.

    Args:
        config: the `RunConfig`.
        sizes: {"train", "validation", "test"}: the pairs of each split (the
            test pairs scored).
        vocab_size: the tokenizer's.
        batches_per_pass: batches in a pass over the training data.
        replicas: the strategy's replicas in sync.
        precision: the dtype policy the run trains in.
        jit_compile: whether the training step is compiled with XLA.
        batches_estimated: whether `batches_per_pass` is an estimate.
        source: the `fine_tuning.Source` a fine-tuning run starts from.
    """
    training = config.training
    epochs, steps_per_epoch, default = _length(
        training,
        batches_per_pass,
        config.model.preset,
        FINE_TUNING_SHARE if source else 1.0,
    )
    updates = epochs * steps_per_epoch // training.gradient_accumulation
    warmup_steps = training.warmup_steps or (
        min(FINE_TUNING_WARMUP, max(1, updates // 5))
        if source
        else default_warmup_steps(updates)
    )
    scale = source.learning_rate_scale(warmup_steps) if source else 1.0
    return TrainingPlan(
        training_pairs=sizes["train"],
        validation_pairs=sizes["validation"],
        test_pairs=sizes["test"],
        bidirectional=config.data.bidirectional,
        vocab_size=vocab_size,
        tokens_per_batch=training.tokens_per_batch,
        batches_per_pass=batches_per_pass,
        batches_estimated=batches_estimated,
        epochs=epochs,
        steps_per_epoch=steps_per_epoch,
        length_rule=None if training.epochs else default.rule,
        budget_tokens=default.budget_tokens,
        gradient_accumulation=training.gradient_accumulation,
        warmup_steps=warmup_steps,
        cooldown_steps=round(training.cooldown_fraction * updates),
        precision=precision,
        replicas=replicas,
        jit_compile=jit_compile,
        model=config.model.transformer_config(
            vocab_size, guided=config.data.guided_alignment
        ),
        learning_rate_scale=training.learning_rate_scale * scale,
        init_from=training.init_from,
    )
