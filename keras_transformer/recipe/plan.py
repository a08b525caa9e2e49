"""The `TrainingPlan`: what a run will do, computed once from its config and data."""

import dataclasses

from keras_transformer.models.config import TransformerConfig
from keras_transformer.training.duration import default_epochs, default_warmup_steps


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
    epochs: int
    steps_per_epoch: int
    length_is_default: bool  # epochs and steps from the corpus size
    gradient_accumulation: int
    warmup_steps: int
    cooldown_steps: int
    precision: str  # the Keras dtype policy
    replicas: int
    model: TransformerConfig

    @property
    def total_steps(self):
        """Batches to train, over all epochs."""
        return self.epochs * self.steps_per_epoch

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
        length = (
            f" (passes over the data, the default for {self.batches_per_pass} batches)"
            if self.length_is_default
            else ""
        )
        resuming = f", resuming at step {resumed_step}" if resumed_step else ""
        return (
            f"Data: {self.training_pairs:,} training pairs{both_ways}, "
            f"{self.validation_pairs:,} validation, {self.test_pairs:,} test; "
            f"vocabulary: {self.vocab_size:,} pieces; {self.batches_per_pass:,} "
            f"batches of up to {self.tokens_per_batch:,} tokens a pass\n"
            f"Model: {parameters:,} parameters, {self.model}\n"
            f"Training: {self.epochs} epochs of {self.steps_per_epoch} steps{length}"
            f", {self.updates:,} updates, warm-up {self.warmup_steps}, cool-down "
            f"over the last {self.cooldown_steps:,}; {self.replicas} replica(s), "
            f"{self.precision}{resuming}"
        )


def training_length(training, batches_per_pass):
    """`(epochs, steps_per_epoch)` on a corpus of `batches_per_pass` batches.

    Each is the training section's own, or by default one pass over the data
    and as many epochs as make `default_epochs` passes.

    Example:

    >>> from keras_transformer.recipe.config import TrainingSection
    >>> training_length(TrainingSection(), 150)
    (15, 150)
    >>> training_length(TrainingSection(steps_per_epoch=125), 150)
    (18, 125)
    >>> training_length(TrainingSection(epochs=2), 600)
    (2, 600)
    """
    steps_per_epoch = training.steps_per_epoch or batches_per_pass
    passes = default_epochs(batches_per_pass)
    epochs = training.epochs or max(
        1, round(passes * batches_per_pass / steps_per_epoch)
    )
    return epochs, steps_per_epoch


def make_plan(config, sizes, vocab_size, batches_per_pass, replicas, precision):
    """The `TrainingPlan` of `config` on data of `sizes`.

    Args:
        config: the `RunConfig`.
        sizes: {"train", "validation", "test"}: the pairs of each split (the
            test pairs scored).
        vocab_size: the tokenizer's.
        batches_per_pass: batches in a pass over the training data.
        replicas: the strategy's replicas in sync.
        precision: the dtype policy the run trains in.
    """
    training = config.training
    epochs, steps_per_epoch = training_length(training, batches_per_pass)
    updates = epochs * steps_per_epoch // training.gradient_accumulation
    return TrainingPlan(
        training_pairs=sizes["train"],
        validation_pairs=sizes["validation"],
        test_pairs=sizes["test"],
        bidirectional=config.data.bidirectional,
        vocab_size=vocab_size,
        tokens_per_batch=training.tokens_per_batch,
        batches_per_pass=batches_per_pass,
        epochs=epochs,
        steps_per_epoch=steps_per_epoch,
        length_is_default=not (training.epochs or training.steps_per_epoch),
        gradient_accumulation=training.gradient_accumulation,
        warmup_steps=training.warmup_steps or default_warmup_steps(updates),
        cooldown_steps=round(training.cooldown_fraction * updates),
        precision=precision,
        replicas=replicas,
        model=config.model.transformer_config(vocab_size),
    )
