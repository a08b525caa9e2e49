"""The settings of a training run: one frozen, nested `RunConfig`.

Six sections, each a frozen dataclass whose fields are the settings and
whose field metadata is the `keras-transformer train` flag's help:

    data        what to train on, and the vocabulary
    model       the architecture (a preset, field overrides) and `max_length`
    training    batches, schedule, length, checkpoints, seed
    runtime     precision and devices
    evaluation  checkpoint averaging and decoding for scores and export
    output      where the run and its export go

A run's `job.json` holds `RunConfig.to_dict()`. The module imports no
TensorFlow, so the command line builds its parser from these fields fast;
making a config imports sacreBLEU (its BLEU language check) but no
TensorFlow either, so `train` can lock its run folder before TensorFlow
starts.
"""

import dataclasses
import os

from keras_transformer.recipe.data_section import DataSection
from keras_transformer.recipe.model_section import ModelSection
from keras_transformer.recipe.settings import (
    ALL,
    EvaluationSection,
    OutputSection,
    RuntimeSection,
    TrainingSection,
    sample_size,
)
from keras_transformer.training.distribution import check_gradient_accumulation

__all__ = [
    "ALL",
    "SECTIONS",
    "VERSION",
    "DataSection",
    "EvaluationSection",
    "ModelSection",
    "OutputSection",
    "RunConfig",
    "RuntimeSection",
    "TrainingSection",
    "check_keys",
    "sample_size",
]

SECTIONS = {
    "data": DataSection,
    "model": ModelSection,
    "training": TrainingSection,
    "runtime": RuntimeSection,
    "evaluation": EvaluationSection,
    "output": OutputSection,
}
VERSION = 2  # job.json's layout: 1 was flat (no "version"), 2 is sectioned


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Every setting of a training run; every one has a default.

    Build it from nested dicts with `RunConfig.from_dict`, or from a file
    and flags with `recipe.config_files.load_config`. The data section is
    resolved (corpus and Ding's languages settled) and `output_dir` named
    after the data when left out.

    Example:

    >>> config = RunConfig.from_dict({"training": {"epochs": 3}})
    >>> config.training.epochs, config.data.corpus, config.output.output_dir
    (3, 'ding', 'runs/ding-de-en')
    """

    data: DataSection = dataclasses.field(default_factory=DataSection)
    model: ModelSection = dataclasses.field(default_factory=ModelSection)
    training: TrainingSection = dataclasses.field(default_factory=TrainingSection)
    runtime: RuntimeSection = dataclasses.field(default_factory=RuntimeSection)
    evaluation: EvaluationSection = dataclasses.field(default_factory=EvaluationSection)
    output: OutputSection = dataclasses.field(default_factory=OutputSection)

    def __post_init__(self):
        data = self.data.resolved(vocab_elsewhere=bool(self.training.init_from))
        object.__setattr__(self, "data", data)
        if self.output.output_dir is None:
            output_dir = os.path.join("runs", data.name())
            object.__setattr__(
                self, "output", dataclasses.replace(self.output, output_dir=output_dir)
            )
        if self.runtime.strategy != "default":
            check_gradient_accumulation(
                self.training.gradient_accumulation,
                self.runtime.strategy,
                name="gradient_accumulation",
            )
        if self.output.overwrite and self.runtime.strategy == "multi_worker":
            raise ValueError(
                "overwrite (--overwrite) cannot be used with strategy 'multi_worker':"
                " the chief would delete the folders the other workers write in. "
                "Delete the run folder before starting the workers."
            )
        if self.model.max_length > self.training.tokens_per_batch:
            raise ValueError(
                f"tokens_per_batch={self.training.tokens_per_batch} must be >= "
                f"max_length={self.model.max_length}."
            )

    def to_dict(self):
        """The config as JSON-ready nested dicts, with `version`."""
        values = {"version": VERSION}
        for name in SECTIONS:
            section = getattr(self, name)
            values[name] = (
                section.to_dict() if name == "model" else dataclasses.asdict(section)
            )
            for key, value in values[name].items():
                if isinstance(value, tuple):
                    values[name][key] = list(value)
        return values

    @classmethod
    def from_dict(cls, values):
        """A config from nested dicts; unknown sections or keys are ValueErrors."""
        values = dict(values)
        version = values.pop("version", VERSION)
        if version != VERSION:
            raise ValueError(f"Unknown config version {version!r}; this is {VERSION}.")
        sections = {}
        for name, section in values.items():
            if name not in SECTIONS:
                raise ValueError(
                    f"Unknown config section {name!r}; the sections are "
                    f"{', '.join(SECTIONS)}."
                )
            if not isinstance(section, dict):
                raise ValueError(f"Config section {name!r} must be a mapping.")
            if name == "model":
                sections[name] = ModelSection.from_dict(section)
            else:
                check_keys(name, section)
                sections[name] = SECTIONS[name](**section)
        return cls(**sections)

    def replace(self, **sections):
        """A copy with some sections' fields changed: `replace(training={...})`."""
        changed = self.to_dict()
        for name, fields in sections.items():
            changed[name] = {**changed[name], **fields}
        return RunConfig.from_dict(changed)


def check_keys(section, keys):
    """Raises ValueError naming any of `keys` that `section` does not have."""
    fields = [field.name for field in dataclasses.fields(SECTIONS[section])]
    for key in keys:
        if key not in fields:
            raise ValueError(
                f"Unknown setting {section}.{key}; the {section} settings are "
                f"{', '.join(fields)}."
            )
