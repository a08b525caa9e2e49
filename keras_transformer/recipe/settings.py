"""The run config's sections of training, runtime, evaluation and output
settings, and what every section's fields share: `setting`, the checks."""

import dataclasses

from keras_transformer import decoding_defaults
from keras_transformer.data.checks import check_sampling_alpha
from keras_transformer.models.config import GUIDED_ALIGNMENT_WEIGHT
from keras_transformer.scorings import SCORINGS, check_scoring
from keras_transformer.training.distribution import (
    JIT_COMPILE,
    STRATEGIES,
    check_jit_compile,
    check_strategy,
)
from keras_transformer.training.precision import PRECISIONS, check_precision

EXPORT_WEIGHTS = ("best", "last")
ALL = "all"  # the value of `bleu_sample` and `test_sample` that scores everything


def setting(default, help=None, **metadata):
    """A config field with its flag's help (and `metavar` or `choices`)."""
    factory = (
        {"default_factory": default} if callable(default) else {"default": default}
    )
    return dataclasses.field(**factory, metadata={"help": help, **metadata})


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
    alignment_weight: float = setting(
        GUIDED_ALIGNMENT_WEIGHT,
        "with --train-alignments: the weight of the guided alignment loss "
        "beside the translation loss",
    )
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
        "default: by corpus size: passes that make 2,250 batches up to Ding's 150;"
        " from 135M tokens a pass, the paper's budget in tokens seen (base: 100k"
        " updates of 25k tokens, big: 300k, tiny and small: base's); between, a"
        " power of the corpus size joining the two; dropout is at least 0.2"
        " unless --model sets it",
    )
    steps_per_epoch: int | None = setting(
        None,
        "default: one pass over the training data, or a little less to make the"
        " default length",
    )
    checkpoint_every: int = setting(125, "steps between checkpoints", metavar="STEPS")
    seed: int = setting(0, "seed of initialisation and data order")
    init_from: str | None = setting(
        None,
        "fine-tune: start from the weights of this run folder or .keras model "
        "(beside its run's tokenizer.model), with its vocabulary and "
        "architecture; a fresh optimizer, a short warm-up back to the rate the "
        "source run had reached, and by default a fifth of the usual length",
        metavar="RUN_DIR|MODEL.keras",
    )
    early_stopping: int | None = setting(
        None,
        "stop after N epochs without a lower validation loss (default: never)",
        metavar="N",
    )
    shuffle_buffer: int = setting(
        20_000,
        "training pairs shuffled together: a buffer filled from the stream as it"
        " is read (about 300 bytes a pair); larger mixes a corpus that is sorted"
        " or grouped by source better, 0 reads pairs in corpus order",
        metavar="PAIRS",
    )

    def __post_init__(self):
        for name in ("tokens_per_batch", "gradient_accumulation", "checkpoint_every"):
            check_at_least(name, getattr(self, name), 1)
        check_at_least("shuffle_buffer", self.shuffle_buffer, 0)
        for name in ("epochs", "warmup_steps", "steps_per_epoch", "early_stopping"):
            if getattr(self, name) is not None:
                check_at_least(name, getattr(self, name), 1)
        check_sampling_alpha(self.sampling_alpha)
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(
                f"label_smoothing must be in [0, 1), got {self.label_smoothing}."
            )
        if not self.alignment_weight > 0:
            raise ValueError(
                f"alignment_weight must be > 0, got {self.alignment_weight}."
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
        "auto: on GPUs mixed_bfloat16 from compute capability 8.0, mixed_float16"
        " on 7.x, float32 below; without GPUs mixed_bfloat16 on a CPU with "
        "bfloat16 matmul instructions (AVX512_BF16, AMX), float32 elsewhere",
        choices=PRECISIONS,
    )
    strategy: str = setting(
        "default",
        "default: all local GPUs if several (one device with "
        "--gradient-accumulation), else one device; mirrored: all local GPUs; "
        "multi_worker: the hosts in TF_CONFIG (run the same command on each)",
        choices=STRATEGIES,
    )
    logical_cpus: int = setting(
        0, "with --strategy mirrored: N replicas on logical CPU devices", metavar="N"
    )
    jit_compile: str = setting(
        "auto",
        "XLA for the training step; auto: on when training on one GPU, off on "
        "CPUs and with several replicas (Keras's own choice)",
        choices=JIT_COMPILE,
    )

    def __post_init__(self):
        check_precision(self.precision)
        check_strategy(self.strategy, self.logical_cpus)
        check_jit_compile(self.jit_compile)


@dataclasses.dataclass(frozen=True)
class EvaluationSection:
    """Checkpoint averaging and decoding, for the scores and the export.

    `beam_size` and `alpha` are the recipe's decoding defaults: `export`,
    `average`, `evaluate` and `translate` fall back to them through
    `decoding_settings` when neither the command nor a run or export says.
    Alpha is `decoding_defaults.RECIPE_ALPHA` (1.0), not the library's
    paper value 0.6: measured better on the recipe's runs (the module says
    why). `scoring` is how the run's beam search scores and stops: the test
    score, `evaluate` and the exports of the run search with it.
    """

    average_last: int = setting(
        1,
        "average the last N checkpoints at the end (1: the final weights)",
        metavar="N",
    )
    beam_size: int = setting(
        decoding_defaults.BEAM_SIZE, "beams for the test score and the export"
    )
    alpha: float = setting(
        decoding_defaults.RECIPE_ALPHA,
        "length-penalty exponent of beam search (the library's is the paper's "
        "0.6; 1.0 scored better on this recipe's runs)",
    )
    scoring: str = setting(
        decoding_defaults.SCORING,
        "how beam search scores and stops: gnmt (the paper's length penalty) "
        "or transformers (Hugging Face's, for imported OPUS-MT models)",
        choices=SCORINGS,
    )
    bleu_sample: int | str = setting(
        100,
        "validation sentences scored (greedy) after each epoch: N, 0 for none, or all",
        metavar="N|all",
    )
    test_sample: int | str = setting(
        ALL, "test sentences scored: the first N, or all", metavar="N|all"
    )
    samples: int = setting(5, "test translations printed at the end")
    export_weights: str = setting(
        "best",
        "the weights saved as model.keras, scored and exported when not "
        "averaged: best (the epoch of the lowest validation loss) or last",
        choices=EXPORT_WEIGHTS,
    )

    def __post_init__(self):
        check_at_least("average_last", self.average_last, 1)
        if self.export_weights not in EXPORT_WEIGHTS:
            raise ValueError(
                f"export_weights must be one of {EXPORT_WEIGHTS}, got "
                f"{self.export_weights!r}."
            )
        check_at_least("beam_size", self.beam_size, 1)
        check_scoring(self.scoring)
        check_at_least("samples", self.samples, 0)
        check_sample("bleu_sample", self.bleu_sample, 0)
        check_sample("test_sample", self.test_sample, 1)


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


def check_at_least(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")


def check_sample(name, value, minimum):
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
