"""A run's data: its splits, its vocabulary and its batches."""

import dataclasses
import os
import shutil
import time

import tensorflow as tf

from keras_transformer.data import (
    SubwordTokenizer,
    dataset_to_lists,
    load_parallel_files,
    load_translation_corpus,
    make_dataset,
    mix_pairs,
    pairs_to_dataset,
    train_tokenizer,
)
from keras_transformer.data.corpus_scan import SAMPLE_PAIRS, CorpusScan
from keras_transformer.data.eflomal_alignment import align_corpus, check_eflomal
from keras_transformer.data.file_stream import stream_pairs
from keras_transformer.data.pipeline import batches_in_pass
from keras_transformer.data.tokenizer import (
    SAMPLED_THREADS,
    load_tokenizer,
    vocabulary_size,
)
from keras_transformer.recipe.config import sample_size
from keras_transformer.recipe.data_section import EFLOMAL
from keras_transformer.recipe.run_directory import atomic_path


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A run's corpus: its splits, and the training pairs that stand for all.

    `sample` is the text the vocabulary is trained on and the batches of a
    pass are estimated from: all the training pairs when there are at most
    `SAMPLE_PAIRS` (`sampled` False), else a sample of that many.
    """

    splits: dict  # "train", "validation", "test": datasets of (source, target)
    training_pairs: int  # in a pass, each direction counted
    sample: tf.data.Dataset
    sampled: bool
    files_scan: CorpusScan | None = None  # of your files; None for a named corpus

    def sample_scale(self):
        """How many times more training pairs there are than in the sample."""
        return self.training_pairs / count(self.sample) if self.sampled else 1.0

    def with_alignments(self, path):
        """This corpus of your files with its training pairs streamed beside
        the word alignments of `path`, a line per line of the files."""
        train = stream_pairs(self.files_scan, alignments=path)
        return dataclasses.replace(self, splits={**self.splits, "train": train})


def load_splits(data, seed=0, log=None):
    """The data section's `Corpus`: its {"train", "validation", "test"}
    datasets of (source, target) string pairs, and what stands for training.

    Your files are read once here, as a stream, to check them (bad files fail
    here, before anything is written), to hold out the splits not given and
    to sample training; with `log`, says what was held out or left out.
    """
    if data.is_files:
        corpus = _file_corpus(data, seed, log or (lambda line: None))
    else:
        corpus = _named_corpus(data, seed)
    if not data.bidirectional:
        return corpus
    return dataclasses.replace(
        corpus,
        splits={**corpus.splits, "train": both_ways(corpus.splits["train"])},
        training_pairs=2 * corpus.training_pairs,
        sample=both_ways(corpus.sample),
    )


def _file_corpus(data, seed, log):
    if data.train_alignments == EFLOMAL:  # before the files are read
        check_eflomal()
    splits, scan = load_parallel_files(
        data.train_files,
        data.valid_files,
        data.test_files,
        sample_size=SAMPLE_PAIRS,
        seed=seed,
        log=log,
        alignments=data.alignment_file,
    )
    files = " ".join(data.train_files)
    if scan.fractions:
        log(
            f"Held out {' and '.join(scan.fractions)} from {files}: "
            f"{max(scan.fractions.values()) * 100:.2g}% of the sources each, by a"
            " hash of the source sentence (give --valid-files / --test-files for"
            " your own)."
        )
    if scan.dropped:
        log(f"Left out the pairs of {files} with an empty side: {scan.dropped:,}.")
    return Corpus(
        splits, scan.training_pairs, pairs_to_dataset(scan.sample), scan.sampled, scan
    )


def _named_corpus(data, seed):
    extra = data.extra_train_split
    mixed = bool(extra) and data.extra_train_fraction is not None
    train = f"train+{extra}" if extra and not mixed else "train"
    training = (train,) + ((extra,) if mixed else ())

    def load(splits, shuffle_seed=None):
        return load_translation_corpus(
            data.corpus,
            data.source_language,
            data.target_language,
            splits=splits,
            data_dir=data.data_dir,
            download=data.corpus != "ding",
            shuffle_seed=shuffle_seed,
        )

    splits = {**load(training, shuffle_seed=seed), **load(("validation", "test"))}
    if mixed:
        splits[train] = mix_pairs(
            splits[train], splits[extra], data.extra_train_fraction, seed
        )
    pairs = splits[train]
    size = int(pairs.cardinality())
    size = size if size >= 0 else count(pairs)  # a mixed pass is drawn: counted
    return Corpus(
        splits={
            "train": pairs,
            "validation": splits["validation"],
            "test": splits["test"],
        },
        training_pairs=size,
        sample=pairs.take(SAMPLE_PAIRS),
        sampled=size > SAMPLE_PAIRS,
    )


def align_training_pairs(config, corpus, run_dir, log):
    """`corpus` with eflomal's alignments of its training pairs, for a run
    whose `train_alignments` is "eflomal"; made once, into the run folder.

    Each worker of a multi-worker run aligns in its own folder.
    """
    data = config.data
    if data.train_alignments != EFLOMAL:
        return corpus
    if not os.path.exists(run_dir.alignments):
        (files,) = corpus.files_scan.corpora
        log(f"Aligning the pairs of {' '.join(files)} with eflomal...")
        started = time.time()
        with atomic_path(run_dir.alignments) as partial:
            links = align_corpus(files, partial)
        log(
            f"{links:,} links (both directions' intersection) in "
            f"{time.time() - started:.0f} s, in {run_dir.alignments}."
        )
    return corpus.with_alignments(run_dir.alignments)


def both_ways(pairs):
    """Each pair of `pairs`, then its reverse."""
    return pairs.flat_map(both_directions)


def both_directions(source, target):
    """A pair and its reverse, `(source, target)` then `(target, source)`."""
    return tf.data.Dataset.from_tensor_slices(
        (tf.stack([source, target]), tf.stack([target, source]))
    )


@dataclasses.dataclass(frozen=True)
class RunData:
    """What a run reads: the corpus, the held-out text, the vocabulary."""

    corpus: Corpus
    validation: tuple  # (sources, targets), lists of str
    test: tuple  # the first `test_sample` test pairs
    tokenizer: SubwordTokenizer

    @property
    def splits(self):
        return self.corpus.splits

    def batches(self, pairs, config, replicas, **kwargs):
        """`make_dataset` batches of `pairs` with the run's settings; of a
        guided alignment run, pairs without alignments have none to learn."""
        if config.data.guided_alignment and len(pairs.element_spec) == 2:
            pairs = pairs.map(lambda source, target: (source, target, ""))
        return make_dataset(
            pairs,
            self.tokenizer,
            max_length=config.model.max_length,
            tokens_per_batch=config.training.tokens_per_batch,
            batch_multiple=replicas,
            **kwargs,
        )

    def training_stream(self, config, replicas, step=0):
        """The training batches, repeated, shuffled and sampled as configured.

        A stream for a run resumed at `step` is shuffled with a seed of its
        own, drawn from the run's seed and the step, instead of reading the
        run's stream again up to the step: a resumed run starts a new pass,
        in an order of its own that is the same on every rerun.
        """
        training = config.training
        seed = (
            training.seed if step == 0 else (training.seed * 1_000_003 + step) % 2**31
        )
        return self.batches(
            self.splits["train"],
            config,
            replicas,
            repeat=True,
            shuffle_buffer=training.shuffle_buffer,
            seed=seed,
            sampling_alpha=training.sampling_alpha,
        )

    def batches_per_pass(self, config, replicas):
        """`(batches, estimated)`: the batches of one pass over the training
        data, segmented as training segments it (with `sampling_alpha`, one
        sampled pass); counted from the sample and scaled to the corpus when
        the corpus is larger than its sample."""
        batches = batches_in_pass(
            self.corpus.sample,
            self.tokenizer,
            scale=self.corpus.sample_scale(),
            max_length=config.model.max_length,
            tokens_per_batch=config.training.tokens_per_batch,
            batch_multiple=replicas,
            sampling_alpha=config.training.sampling_alpha,
        )
        return batches, self.corpus.sampled

    def validation_batches(self, config, replicas):
        validation = self.batches(
            self.splits["validation"], config, replicas, shuffle_buffer=0
        )
        return validation.apply(
            tf.data.experimental.assert_cardinality(count(validation))
        )


def settle_vocabulary(config, run_dir):
    """`config` with the vocabulary it reuses (`data.vocab`) checked and
    `data.vocab_size` that model's size; `config` itself without one.

    Called before the run folder is used: a missing file, one that is not a
    SentencePiece model or lacks the package's reserved ids, a `vocab_size`
    that is not the model's, or a model that is not the vocabulary of the
    run to resume in `run_dir` is a one-line error.
    """
    data = config.data
    if not data.vocab:
        return config
    if not os.path.isfile(data.vocab):
        raise FileNotFoundError(f"The vocabulary {data.vocab!r} does not exist.")
    with open(data.vocab, "rb") as file:
        model = file.read()
    pieces = vocabulary_size(model, data.vocab)
    if data.vocab_size not in (None, pieces):
        raise ValueError(
            f"vocab_size is {data.vocab_size}, but the vocabulary {data.vocab} has "
            f"{pieces} pieces: leave vocab_size (--vocab-size) out with vocab."
        )
    if not config.output.overwrite and os.path.exists(run_dir.tokenizer):
        with open(run_dir.tokenizer, "rb") as file:
            if file.read() != model:
                raise ValueError(
                    f"{data.vocab} is not the vocabulary of the run in "
                    f"{run_dir.path} (its tokenizer.model differs). Pass "
                    "--overwrite to start over there, or another --output-dir."
                )
    return config.replace(data={"vocab_size": pieces})


def load_run_data(config, run_dir, corpus, log):
    """The `RunData` of `corpus`: the run's tokenizer, trained if new."""
    splits = corpus.splits
    test = splits["test"].take(sample_size(config.evaluation.test_sample) or -1)
    return RunData(
        corpus=corpus,
        validation=dataset_to_lists(splits["validation"]),
        test=dataset_to_lists(test),
        tokenizer=_tokenizer(run_dir, corpus, config.data, log),
    )


def pass_size(data, config, replicas, run_dir):
    """`(batches, estimated)` of a pass (`RunData.batches_per_pass`), saved
    in the run folder so that a resume of the same settings reads it."""
    settings = {
        "training_pairs": data.corpus.training_pairs,
        "max_length": config.model.max_length,
        "tokens_per_batch": config.training.tokens_per_batch,
        "replicas": replicas,
        "sampling_alpha": config.training.sampling_alpha,
    }
    saved = run_dir.read_pass_size()
    if saved and saved["settings"] == settings:
        return saved["batches"], saved["estimated"]
    batches, estimated = data.batches_per_pass(config, replicas)
    run_dir.write_pass_size(
        {"settings": settings, "batches": batches, "estimated": estimated}
    )
    return batches, estimated


def _tokenizer(run_dir, corpus, data, log):
    """The run's vocabulary: its own, the one it reuses, or a new one trained on
    the corpus's training sample (all the training pairs when few enough)."""
    if os.path.exists(run_dir.tokenizer):
        return load_tokenizer(run_dir.tokenizer)
    if data.vocab:
        log(f"Using the {data.vocab_size}-piece vocabulary {data.vocab}.")
        with atomic_path(run_dir.tokenizer) as partial:
            shutil.copyfile(data.vocab, partial)
        return load_tokenizer(run_dir.tokenizer)
    sample = (
        f" on a sample of {SAMPLE_PAIRS:,} of the {corpus.training_pairs:,} pairs"
        if corpus.sampled
        else ""
    )
    log(f"Training a {data.vocab_size}-piece SentencePiece vocabulary{sample}...")
    tokenizer = train_tokenizer(
        corpus.sample,
        data.vocab_size,
        num_threads=SAMPLED_THREADS if corpus.sampled else None,
    )
    run_dir.save_tokenizer(tokenizer)
    return tokenizer


def count(dataset):
    """The number of elements of `dataset`, counted by iterating it."""
    return int(dataset.reduce(0, lambda total, _: total + 1))
