"""A run's data: its splits, its vocabulary and its batches."""

import dataclasses
import os
import shutil

import tensorflow as tf

from keras_transformer.data import (
    SubwordTokenizer,
    dataset_to_lists,
    load_parallel_files,
    load_translation_corpus,
    make_dataset,
    mix_pairs,
    train_tokenizer,
)
from keras_transformer.data.tokenizer import check_vocabulary
from keras_transformer.recipe.config import sample_size


def load_splits(data, seed=0, log=None):
    """The data section's corpus as {"train", "validation", "test"} datasets
    of (source, target) string pairs.

    With `log`, says which splits of your files were held out, and how.
    Bad files fail here, before anything is written.
    """
    if data.is_files:
        splits, held_out = load_parallel_files(
            data.train_files, data.valid_files, data.test_files
        )
        if held_out and log:
            log(
                f"Held out {' and '.join(held_out)} from {' '.join(data.train_files)}:"
                f" {max(held_out.values()):.1%} of the sources each, by a hash of"
                " the source sentence (give --valid-files / --test-files for your own)."
            )
    else:
        splits = _named_corpus(data, seed)
    if data.bidirectional:
        splits["train"] = splits["train"].flat_map(both_directions)
    return splits


def _named_corpus(data, seed):
    extra = data.extra_train_split
    mixed = bool(extra) and data.extra_train_fraction is not None
    train = f"train+{extra}" if extra and not mixed else "train"
    splits = load_translation_corpus(
        data.corpus,
        data.source_language,
        data.target_language,
        splits=(train, "validation", "test") + ((extra,) if mixed else ()),
        data_dir=data.data_dir,
        download=data.corpus != "ding",
    )
    if mixed:
        splits[train] = mix_pairs(
            splits[train], splits[extra], data.extra_train_fraction, seed
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


@dataclasses.dataclass(frozen=True)
class RunData:
    """What a run reads: the splits, the held-out text, the vocabulary."""

    splits: dict
    validation: tuple  # (sources, targets), lists of str
    test: tuple  # the first `test_sample` test pairs
    tokenizer: SubwordTokenizer

    def batches(self, pairs, config, replicas, **kwargs):
        """`make_dataset` batches of `pairs` with the run's settings."""
        return make_dataset(
            pairs,
            self.tokenizer,
            max_length=config.model.max_length,
            tokens_per_batch=config.training.tokens_per_batch,
            batch_multiple=replicas,
            **kwargs,
        )

    def training_stream(self, config, replicas):
        """The training batches, repeated, shuffled and sampled as configured."""
        training = config.training
        return self.batches(
            self.splits["train"],
            config,
            replicas,
            repeat=True,
            seed=training.seed,
            sampling_alpha=training.sampling_alpha,
        )

    def batches_per_pass(self, config, replicas):
        """Batches in one pass over the training data, segmented as training
        segments it (with `sampling_alpha`, one sampled pass)."""
        one_pass = self.batches(
            self.splits["train"],
            config,
            replicas,
            shuffle_buffer=0,
            seed=config.training.seed,
            sampling_alpha=config.training.sampling_alpha,
        )
        return count(one_pass)

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
    pieces = check_vocabulary(model, data.vocab)
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


def load_run_data(config, run_dir, splits, log):
    """The `RunData` of `splits`: the run's tokenizer, trained if new."""
    test = splits["test"].take(sample_size(config.evaluation.test_sample) or -1)
    return RunData(
        splits=splits,
        validation=dataset_to_lists(splits["validation"]),
        test=dataset_to_lists(test),
        tokenizer=_tokenizer(run_dir, splits["train"], config.data, log),
    )


def _tokenizer(run_dir, train_pairs, data, log):
    """The run's vocabulary: its own, the one it reuses, or a new one trained on
    the training pairs (a random sample of them beyond `SAMPLE_SENTENCES`)."""
    if os.path.exists(run_dir.tokenizer):
        return SubwordTokenizer.load(run_dir.tokenizer)
    if data.vocab:
        log(f"Using the {data.vocab_size}-piece vocabulary {data.vocab}.")
        shutil.copyfile(data.vocab, run_dir.tokenizer)
        return SubwordTokenizer.load(run_dir.tokenizer)
    log(f"Training a {data.vocab_size}-piece SentencePiece vocabulary...")
    tokenizer = train_tokenizer(train_pairs, data.vocab_size)
    tokenizer.save(run_dir.tokenizer)
    return tokenizer


def count(dataset):
    """The number of elements of `dataset`, counted by iterating it."""
    return int(dataset.reduce(0, lambda total, _: total + 1))
