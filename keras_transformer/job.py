"""The end-to-end translation job: corpus -> tokenizer -> fit -> BLEU -> export.

`run_translation_job(TranslationJob(...))` is what `keras-transformer train`
and `examples/train_translation.py` run. Everything it writes goes under
`output_dir` (tokenizer, `model_config.json`, `schedule.json`, checkpoints,
TensorBoard logs, `history.csv`, the final `.keras` model, `results.json`)
and the exported SavedModel under
`export_dir/export_name/<version>/`.

Training resumes where it stopped: rerunning the same command restores the
newest readable checkpoint (weights, optimizer slots, step counter and so
the learning-rate schedule) and continues the same data stream from the
next batch.
"""

import dataclasses
import importlib.util
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time

import keras
import tensorflow as tf
import tqdm

from keras_transformer.data import (
    SubwordTokenizer,
    dataset_to_lists,
    load_parallel_files,
    load_translation_corpus,
    make_dataset,
    mix_pairs,
    train_tokenizer,
)
from keras_transformer.data.corpora import DING_ALIASES
from keras_transformer.data.pipeline import check_fraction
from keras_transformer.data.tokenizer import check_sampling_alpha
from keras_transformer.evaluation import (
    BleuCallback,
    check_bleu_language,
    corpus_scores,
)
from keras_transformer.export import Translator, export_translator
from keras_transformer.models import TransformerConfig, build_transformer
from keras_transformer.plots import AttentionImages
from keras_transformer.training import (
    PRECISIONS,
    STRATEGIES,
    LabelSmoothedCrossEntropy,
    MaskedAccuracy,
    check_precision,
    check_strategy,
    global_dtype_policy,
    make_strategy,
    resolve_precision,
    transformer_optimizer,
    worker_directory,
)
from keras_transformer.training.checkpoints import (
    CheckpointCallback,
    TrainingCheckpoints,
    TrainingInterrupted,
    average_checkpoints,
)
from keras_transformer.training.duration import (
    TimeEstimate,
    default_epochs,
    default_warmup_steps,
)

PRESETS = ("tiny", "small", "base", "big")
# The recipe, the same in every precision (docs/experiments.md, "One recipe
# in every precision"): dropout at least 0.2 unless `model` sets it.
MIN_DROPOUT = 0.2
# Settings that only change what happens after training or where files go.
_NOT_TRAINING_SETTINGS = frozenset(
    ("average_last", "beam_size", "alpha", "bleu_sample", "test_sample", "samples")
    + ("output_dir", "export_dir", "export_name", "export_precision", "overwrite")
)
# Settings a run's data and vocabulary follow: a run folder resumes only with
# the same ones.
_DATA_SETTINGS = (
    "corpus",
    "source_language",
    "target_language",
    "train_files",
    "valid_files",
    "test_files",
    "extra_train_split",
    "vocab_size",
)


# The option groups of `keras-transformer train`, in the order of its --help.
_DATA, _TRAINING, _OUTPUT = "data", "model and training", "evaluation and output"


def _option(group, default, **argparse):
    """A `TranslationJob` field with its `keras-transformer train` option.

    The option goes to `group` of the --help; `argparse` holds what
    `add_argument` takes besides the name, type and default: `help`,
    `metavar` or `choices`.
    """
    return dataclasses.field(default=default, metadata={"group": group, **argparse})


@dataclasses.dataclass
class TranslationJob:
    """Everything the translation job needs to know; every field has a default.

    Data:
        corpus: "ding" (offline German-English), a TFDS translation dataset
            such as "wmt14_translate/de-en", or "files" for `train_files`;
            None: "files" when files are given, else "ding".
        source_language, target_language: language codes: which pair of a
            TFDS dataset (its own by default; Ding's: "de", "en"), and for
            your files, optional, the name of `output_dir` and the
            target's sacreBLEU tokenizer ("zh" for Chinese; 13a otherwise).
        train_files: your training pairs: (source file, target file) with
            one sentence per line, or (TSV file,).
        valid_files, test_files: your validation and test pairs, the same
            way; a split without files is held out from `train_files`
            (`held_out_fraction`: 5% of the sources, at most about 2,000
            pairs, by a hash of the source sentence).
        extra_train_split: a TFDS split added to the training data only,
            e.g. Ding's "phrases"; "" for none.
        extra_train_fraction: the share of training examples drawn from
            `extra_train_split` (see `mix_pairs`); None: all of it, once
            per pass, like TFDS's "train+phrases".
        data_dir: TFDS data folder (TFDS's default when None).
        vocab_size: size of the shared SentencePiece vocabulary.
        max_length: the most tokens in a source and in a target.
        tokens_per_batch: the token budget of a batch.
        sampling_alpha: train on sampled subword segmentations, a new one on
            every pass (subword regularisation; see
            `SubwordTokenizer.sampling`); None for the most likely one.
            SentencePiece draws the samples with its own random generator,
            so after a resume the batches (their segmentations, and so which
            length bucket a pair falls in) differ from an uninterrupted
            run's.
        bidirectional: also train target-to-source on every training pair
            (one model, one shared vocabulary, for both directions; the
            language of the input says which way to translate).
        gradient_accumulation: batches whose mean gradient makes one update
            (Keras's `gradient_accumulation_steps`): an effective batch of
            `gradient_accumulation * tokens_per_batch` tokens, e.g. the
            paper's 25k on a small machine. Warm-up counts updates; epochs,
            checkpoints and reported steps count batches. One device only
            (`strategy` "default": keras-team/keras#20582).
    Model and training:
        preset: "tiny", "small", "base" or "big"; `model` overrides fields.
        model: `TransformerConfig` field overrides, e.g. {"dropout": 0.2}.
        warmup_steps: warm-up of the learning-rate schedule; None: 400
            updates, or a fifth of the run's if fewer
            (`default_warmup_steps`).
        learning_rate_scale: factor on the warm-up schedule.
        weight_decay: decoupled weight decay of the kernels and embeddings
            (see `transformer_optimizer`); 0 for none.
        cooldown_fraction: the learning rate falls linearly to 0 over this
            share of the run's updates, at its end (see
            `TransformerSchedule`); 0 for the paper's schedule.
        epochs: training epochs; None: passes over the data, as many as
            the corpus size calls for (`default_epochs`: 15 over Ding's 150
            batches, 2,250 updates; more passes over a smaller corpus, to
            the same updates; 15 * sqrt(150 / B) over B > 150 batches). In
            every precision, the model's dropout is
            at least `MIN_DROPOUT` (0.2) unless `model` sets it (see
            `model_config`).
        steps_per_epoch: steps per epoch; one pass over the data when None
            (with `epochs` None, the epochs then make the same updates).
        checkpoint_every: steps between checkpoints (also at epoch ends).
        average_last: average the last N checkpoints at the end; 1 keeps
            the final weights (after the cool-down to a learning rate of 0,
            averaging scored lower).
        precision: "auto" (`resolve_precision`: mixed_bfloat16 on a CPU with
            bfloat16 matmul instructions and no GPU, float32 elsewhere),
            "float32", "mixed_float16" or "mixed_bfloat16".
        strategy: "default" (one device), "mirrored" (the local GPUs) or
            "multi_worker" (the hosts in `TF_CONFIG`; `output_dir` must be
            storage they share); see `make_strategy`. `tokens_per_batch` is
            the global batch, split across the replicas.
        logical_cpus: with "mirrored", split the CPU into this many devices
            (several replicas without GPUs, for tests); 0: the GPUs.
        seed: seed of initialisation and data order.
    Evaluation and export:
        beam_size, alpha: beam search for the test BLEU and the export.
        bleu_sample: validation sentences scored (greedy) after each epoch.
        test_sample: score only the first N test sentences (all when None).
        samples: test translations printed at the end.
        output_dir: where the run's files go; None: "runs/" and the name
            of the data (`default_output_dir`). A run there resumes if its
            data and vocabulary settings are the same (else a ValueError);
            a finished one returns its saved results.
        overwrite: delete a run in `output_dir` and start over.
        export_dir, export_name: the SavedModel goes to
            `export_dir/export_name/<version>/`; no export when empty.
        export_precision: what the exported model computes in, a
            `precision` name ("auto" as above); float32 by default, whatever
            the run trained in.
    """

    corpus: str | None = _option(
        _DATA,
        None,
        help='"ding" (offline de-en, the default without files), a TFDS dataset '
        'such as "wmt14_translate/de-en", or "files" (implied by --train-files)',
    )
    source_language: str | None = _option(
        _DATA, None, help="Ding: de; a TFDS dataset: its own; files: for names only"
    )
    target_language: str | None = _option(
        _DATA, None, help="Ding: en; files: optional (zh picks sacreBLEU's tok:zh)"
    )
    train_files: tuple = _option(
        _DATA,
        (),
        metavar="FILE",
        help="your training pairs: SOURCE TARGET (a sentence per line) or one TSV",
    )
    valid_files: tuple = _option(
        _DATA,
        (),
        metavar="FILE",
        help="validation pairs, the same way (default: 5%% of the training "
        "sources held out by a hash, at most about 2,000 pairs)",
    )
    test_files: tuple = _option(
        _DATA,
        (),
        metavar="FILE",
        help="test pairs, the same way (default: held out as for validation)",
    )
    extra_train_split: str = _option(
        _DATA, "", help='TFDS split added to training only ("" for none)'
    )
    extra_train_fraction: float | None = _option(
        _DATA,
        None,
        help="share of training examples drawn from --extra-train-split "
        "(default: all of it, once per pass)",
    )
    data_dir: str | None = _option(_DATA, None, help="TFDS data folder")
    vocab_size: int = _option(_DATA, 8000)
    max_length: int = _option(_DATA, 64)
    tokens_per_batch: int = _option(_DATA, 2048)
    sampling_alpha: float | None = _option(
        _DATA,
        None,
        help="train on sampled subword segmentations (subword regularisation)",
    )
    bidirectional: bool = _option(
        _DATA, False, help="also train target-to-source on the training pairs"
    )
    gradient_accumulation: int = _option(
        _DATA,
        1,
        metavar="K",
        help="batches per update (effective batch: K x tokens-per-batch)",
    )
    preset: str = _option(_TRAINING, "small", choices=PRESETS)
    model: dict = dataclasses.field(
        default_factory=dict,
        metadata={
            "group": _TRAINING,
            "metavar": "JSON",
            "help": "TransformerConfig overrides, e.g. '{\"dropout\": 0.2}'",
        },
    )
    warmup_steps: int | None = _option(
        _TRAINING, None, help="default: 400, or a fifth of the updates if fewer"
    )
    learning_rate_scale: float = _option(_TRAINING, 1.0)
    weight_decay: float = _option(
        _TRAINING,
        1.0,
        help="decoupled weight decay (AdamW) of kernels and embeddings",
    )
    cooldown_fraction: float = _option(
        _TRAINING,
        1 / 3,
        metavar="F",
        help="the learning rate falls linearly to 0 over the last share F of the "
        "updates (0: the paper's schedule)",
    )
    epochs: int | None = _option(
        _TRAINING,
        None,
        help="default: passes over the data by corpus size: 2,250 updates up to "
        "Ding's 150 batches (15 passes), 15 x sqrt(150 / B) passes over B > 150;"
        " dropout is at least 0.2 unless --model sets it",
    )
    steps_per_epoch: int | None = _option(
        _TRAINING, None, help="default: one pass over the training data"
    )
    checkpoint_every: int = _option(_TRAINING, 125, metavar="STEPS")
    average_last: int = _option(
        _TRAINING,
        1,
        metavar="N",
        help="average the last N checkpoints at the end (1: the final weights)",
    )
    precision: str = _option(
        _TRAINING,
        "auto",
        choices=PRECISIONS,
        help="auto: mixed_bfloat16 on a CPU with bfloat16 matmul instructions"
        " (AVX512_BF16, AMX) and no GPU, float32 elsewhere",
    )
    strategy: str = _option(
        _TRAINING,
        "default",
        choices=STRATEGIES,
        help="default: one device; mirrored: all local GPUs; multi_worker: "
        "the hosts in TF_CONFIG (run the same command on each)",
    )
    logical_cpus: int = _option(
        _TRAINING,
        0,
        metavar="N",
        help="with --strategy mirrored: N replicas on logical CPU devices",
    )
    seed: int = _option(_TRAINING, 0)
    beam_size: int = _option(_OUTPUT, 4)
    alpha: float = _option(_OUTPUT, 1.0)
    bleu_sample: int = _option(_OUTPUT, 100)
    test_sample: int | None = _option(
        _OUTPUT, None, metavar="N", help="score only the first N test sentences"
    )
    samples: int = _option(_OUTPUT, 5)
    output_dir: str | None = _option(
        _OUTPUT, None, help="default: runs/ and the data's name, e.g. runs/ding-de-en"
    )
    export_dir: str = _option(_OUTPUT, "saved_models")
    export_name: str = _option(_OUTPUT, "translator")
    overwrite: bool = _option(
        _OUTPUT,
        False,
        help="start over in --output-dir, deleting the run there (by default a"
        " run resumes; one of other data is refused)",
    )
    export_precision: str = _option(
        _OUTPUT,
        "float32",
        choices=PRECISIONS,
        help="what the export computes in (default: float32, whatever the run "
        "trained in)",
    )

    def __post_init__(self):
        # lists from JSON or argparse
        self.train_files = tuple(self.train_files)
        self.valid_files = tuple(self.valid_files)
        self.test_files = tuple(self.test_files)
        self._resolve_data()
        if self.output_dir is None:
            self.output_dir = default_output_dir(self)
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {PRESETS}, got {self.preset!r}.")
        check_strategy(self.strategy, self.logical_cpus)
        check_precision(self.precision)
        check_precision(self.export_precision)
        for name in (
            "epochs",
            "warmup_steps",
            "checkpoint_every",
            "average_last",
            "beam_size",
            "gradient_accumulation",
        ):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.gradient_accumulation > 1 and self.strategy != "default":
            raise ValueError(
                "gradient_accumulation (--gradient-accumulation) works on one "
                f"device only, not with strategy {self.strategy!r}: Keras's "
                "accumulation fails under tf.distribute (keras-team/keras#20582)."
                " Raise tokens_per_batch instead."
            )
        if self.extra_train_fraction is not None:
            if not self.extra_train_split:
                raise ValueError("extra_train_fraction needs an extra_train_split.")
            check_fraction("extra_train_fraction", self.extra_train_fraction)
        check_sampling_alpha(self.sampling_alpha)
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}.")
        if not 0.0 <= self.cooldown_fraction <= 1.0:
            raise ValueError(
                f"cooldown_fraction must be in [0, 1], got {self.cooldown_fraction}."
            )
        check_bleu_language(self.target_language)
        self.model_config(self.vocab_size, 1)  # `model`'s overrides checked now

    def _resolve_data(self):
        """Settles `corpus` and Ding's languages; checks the files options."""
        files = {
            "train_files": self.train_files,
            "valid_files": self.valid_files,
            "test_files": self.test_files,
        }
        given = [name for name, paths in files.items() if paths]
        if self.corpus is None:
            self.corpus = "files" if given else "ding"
        if self.corpus != "files":
            if given:
                raise ValueError(
                    f"{', '.join(given)} read your own files, but corpus is "
                    f"{self.corpus!r}: leave corpus out (--corpus) or pass 'files'."
                )
        else:
            if not self.train_files:
                raise ValueError(
                    "corpus 'files' needs train_files (--train-files SOURCE TARGET,"
                    " or one TSV file)."
                )
            for name, paths in files.items():
                if len(paths) > 2:
                    raise ValueError(
                        f"{name} takes SOURCE TARGET or one TSV file, got "
                        f"{len(paths)} files: {' '.join(paths)}."
                    )
            if self.extra_train_split:
                raise ValueError(
                    "extra_train_split is a split of a TFDS corpus; with your "
                    "files, add its pairs to the training files instead."
                )
        if self.corpus.lower() in DING_ALIASES:  # German-English by default
            other = {"de": "en", "en": "de"}
            if self.source_language is None:
                self.source_language = other.get(self.target_language, "de")
            if self.target_language is None:
                self.target_language = other.get(self.source_language, "en")

    def training_length(self, batches_per_pass):
        """`(epochs, steps_per_epoch)` on a corpus of `batches_per_pass` batches.

        Each is the job's own, or by default one pass over the data, and as
        many epochs as make `default_epochs` passes.

        Example:

        >>> TranslationJob().training_length(150)
        (15, 150)
        >>> TranslationJob(steps_per_epoch=125).training_length(150)
        (18, 125)
        >>> TranslationJob(epochs=2).training_length(600)
        (2, 600)
        """
        steps_per_epoch = self.steps_per_epoch or batches_per_pass
        passes = default_epochs(batches_per_pass)
        epochs = self.epochs or max(
            1, round(passes * batches_per_pass / steps_per_epoch)
        )
        return epochs, steps_per_epoch

    def model_config(self, vocab_size, warmup_steps):
        """The job's `TransformerConfig`: its preset with dropout at least
        `MIN_DROPOUT`, then the `model` overrides.

        Example:

        Args:
            vocab_size: the tokenizer's.
            warmup_steps: the run's, when the job's `warmup_steps` is None.

        Example:

        >>> TranslationJob().model_config(100, 400).dropout
        0.2
        >>> TranslationJob(preset="big").model_config(100, 400).dropout
        0.3
        >>> TranslationJob(model={"dropout": 0.1}).model_config(100, 400).dropout
        0.1
        """
        preset = getattr(TransformerConfig, self.preset)(
            vocab_size,
            max_length=self.max_length,
            warmup_steps=self.warmup_steps or warmup_steps,
        )
        return preset.replace(
            **{"dropout": max(preset.dropout, MIN_DROPOUT), **self.model}
        )

    def dtype_policy(self):
        """The Keras dtype policy the run trains in: `precision`, "auto" resolved.

        Example:

        >>> TranslationJob(precision="mixed_float16").dtype_policy()
        'mixed_float16'
        """
        return resolve_precision(self.precision)


def load_splits(job, log=None):
    """The job's corpus as {"train", "validation", "test"} datasets of pairs.

    With `log`, says which splits of your files were held out, and how.
    """
    if job.corpus == "files":
        splits, held_out = load_parallel_files(
            job.train_files, job.valid_files, job.test_files
        )
        if held_out and log:
            log(
                f"Held out {' and '.join(held_out)} from {' '.join(job.train_files)}:"
                f" {max(held_out.values()):.1%} of the sources each, by a hash of"
                " the source sentence (give --valid-files / --test-files for your own)."
            )
    else:
        splits = _load_named_corpus(job)
    if job.bidirectional:
        splits["train"] = splits["train"].flat_map(both_directions)
    return splits


def default_output_dir(job):
    """runs/ and the name of the job's data, e.g. "runs/ding-de-en".

    The name is the corpus's, or the folder and name of the first training
    file, followed by the languages when they are known.

    Example:

    >>> default_output_dir(TranslationJob())
    'runs/ding-de-en'
    >>> job = TranslationJob(train_files=("data/train.fr", "data/train.en"))
    >>> default_output_dir(job)
    'runs/data-train'
    >>> default_output_dir(TranslationJob(corpus="ted_hrlr_translate/pt_to_en"))
    'runs/ted_hrlr_translate-pt_to_en'
    """
    if job.corpus == "files":
        path = os.path.abspath(job.train_files[0])
        folder = os.path.basename(os.path.dirname(path))
        stem = os.path.splitext(os.path.basename(path))[0]
        name = f"{folder}-{stem}" if folder else stem
    else:
        name = job.corpus.replace("/", "-")
    languages = "-".join(
        code for code in (job.source_language, job.target_language) if code
    )
    if languages and not name.endswith(languages):
        name = f"{name}-{languages}"
    return os.path.join("runs", re.sub(r"[^\w.-]+", "_", name))


def _load_named_corpus(job):
    extra = job.extra_train_split
    mixed = bool(extra) and job.extra_train_fraction is not None
    train = f"train+{extra}" if extra and not mixed else "train"
    splits = load_translation_corpus(
        job.corpus,
        job.source_language,
        job.target_language,
        splits=(train, "validation", "test") + ((extra,) if mixed else ()),
        data_dir=job.data_dir,
        download=job.corpus != "ding",
    )
    if mixed:
        splits[train] = mix_pairs(
            splits[train], splits[extra], job.extra_train_fraction, job.seed
        )
    return {
        "train": splits[train],
        "validation": splits["validation"],
        "test": splits["test"],
    }


def both_directions(source, target):
    """A pair and its reverse, `(source, target)` then `(target, source)`."""
    return tf.data.Dataset.from_tensor_slices(
        (tf.stack([source, target]), tf.stack([target, source]))
    )


def translate_texts(function, texts, batch_size=64, progress=None):
    """Runs a `Translator` signature over `texts` in batches; returns `str`s.

    With a `progress` description and stderr a terminal, a progress bar
    counts the sentences there.
    """
    translations = []
    with tqdm.tqdm(
        total=len(texts),
        desc=progress,
        unit="sentence",
        disable=progress is None or not sys.stderr.isatty(),
    ) as bar:
        for start in range(0, len(texts), batch_size):
            batch = tf.constant(texts[start : start + batch_size])
            translations += [
                t.decode("utf-8") for t in function(batch)["translation"].numpy()
            ]
            bar.update(len(batch))
    return translations


def run_translation_job(job, log=print):
    """Runs the whole job; returns the results dict also written to results.json.

    Under the "multi_worker" strategy every host runs the same `job`: the
    chief writes `output_dir` and `export_dir`, the other workers write
    their copies below `<dir>/workers/` (`worker_directory`), and all of
    them resume from the chief's checkpoints.
    """
    started = time.time()
    strategy = make_strategy(job.strategy, job.logical_cpus)  # before TF starts
    chief_checkpoints = os.path.join(job.output_dir, "checkpoints")
    job = dataclasses.replace(
        job,
        output_dir=worker_directory(strategy, job.output_dir),
        export_dir=job.export_dir and worker_directory(strategy, job.export_dir),
    )
    for folder in (job.output_dir, job.export_dir):
        if folder:
            check_writable(folder)
    splits = load_splits(job, log)  # bad data fails here, the run folder unused
    previous_results = _previous_run(job, log)
    if previous_results is not None:
        return previous_results
    changed = changed_training_settings(job.output_dir, job)
    with open(os.path.join(job.output_dir, "job.json"), "w") as file:
        json.dump(dataclasses.asdict(job), file, indent=2)  # for `evaluate_run`
    keras.utils.set_random_seed(job.seed)
    with global_dtype_policy(job.dtype_policy()):
        return _train_evaluate_export(
            job, splits, strategy, chief_checkpoints, changed, started, log
        )


def _train_evaluate_export(
    job, splits, strategy, chief_checkpoints, changed, started, log
):
    """`run_translation_job` after its set-up, under the run's dtype policy."""
    validation_sources, validation_targets = dataset_to_lists(splits["validation"])
    test_sources, test_targets = dataset_to_lists(
        splits["test"].take(job.test_sample or -1)
    )
    tokenizer = _tokenizer(job, splits["train"], log)

    def batches(pairs, **kwargs):
        return make_dataset(
            pairs,
            tokenizer,
            max_length=job.max_length,
            tokens_per_batch=job.tokens_per_batch,
            batch_multiple=strategy.num_replicas_in_sync,
            **kwargs,
        )

    batches_per_pass = _count(batches(splits["train"], shuffle_buffer=0))
    epochs, steps_per_epoch = job.training_length(batches_per_pass)
    total_steps = epochs * steps_per_epoch
    updates = total_steps // job.gradient_accumulation
    cooldown_steps = round(job.cooldown_fraction * updates)
    config = job.model_config(tokenizer.vocab_size, default_warmup_steps(updates))
    with open(os.path.join(job.output_dir, "model_config.json"), "w") as file:
        json.dump(config.to_dict(), file, indent=2)  # for `keras-transformer average`
    with strategy.scope():  # variables, optimizer slots and metrics mirrored
        model = build_transformer(config)
        model.compile(
            optimizer=transformer_optimizer(
                config.d_model,
                config.warmup_steps,
                job.learning_rate_scale,
                gradient_accumulation_steps=job.gradient_accumulation,
                cooldown_steps=cooldown_steps,
                total_steps=updates,
                weight_decay=job.weight_decay or None,
            ),
            loss=LabelSmoothedCrossEntropy(config.label_smoothing),
            metrics=[MaskedAccuracy()],
        )
        schedule = model.optimizer.get_config()["learning_rate"]["config"]
        with open(os.path.join(job.output_dir, "schedule.json"), "w") as file:
            json.dump(schedule, file, indent=2)  # for `keras-transformer plot`
        checkpoints = TrainingCheckpoints(
            model,
            os.path.join(job.output_dir, "checkpoints"),
            max_to_keep=max(job.average_last, 2),
        )
        if checkpoints.manager.directory == chief_checkpoints:
            step = checkpoints.restore()
        else:  # a worker other than the chief starts where the chief does
            step = TrainingCheckpoints(model, chief_checkpoints).restore()
    log(
        f"Data: {_count(splits['train']):,} training pairs"
        f"{' (both directions)' if job.bidirectional else ''}, "
        f"{len(validation_sources):,} validation, {len(test_sources):,} test; "
        f"vocabulary: {tokenizer.vocab_size:,} pieces; {batches_per_pass:,} "
        f"batches of up to {job.tokens_per_batch:,} tokens a pass\n"
        f"Model: {model.count_params():,} parameters, {config}\n"
        f"Training: {epochs} epochs of {steps_per_epoch} steps"
        + (
            ""
            if job.epochs or job.steps_per_epoch
            else f" (passes over the data, the default for {batches_per_pass} batches)"
        )
        + f", {updates:,} updates, warm-up {config.warmup_steps}, cool-down over"
        f" the last {cooldown_steps:,}; "
        f"{strategy.num_replicas_in_sync} replica(s), "
        f"{keras.mixed_precision.global_policy().name}"
        + (f", resuming at step {step}" if step else "")
    )
    if step and changed:
        log(
            "Warning: resuming with training settings changed since the run"
            f" started ({', '.join(changed)}). Training goes on with the new"
            " ones; the learning-rate schedule follows the new epochs and steps."
        )
    translator = Translator(model, tokenizer, job.beam_size, job.alpha)
    saver = CheckpointCallback(checkpoints, job.checkpoint_every)
    callbacks = [
        saver,
        keras.callbacks.TerminateOnNaN(),
        BleuCallback(
            lambda texts: translate_texts(translator.greedy, texts),
            validation_sources[: job.bleu_sample],
            validation_targets[: job.bleu_sample],
            target_language=job.target_language,
        ),
        keras.callbacks.CSVLogger(
            os.path.join(job.output_dir, "history.csv"), append=True
        ),
        keras.callbacks.TensorBoard(os.path.join(job.output_dir, "logs")),
        TimeEstimate(total_steps - step, log),
    ]
    if importlib.util.find_spec("matplotlib"):
        callbacks.append(
            AttentionImages(
                translator.attention,
                [text for text in validation_sources if len(text) <= 60][:3],
                os.path.join(job.output_dir, "logs", "attention"),
            )
        )
    else:
        log(
            "TensorBoard attention images need matplotlib, left out: "
            'pip install -e ".[plots]" adds it.'
        )
    stream = batches(
        splits["train"], repeat=True, seed=job.seed, sampling_alpha=job.sampling_alpha
    )
    validation = batches(splits["validation"], shuffle_buffer=0)
    validation = validation.apply(
        tf.data.experimental.assert_cardinality(_count(validation))
    )
    fit_started, fit_cpu_started = time.time(), time.process_time()
    history = _fit_from(
        model, stream, validation, step, total_steps, steps_per_epoch, callbacks
    )
    fit_seconds = time.time() - fit_started
    fit_cpu_seconds = time.process_time() - fit_cpu_started
    if saver.interrupted_by:
        raise TrainingInterrupted(
            f"Stopped by {saver.interrupted_by} at step {checkpoints.step}, saved in"
            f" {checkpoints.manager.latest_checkpoint}. Rerun the same command to"
            " resume."
        )
    if saver.loss_not_finite:
        raise FloatingPointError(
            f"Training stopped near step {checkpoints.step}: the loss is not finite."
            f" The last good checkpoint is {checkpoints.manager.latest_checkpoint};"
            " lower learning_rate_scale or raise warmup_steps, then rerun to"
            " resume from it."
        )

    if job.average_last > 1 and len(checkpoints.manager.checkpoints) > 1:
        averaged = checkpoints.manager.checkpoints[-job.average_last :]
        average_checkpoints(model, averaged)
        log(f"Averaged the last {len(averaged)} checkpoints.")
    model.save(os.path.join(job.output_dir, "model.keras"))

    translations = translate_texts(
        translator.translate, test_sources, progress="Test decoding"
    )
    scores = corpus_scores(translations, test_targets, job.target_language)
    log(
        f"Test BLEU {scores['bleu']:.2f}  chrF {scores['chrf']:.2f} "
        f"(beam {job.beam_size}, alpha {job.alpha}, {len(test_sources)} sentences)\n"
        f"  {scores['bleu_signature']}\n  {scores['chrf_signature']}"
    )
    export_path = None
    if job.export_dir:
        export_path = export_translator(
            translator,
            job.export_dir,
            job.export_name,
            dtype_policy=resolve_precision(job.export_precision),
        )
        log(f"Exported the translator to {export_path}")
    for source, reference, translation in list(
        zip(test_sources, test_targets, translations, strict=True)
    )[: job.samples]:
        log(
            f"  source:      {source}\n  reference:   {reference}\n"
            f"  translation: {translation}"
        )
    results = {
        **scores,
        "test_sentences": len(test_sources),
        "steps": checkpoints.step,
        "epochs": epochs,
        "updates": updates,
        "fit_seconds": round(fit_seconds, 1),
        "fit_cpu_seconds": round(fit_cpu_seconds, 1),  # all threads of the process
        "precision": keras.mixed_precision.global_policy().name,
        "history": history,  # this run's epochs (not those before a resume)
        "total_seconds": round(time.time() - started, 1),
        "export_path": export_path,
        "job": dataclasses.asdict(job),
        "model_config": config.to_dict(),
    }
    with open(os.path.join(job.output_dir, "results.json"), "w") as file:
        json.dump(results, file, indent=2)
    return results


def check_writable(folder):
    """Creates `folder` if needed and checks that a file can be written there.

    Raises:
        OSError: naming the folder, e.g. a `PermissionError`.
    """
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as error:
        raise type(error)(
            f"Cannot write to {folder}: {error.strerror or error}."
        ) from error


def _previous_run(job, log):
    """Settles what an earlier run in `job.output_dir` means for `job`.

    With `job.overwrite`, the earlier run is deleted. A run of other data or
    vocabulary settings is a ValueError naming them. A finished run with the
    same training settings is not trained, scored or exported again: its
    saved results are returned. Otherwise (nothing there, or a run to
    resume) None.
    """
    if not os.path.exists(os.path.join(job.output_dir, "job.json")):
        return None
    if job.overwrite:
        log(f"Deleting the earlier run in {job.output_dir} (overwrite).")
        shutil.rmtree(job.output_dir)
        os.makedirs(job.output_dir)
        return None
    previous = saved_job(job.output_dir)
    differing = [
        f"{name}: {getattr(previous, name)!r} there, {getattr(job, name)!r} now"
        for name in _DATA_SETTINGS
        if getattr(previous, name) != getattr(job, name)
    ]
    if differing:
        raise ValueError(
            f"{job.output_dir} holds a run of other data or vocabulary settings "
            f"({'; '.join(differing)}). Pass --overwrite to start over there, or "
            "another --output-dir."
        )
    results_path = os.path.join(job.output_dir, "results.json")
    if os.path.exists(results_path) and not changed_training_settings(
        job.output_dir, job
    ):
        with open(results_path) as file:
            results = json.load(file)
        log(
            f"The run in {job.output_dir} is finished: test BLEU "
            f"{results['bleu']:.2f}, chrF {results['chrf']:.2f}, export "
            f"{results['export_path']}. Nothing was trained again; pass "
            "--overwrite to start over, or `keras-transformer evaluate` to rescore."
        )
        return results
    return None


def changed_training_settings(output_dir, job):
    """The training settings of `job` that differ from the run in `output_dir`.

    Compares with the `job.json` that an earlier run wrote there, ignoring
    the settings of evaluation, export and file locations.

    Returns:
        ["name: old -> new", ...]; empty when nothing changed or no run is
        there.

    Example:

    >>> changed_training_settings("no/such/run", TranslationJob())
    []
    """
    path = os.path.join(output_dir, "job.json")
    if not os.path.exists(path):
        return []
    with open(path) as file:
        previous = json.load(file)
    current = json.loads(json.dumps(dataclasses.asdict(job)))  # tuples as lists
    return [
        f"{name}: {previous[name]!r} -> {value!r}"
        for name, value in current.items()
        if name in previous
        and name not in _NOT_TRAINING_SETTINGS
        and previous[name] != value
    ]


def averaged_model(output_dir, last=None):
    """A job's model with the mean weights of its last `last` checkpoints.

    Reads what `run_translation_job` wrote to `output_dir`
    (`model_config.json`, `checkpoints/` and `job.json`), so it works on an
    interrupted run too. The model computes in the run's precision
    (float32 when `job.json` is missing and `last` is given). Only the
    checkpoints still on disk can be averaged: the job keeps
    `max(average_last, 2)` of them.

    Args:
        output_dir: the `output_dir` of a `keras-transformer train` run.
        last: average the last `last` checkpoints (1: the newest alone);
            None for the run's own `average_last`.

    Returns:
        (model, checkpoint paths averaged).
    """
    has_job = os.path.exists(os.path.join(output_dir, "job.json"))
    job = saved_job(output_dir) if has_job or last is None else None
    return _checkpoints_model(
        output_dir,
        job.average_last if last is None else last,
        job.dtype_policy() if job else "float32",
    )


def _checkpoints_model(output_dir, last, dtype_policy):
    """`averaged_model` with `last` and the run's `dtype_policy` already known."""
    config_path = os.path.join(output_dir, "model_config.json")
    if not os.path.exists(config_path):
        raise FileNotFoundError(
            f"{config_path} does not exist: {output_dir!r} is not the output_dir "
            "of a `keras-transformer train` run."
        )
    if last < 1:
        raise ValueError(f"last must be >= 1, got {last}.")
    with open(config_path) as file:
        config = TransformerConfig.from_dict(json.load(file))
    with global_dtype_policy(dtype_policy):
        model = build_transformer(config)
    directory = os.path.join(output_dir, "checkpoints")
    paths = tf.train.get_checkpoint_state(directory)
    paths = list(paths.all_model_checkpoint_paths) if paths else []
    if not paths:
        raise FileNotFoundError(f"No checkpoints in {directory}.")
    paths = paths[-last:]
    return average_checkpoints(model, paths), paths


def evaluate_run(
    output_dir, split="validation", last=None, beam_size=None, alpha=None, sample=None
):
    """BLEU and chrF of a job's averaged checkpoints on a split of its corpus.

    Reads what `run_translation_job` wrote to `output_dir` (`job.json`,
    the tokenizer, `model_config.json` and the checkpoints), so it also
    scores a run that is still training or was interrupted. By default it
    averages and decodes as the run did, so on `"test"` with the job's
    `test_sample` it repeats the job's own test score.

    Args:
        output_dir: the `output_dir` of a `keras-transformer train` run.
        split: `"validation"` or `"test"`.
        last: average the last `last` checkpoints (1: the newest alone);
            None for the run's `average_last`.
        beam_size: beams, 1 for greedy decoding; None for the run's.
        alpha: the length-penalty exponent of beam search; None for the
            run's.
        sample: score only the first `sample` sentences (all when None).

    Returns:
        `corpus_scores` of the translations (BLEU, chrF, signatures) with
        `"sentences"` and `"checkpoints"` (the paths averaged) added.
    """
    if split not in ("validation", "test"):
        raise ValueError(f"split must be 'validation' or 'test', got {split!r}.")
    job = saved_job(output_dir)
    last = job.average_last if last is None else last
    beam_size = job.beam_size if beam_size is None else beam_size
    alpha = job.alpha if alpha is None else alpha
    sources, targets = dataset_to_lists(load_splits(job)[split].take(sample or -1))
    model, paths = _checkpoints_model(output_dir, last, job.dtype_policy())
    tokenizer = SubwordTokenizer.load(tokenizer_path(output_dir))
    translator = Translator(model, tokenizer, beam_size, alpha)
    function = translator.greedy if beam_size == 1 else translator.translate
    translations = translate_texts(function, sources, progress=f"Decoding {split}")
    scores = corpus_scores(translations, targets, job.target_language)
    return {**scores, "sentences": len(sources), "checkpoints": paths}


def saved_job(output_dir):
    """The `TranslationJob` a run saved in its `output_dir` (`job.json`)."""
    job_path = os.path.join(output_dir, "job.json")
    if not os.path.exists(job_path):
        raise FileNotFoundError(
            f"{job_path} does not exist: {output_dir!r} is not the output_dir of "
            "a `keras-transformer train` run (or one older than job.json)."
        )
    with open(job_path) as file:
        return TranslationJob(**json.load(file))


def tokenizer_path(output_dir):
    """The SentencePiece model of the run in `output_dir`."""
    return os.path.join(output_dir, "tokenizer.model")


def _tokenizer(job, train_pairs, log):
    path = tokenizer_path(job.output_dir)
    if os.path.exists(path):
        return SubwordTokenizer.load(path)
    log(f"Training a {job.vocab_size}-piece SentencePiece vocabulary...")
    sources, targets = dataset_to_lists(train_pairs)
    tokenizer = train_tokenizer(sources + targets, job.vocab_size)
    tokenizer.save(path)
    return tokenizer


def _count(dataset):
    return int(dataset.reduce(0, lambda count, _: count + 1))


def _fit_from(model, stream, validation, step, total_steps, steps_per_epoch, callbacks):
    """Trains from global `step` to `total_steps`, the data stream resumed too.

    Keras epochs always start at a step that is a multiple of
    `steps_per_epoch`; after a resume mid-epoch, a first `fit` finishes the
    interrupted epoch with the remaining steps.

    Returns:
        {epoch number (from 1): {metric: value}}: the logs of the epochs
        this call trained (loss, accuracy, validation loss and BLEU).
    """
    epochs = math.ceil(total_steps / steps_per_epoch)
    epoch, offset = divmod(step, steps_per_epoch)
    segments = []
    if offset:
        segments.append((epoch, epoch + 1, steps_per_epoch - offset))
        epoch += 1
    if epoch < epochs:
        segments.append((epoch, epochs, steps_per_epoch))
    history = {}
    for first_epoch, end_epoch, steps in segments:
        fitted = model.fit(
            stream.skip(step),
            validation_data=validation,
            initial_epoch=first_epoch,
            epochs=end_epoch,
            steps_per_epoch=steps,
            callbacks=callbacks,
            verbose=1 if sys.stdout.isatty() else 2,
        )
        for index, epoch in enumerate(fitted.epoch):  # a keras.callbacks.History
            history[epoch + 1] = {
                name: round(float(values[index]), 4)
                for name, values in fitted.history.items()
            }
        if model.stop_training:
            break
        step = end_epoch * steps_per_epoch
    return history
