"""Fine-tuning: a run that starts from another run's weights (`training.init_from`).

The source brings its vocabulary, its architecture and its length limit:
its run's tokenizer.model becomes the run's `data.vocab`, and its
`TransformerConfig` and its run's `model.max_length` the model section.
Another vocabulary, vocabulary size, architecture or `max_length` is a
one-line error; the dropouts may change. The optimizer starts afresh. By
default the run trains `FINE_TUNING_SHARE` of the usual length for its
corpus, with a warm-up of at most `FINE_TUNING_WARMUP` updates back up to the
rate the source's schedule had reached at its last update (before its
cool-down), then the same inverse-square-root decay and cool-down.
"""

import dataclasses
import math
import os

from keras_transformer.models.config import PRESETS, TransformerConfig
from keras_transformer.recipe.config import RunConfig
from keras_transformer.recipe.model_section import ModelSection
from keras_transformer.recipe.run_directory import model_and_run

# A fine-tuning run's default length: this share of a new run's.
FINE_TUNING_SHARE = 0.2
# Its default warm-up: this many updates, or a fifth of a shorter run.
FINE_TUNING_WARMUP = 100
# TransformerConfig fields a fine-tuning run may set otherwise than its source.
REGULARISATION = ("dropout", "attention_dropout", "activation_dropout")


@dataclasses.dataclass(frozen=True)
class Source:
    """The model a fine-tuning run starts from."""

    model: str  # its .keras file
    tokenizer: str  # its run's tokenizer.model
    config: TransformerConfig
    updates: int | None  # the updates its schedule was planned for, if known
    # Its run's model.max_length (the recipe's default if it has no job.json).
    max_length: int = ModelSection.max_length

    def learning_rate_scale(self, warmup_steps):
        """The factor on a `warmup_steps` schedule that makes its peak the
        source schedule's rate at its last update (1.0 if unknown).

        The paper's schedule peaks at d^-0.5 warmup^-0.5 and is
        d^-0.5 step^-0.5 after its warm-up.

        Example:

        >>> source = Source("m.keras", "t.model", None, updates=2500)
        >>> source.learning_rate_scale(100)
        0.2
        """
        if not self.updates or self.updates <= warmup_steps:
            return 1.0
        return math.sqrt(warmup_steps / self.updates)


def source_of(path):
    """The `Source` at `path`: a run folder, or a .keras file in one.

    Raises:
        FileNotFoundError: no model there, or no tokenizer.model or
            model_config.json beside it.
    """
    model, run = model_and_run(path)
    for needed in (run.tokenizer, run.model_config):
        if not os.path.exists(needed):
            raise FileNotFoundError(
                f"{needed} does not exist: init_from needs the run folder of the "
                f"model ({path}), with the vocabulary and config it was trained with."
            )
    schedule = run.read_schedule() if os.path.exists(run.schedule) else {}
    section = run.read_config().model if run.exists() else ModelSection()
    return Source(
        model=model,
        tokenizer=run.tokenizer,
        config=run.read_model_config(),
        updates=schedule.get("total_steps"),
        max_length=section.max_length,
    )


def settle_init_from(config):
    """`(config, source)`: `config` with the vocabulary and model section of
    its `training.init_from` source, and that `Source`; `(config, None)`
    without one.

    Raises:
        FileNotFoundError: see `source_of`.
        ValueError: the config asks for another vocabulary or architecture.
    """
    path = config.training.init_from
    if not path:
        return config, None
    source = source_of(path)
    vocab = config.data.vocab
    if vocab and os.path.abspath(vocab) != os.path.abspath(source.tokenizer):
        raise ValueError(
            f"init_from brings its vocabulary ({source.tokenizer}); leave out "
            "vocab (--vocab)."
        )
    values = config.to_dict()
    values["data"]["vocab"] = source.tokenizer
    values["model"] = model_section(
        source.config, config.model, source.max_length
    ).to_dict()
    return RunConfig.from_dict(values), source


def model_section(source, given, max_length):
    """The model section of the `source` TransformerConfig and `max_length`
    (its run's), with the dropouts that `given` overrides.

    Example:

    >>> source = TransformerConfig.tiny(100, dropout=0.2)
    >>> section = model_section(source, ModelSection(), max_length=24)
    >>> section.preset, section.max_length
    ('tiny', 24)
    >>> longer = dataclasses.replace(section, max_length=48)
    >>> model_section(source, longer, max_length=24)
    Traceback (most recent call last):
    ...
    ValueError: Fine-tuning keeps ... the model settings change max_length 24 -> 48 (...

    Raises:
        ValueError: `given` sets anything else, and that differs from
            `source` or `max_length`.
    """
    dropouts = {
        name: value for name, value in given.overrides.items() if name in REGULARISATION
    }
    rest = {
        name: value
        for name, value in given.overrides.items()
        if name not in REGULARISATION
    }
    if dataclasses.replace(given, overrides=rest) != ModelSection():
        wanted = given.transformer_config(source.vocab_size)
        changed = [
            f"{field.name} {getattr(source, field.name)!r} -> "
            f"{getattr(wanted, field.name)!r}"
            for field in dataclasses.fields(TransformerConfig)
            if field.name not in REGULARISATION
            and getattr(source, field.name) != getattr(wanted, field.name)
        ]
        if given.max_length != max_length:
            changed.append(f"max_length {max_length!r} -> {given.max_length!r}")
        if changed:
            raise ValueError(
                "Fine-tuning keeps the architecture and max_length of init_from's "
                f"model; the model settings change {', '.join(changed)} (leave "
                "them out; only dropouts may change)."
            )
    return _section_of(source.replace(**dropouts), max_length)


def _section_of(config, max_length):
    """The model section that gives `config`, with `max_length`: the preset
    `config` differs least from, and the fields it differs in (dropout
    always, as the section raises a preset's otherwise)."""
    fields = [
        field.name
        for field in dataclasses.fields(TransformerConfig)
        if field.name != "vocab_size"
    ]

    def overrides(preset):
        base = getattr(TransformerConfig, preset)(config.vocab_size)
        return {
            name: getattr(config, name)
            for name in fields
            if name == "dropout" or getattr(config, name) != getattr(base, name)
        }

    preset = min(PRESETS, key=lambda name: len(overrides(name)))
    return ModelSection(
        preset=preset, max_length=max_length, overrides=overrides(preset)
    )
