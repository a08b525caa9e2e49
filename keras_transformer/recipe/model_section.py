"""The run config's model section: a preset and its overrides."""

import dataclasses

from keras_transformer.models.config import (
    GUIDED_ALIGNMENT_HEADS,
    GUIDED_FULL_CONTEXT,
    PRESETS,
    TransformerConfig,
)
from keras_transformer.recipe.settings import check_at_least, setting

# Settings that the model section's overrides do not take: the vocabulary is
# the tokenizer's (data.vocab_size); max_length is the section's own field.
_NOT_ARCHITECTURE = {
    "vocab_size": "the tokenizer's size: set data.vocab_size (--vocab-size)",
    "label_smoothing": "a training setting: training.label_smoothing "
    "(--label-smoothing)",
    "warmup_steps": "a training setting: training.warmup_steps (--warmup-steps)",
}
# The recipe, the same in every precision (docs/experiments.md, "One recipe in
# every precision"): dropout at least 0.2 unless the model section sets it.
MIN_DROPOUT = 0.2


@dataclasses.dataclass(frozen=True)
class ModelSection:
    """The model: a `TransformerConfig` preset, field overrides, and the
    run's length limit.

    `max_length` is no part of the architecture (`transformer_config`): the
    data pipeline cuts sources and targets to it, and the run's
    `Translator`s (evaluation, export) read and decode up to it. In a file
    or `job.json` the overrides sit beside `preset` and `max_length`:
    `{"preset": "base", "max_length": 128, "dropout": 0.1}`.
    """

    preset: str = setting("small", "the TransformerConfig preset", choices=PRESETS)
    max_length: int = setting(
        64, "the most tokens in a source and in a target, for training and decoding"
    )
    overrides: dict = setting(
        dict,
        "TransformerConfig overrides, e.g. '{\"dropout\": 0.2}'",
        flag="--model",
        metavar="JSON",
    )

    def __post_init__(self):
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {PRESETS}, got {self.preset!r}.")
        check_at_least("max_length", self.max_length, 2)  # a piece and the end id
        if not isinstance(self.overrides, dict):
            raise ValueError(
                "The model overrides must be a JSON object of TransformerConfig "
                f"fields, e.g. '{{\"dropout\": 0.2}}'; got {self.overrides!r}."
            )
        for name, reason in _NOT_ARCHITECTURE.items():
            if name in self.overrides:
                raise ValueError(f"The model section cannot set {name}: {reason}.")
        if "max_length" in self.overrides:
            raise ValueError(
                "Set max_length as model.max_length (--max-length), not among "
                "the overrides."
            )
        self.transformer_config(2)  # the overrides are checked now

    def transformer_config(self, vocab_size, guided=False):
        """The preset with dropout at least `MIN_DROPOUT`, then the overrides.

        A model trained to align (`guided`) aligns with
        `GUIDED_ALIGNMENT_HEADS` heads, with full context as
        `GUIDED_FULL_CONTEXT` says, unless the overrides say.

        Example:

        >>> ModelSection().transformer_config(100).dropout
        0.2
        >>> ModelSection(preset="big").transformer_config(100).dropout
        0.3
        >>> ModelSection(overrides={"dropout": 0.1}).transformer_config(100).dropout
        0.1
        >>> ModelSection().transformer_config(100, guided=True).alignment_heads
        1
        """
        preset = getattr(TransformerConfig, self.preset)(vocab_size)
        values = {"dropout": max(preset.dropout, MIN_DROPOUT)}
        if guided:
            values["alignment_heads"] = GUIDED_ALIGNMENT_HEADS
            values["full_context_alignment"] = GUIDED_FULL_CONTEXT
        return preset.replace(**{**values, **self.overrides})

    def to_dict(self):
        return {"preset": self.preset, "max_length": self.max_length, **self.overrides}

    @classmethod
    def from_dict(cls, values):
        values = dict(values)
        named = {
            name: values.pop(name)
            for name in ("preset", "max_length")
            if name in values
        }
        return cls(**named, overrides={**values.pop("overrides", {}), **values})
