"""The settings of a training run: one frozen, nested `RunConfig`.

Six sections, each a frozen dataclass whose fields are the settings and
whose field metadata is the `keras-transformer train` flag's help:

    data        what to train on, and the vocabulary
    model       the architecture: a preset, `max_length`, field overrides
    training    batches, schedule, length, checkpoints, seed
    runtime     precision and devices
    evaluation  checkpoint averaging and decoding for scores and export
    output      where the run and its export go

A run's `job.json` holds `RunConfig.to_dict()`. The module imports no
TensorFlow, so the command line builds its parser from these fields fast;
the checks that need the data or scoring packages import them when a config
is made.
"""

import dataclasses
import os
import re

from keras_transformer.models.config import PRESETS, TransformerConfig
from keras_transformer.training.distribution import STRATEGIES, check_strategy
from keras_transformer.training.precision import PRECISIONS, check_precision

ALL = "all"  # the value of `bleu_sample` and `test_sample` that scores everything


def setting(default, help=None, **metadata):
    """A config field with its flag's help (and `metavar` or `choices`)."""
    factory = (
        {"default_factory": default} if callable(default) else {"default": default}
    )
    return dataclasses.field(**factory, metadata={"help": help, **metadata})


@dataclasses.dataclass(frozen=True)
class DataSection:
    """What to train on and the shared vocabulary."""

    corpus: str | None = setting(
        None,
        '"ding" (offline de-en, the default without files), a TFDS dataset such as '
        '"wmt14_translate/de-en", or "files" (implied by --train-files)',
    )
    source_language: str | None = setting(
        None, "Ding: de; a TFDS dataset: its own; files: for names only"
    )
    target_language: str | None = setting(
        None, "Ding: en; files: optional (zh picks sacreBLEU's tok:zh)"
    )
    train_files: tuple = setting(
        (),
        "your training pairs: SOURCE TARGET (a sentence per line) or one TSV",
        metavar="FILE",
    )
    valid_files: tuple = setting(
        (),
        "validation pairs, the same way (default: 5%% of the training sources "
        "held out by a hash, at most about 2,000 pairs)",
        metavar="FILE",
    )
    test_files: tuple = setting(
        (),
        "test pairs, the same way (default: held out as for validation)",
        metavar="FILE",
    )
    extra_train_split: str = setting(
        "", 'TFDS split added to training only ("" for none)'
    )
    extra_train_fraction: float | None = setting(
        None,
        "share of training examples drawn from --extra-train-split "
        "(default: all of it, once per pass)",
    )
    data_dir: str | None = setting(None, "TFDS data folder")
    vocab_size: int = setting(8000, "pieces of the shared SentencePiece vocabulary")
    bidirectional: bool = setting(
        False, "also train target-to-source on the training pairs"
    )

    def __post_init__(self):
        for name in ("train_files", "valid_files", "test_files"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        _check_files(self)
        _check_at_least("vocab_size", self.vocab_size, 1)
        if self.extra_train_fraction is not None:
            from keras_transformer.data.pipeline import check_fraction

            if not self.extra_train_split:
                raise ValueError("extra_train_fraction needs an extra_train_split.")
            check_fraction("extra_train_fraction", self.extra_train_fraction)
        from keras_transformer.evaluation.bleu import check_bleu_language

        check_bleu_language(self.target_language)

    @property
    def is_files(self):
        return self.corpus == "files"

    def resolved(self):
        """This section with `corpus` settled and Ding's languages filled in.

        Example:

        >>> DataSection(target_language="de").resolved().source_language
        'en'
        """
        given = any((self.train_files, self.valid_files, self.test_files))
        corpus = self.corpus or ("files" if given else "ding")
        source, target = self.source_language, self.target_language
        from keras_transformer.data import DING_ALIASES

        if corpus.lower() in DING_ALIASES:  # German-English by default
            other = {"de": "en", "en": "de"}
            source = source or other.get(target, "de")
            target = target or other.get(source, "en")
        return dataclasses.replace(
            self, corpus=corpus, source_language=source, target_language=target
        )

    def name(self):
        """The data's name: the corpus's, or the first training file's folder
        and stem; with the languages when they are known.

        Example:

        >>> DataSection(train_files=("data/train.fr",)).resolved().name()
        'data-train'
        >>> DataSection(corpus="ted_hrlr_translate/pt_to_en").name()
        'ted_hrlr_translate-pt_to_en'
        """
        if self.is_files:
            path = os.path.abspath(self.train_files[0])
            folder = os.path.basename(os.path.dirname(path))
            stem = os.path.splitext(os.path.basename(path))[0]
            name = f"{folder}-{stem}" if folder else stem
        else:
            name = self.corpus.replace("/", "-")
        codes = (self.source_language, self.target_language)
        languages = "-".join(code for code in codes if code)
        if languages and not name.endswith(languages):
            name = f"{name}-{languages}"
        return re.sub(r"[^\w.-]+", "_", name)


def _check_files(data):
    """The files options: at most two files each, and only with "files"."""
    files = {
        "train_files": data.train_files,
        "valid_files": data.valid_files,
        "test_files": data.test_files,
    }
    given = [name for name, paths in files.items() if paths]
    if data.corpus not in (None, "files"):
        if given:
            raise ValueError(
                f"{', '.join(given)} read your own files, but corpus is "
                f"{data.corpus!r}: leave corpus out (--corpus) or pass 'files'."
            )
        return
    if not given:
        if data.corpus == "files":
            raise ValueError(
                "corpus 'files' needs train_files (--train-files SOURCE TARGET, or "
                "one TSV file)."
            )
        return
    if not data.train_files:
        raise ValueError(
            "corpus 'files' needs train_files (--train-files SOURCE TARGET, or one "
            "TSV file)."
        )
    for name, paths in files.items():
        if len(paths) > 2:
            raise ValueError(
                f"{name} takes SOURCE TARGET or one TSV file, got {len(paths)} "
                f"files: {' '.join(paths)}."
            )
    if data.extra_train_split:
        raise ValueError(
            "extra_train_split is a split of a TFDS corpus; with your files, add "
            "its pairs to the training files instead."
        )


# TransformerConfig fields that the model section does not take: the
# vocabulary is the tokenizer's (data.vocab_size); max_length is its own field.
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
    """The architecture: a `TransformerConfig` preset and field overrides.

    In a file or `job.json` the overrides sit beside `preset` and
    `max_length`: `{"preset": "base", "max_length": 128, "dropout": 0.1}`.
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

    def transformer_config(self, vocab_size):
        """The preset with dropout at least `MIN_DROPOUT`, then the overrides.

        Example:

        >>> ModelSection().transformer_config(100).dropout
        0.2
        >>> ModelSection(preset="big").transformer_config(100).dropout
        0.3
        >>> ModelSection(overrides={"dropout": 0.1}).transformer_config(100).dropout
        0.1
        """
        preset = getattr(TransformerConfig, self.preset)(
            vocab_size, max_length=self.max_length
        )
        dropout = max(preset.dropout, MIN_DROPOUT)
        return preset.replace(**{"dropout": dropout, **self.overrides})

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


@dataclasses.dataclass(frozen=True)
class TrainingSection:
    """Batches, the optimizer and its schedule, the length, checkpoints."""

    tokens_per_batch: int = setting(2048, "the token budget of a batch")
    gradient_accumulation: int = setting(
        1,
        "batches per update (effective batch: K x tokens-per-batch)",
        metavar="K",
    )
    sampling_alpha: float | None = setting(
        None, "train on sampled subword segmentations (subword regularisation)"
    )
    label_smoothing: float = setting(0.1, "epsilon_ls of the loss")
    warmup_steps: int | None = setting(
        None, "default: 400, or a fifth of the updates if fewer"
    )
    learning_rate_scale: float = setting(1.0, "factor on the warm-up schedule")
    weight_decay: float = setting(
        1.0, "decoupled weight decay (AdamW) of kernels and embeddings"
    )
    cooldown_fraction: float = setting(
        1 / 3,
        "the learning rate falls linearly to 0 over the last share F of the "
        "updates (0: the paper's schedule)",
        metavar="F",
    )
    epochs: int | None = setting(
        None,
        "default: passes over the data by corpus size: 2,250 updates up to Ding's"
        " 150 batches (15 passes), 15 x sqrt(150 / B) passes over B > 150; dropout"
        " is at least 0.2 unless --model sets it",
    )
    steps_per_epoch: int | None = setting(
        None, "default: one pass over the training data"
    )
    checkpoint_every: int = setting(125, "steps between checkpoints", metavar="STEPS")
    seed: int = setting(0, "seed of initialisation and data order")

    def __post_init__(self):
        for name in ("tokens_per_batch", "gradient_accumulation", "checkpoint_every"):
            _check_at_least(name, getattr(self, name), 1)
        for name in ("epochs", "warmup_steps", "steps_per_epoch"):
            if getattr(self, name) is not None:
                _check_at_least(name, getattr(self, name), 1)
        from keras_transformer.data.tokenizer import check_sampling_alpha

        check_sampling_alpha(self.sampling_alpha)
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(
                f"label_smoothing must be in [0, 1), got {self.label_smoothing}."
            )
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}.")
        if not 0.0 <= self.cooldown_fraction <= 1.0:
            raise ValueError(
                f"cooldown_fraction must be in [0, 1], got {self.cooldown_fraction}."
            )


@dataclasses.dataclass(frozen=True)
class RuntimeSection:
    """What the run computes in, and on which devices."""

    precision: str = setting(
        "auto",
        "auto: mixed_bfloat16 on a CPU with bfloat16 matmul instructions "
        "(AVX512_BF16, AMX) and no GPU, float32 elsewhere",
        choices=PRECISIONS,
    )
    strategy: str = setting(
        "default",
        "default: one device; mirrored: all local GPUs; multi_worker: the hosts "
        "in TF_CONFIG (run the same command on each)",
        choices=STRATEGIES,
    )
    logical_cpus: int = setting(
        0, "with --strategy mirrored: N replicas on logical CPU devices", metavar="N"
    )

    def __post_init__(self):
        check_precision(self.precision)
        check_strategy(self.strategy, self.logical_cpus)


@dataclasses.dataclass(frozen=True)
class EvaluationSection:
    """Checkpoint averaging and decoding, for the scores and the export.

    `beam_size` and `alpha` are the recipe's decoding defaults: `export`,
    `average`, `evaluate` and `translate` fall back to them through
    `decoding_settings` when neither the command nor a run or export says.
    """

    average_last: int = setting(
        1,
        "average the last N checkpoints at the end (1: the final weights)",
        metavar="N",
    )
    beam_size: int = setting(4, "beams for the test score and the export")
    alpha: float = setting(1.0, "length-penalty exponent of beam search")
    bleu_sample: int | str = setting(
        100,
        "validation sentences scored (greedy) after each epoch: N, 0 for none, or all",
        metavar="N|all",
    )
    test_sample: int | str = setting(
        ALL, "test sentences scored: the first N, or all", metavar="N|all"
    )
    samples: int = setting(5, "test translations printed at the end")

    def __post_init__(self):
        _check_at_least("average_last", self.average_last, 1)
        _check_at_least("beam_size", self.beam_size, 1)
        _check_at_least("samples", self.samples, 0)
        _check_sample("bleu_sample", self.bleu_sample, 0)
        _check_sample("test_sample", self.test_sample, 1)


@dataclasses.dataclass(frozen=True)
class OutputSection:
    """Where the run folder and the export go."""

    output_dir: str | None = setting(
        None, "default: runs/ and the data's name, e.g. runs/ding-de-en"
    )
    overwrite: bool = setting(
        False,
        "start over in --output-dir, deleting the run there (by default a run "
        "resumes; one of other data is refused)",
    )
    export_dir: str = setting("saved_models", "no export when empty")
    export_name: str = setting("translator", "the SavedModel's name (TF Serving's)")
    export_precision: str = setting(
        "float32",
        "what the export computes in (default: float32, whatever the run trained in)",
        choices=PRECISIONS,
    )

    def __post_init__(self):
        check_precision(self.export_precision)


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
        data = self.data.resolved()
        object.__setattr__(self, "data", data)
        if self.output.output_dir is None:
            output_dir = os.path.join("runs", data.name())
            object.__setattr__(
                self, "output", dataclasses.replace(self.output, output_dir=output_dir)
            )
        if (
            self.training.gradient_accumulation > 1
            and self.runtime.strategy != "default"
        ):
            raise ValueError(
                "gradient_accumulation (--gradient-accumulation) works on one device"
                f" only, not with strategy {self.runtime.strategy!r}: Keras's "
                "accumulation fails under tf.distribute (keras-team/keras#20582). "
                "Raise tokens_per_batch instead."
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


def _check_at_least(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")


def _check_sample(name, value, minimum):
    if value != ALL and (
        isinstance(value, bool) or not isinstance(value, int) or value < minimum
    ):
        raise ValueError(
            f"{name} must be {ALL!r} or an int >= {minimum}, got {value!r}."
        )


def sample_size(value):
    """The number of sentences a `bleu_sample`/`test_sample` value takes
    (None for all), for `Dataset.take` or slicing.

    Example:

    >>> sample_size("all"), sample_size(16)
    (None, 16)
    """
    return None if value == ALL else value


def decoding_settings(beam_size=None, alpha=None, saved=None):
    """The beam size and alpha to decode with: each given value, else the
    `saved` one (a run's evaluation section or an export's recorded
    defaults), else the recipe's (`EvaluationSection`'s defaults).

    The one place `train`, `export`, `average`, `evaluate` and `translate`
    settle their decoding defaults.

    Args:
        beam_size, alpha: what the user asked for, or None.
        saved: a mapping with "beam_size" and "alpha", or None.

    Returns:
        `(beam_size, alpha)`.

    Example:

    >>> decoding_settings(alpha=0.6, saved={"beam_size": 5, "alpha": 1.2})
    (5, 0.6)
    >>> decoding_settings()
    (4, 1.0)
    """
    recipe = dataclasses.asdict(EvaluationSection())
    saved = recipe if saved is None else saved
    return (
        int(saved["beam_size"] if beam_size is None else beam_size),
        float(saved["alpha"] if alpha is None else alpha),
    )
