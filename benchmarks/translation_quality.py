"""Translation quality side by side: our default run vs the keras.io recipe.

Both train on the same Ding German-English training sentences and are scored
on the same test split with sacreBLEU (13a, mixed case) and chrF. Prints one
JSON object with each system's BLEU, chrF and training time, wall-clock and
CPU (user + system seconds of all the process's threads, which other work on
the machine changes less than wall-clock time).

The reference is the keras.io example "English-to-Spanish translation with
KerasNLP" as it stands, applied to German-English: a WordPiece vocabulary
per language (15,000 pieces each), learned positions, one keras-hub
`TransformerEncoder` and one `TransformerDecoder` (d=256, d_ff=2048, 8
heads), dropout 0.5 before the softmax layer, Adam, no label smoothing,
sequences of 40 tokens, batches of 64, 10 epochs, greedy decoding that
re-runs the decoder on the whole prefix each step.

    python benchmarks/translation_quality.py                 # both systems
    python benchmarks/translation_quality.py --only keras_io --seed 1

Your own corpus instead of Ding, as `keras-transformer train` takes it
(SOURCE TARGET files or one TSV each; the keras.io recipe trains on the
training files and is scored on the test files, and our run also reads the
validation files):

    python benchmarks/translation_quality.py --train-files train.fr train.en \
        --valid-files valid.fr valid.en --test-files test.fr test.en

Our system's settings with `--ours`, a JSON object of `keras-transformer
train` settings, flat (`{"epochs": 5, "model": {"dropout": 0.3}}`, the
names of a version-1 job.json) or by section (`{"training": {"epochs": 5}}`).
"""

import argparse
import json
import os
import tempfile
import time

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from keras_transformer.data import load_ding_pairs, read_pairs
from keras_transformer.evaluation import corpus_scores
from keras_transformer.recipe.config import SECTIONS, RunConfig
from keras_transformer.recipe.config_files import upgrade_flat_config
from keras_transformer.recipe.run import run

RESERVED = ["[PAD]", "[UNK]", "[START]", "[END]"]
SEQUENCE_LENGTH, BATCH_SIZE, EMBED_DIM, INTERMEDIATE_DIM, NUM_HEADS = (
    40,
    64,
    256,
    2048,
    8,
)


def keras_io_recipe(train_pairs, test_pairs, epochs=10, vocab_size=15000, seed=0):
    """Trains and scores the keras.io recipe; returns its results dict."""
    keras.utils.set_random_seed(seed)
    sources = [source for source, _ in train_pairs]
    targets = [target for _, target in train_pairs]

    def tokenizer(texts):
        vocabulary = keras_hub.tokenizers.compute_word_piece_vocabulary(
            tf.data.Dataset.from_tensor_slices(texts).batch(1000),
            vocabulary_size=vocab_size,
            reserved_tokens=RESERVED,
        )
        return keras_hub.tokenizers.WordPieceTokenizer(
            vocabulary=vocabulary, lowercase=False
        )

    source_tokenizer, target_tokenizer = tokenizer(sources), tokenizer(targets)
    source_packer = keras_hub.layers.StartEndPacker(
        sequence_length=SEQUENCE_LENGTH,
        pad_value=source_tokenizer.token_to_id("[PAD]"),
    )
    target_packer = keras_hub.layers.StartEndPacker(
        sequence_length=SEQUENCE_LENGTH + 1,
        start_value=target_tokenizer.token_to_id("[START]"),
        end_value=target_tokenizer.token_to_id("[END]"),
        pad_value=target_tokenizer.token_to_id("[PAD]"),
    )

    def preprocess(source, target):
        source = source_packer(source_tokenizer(source))
        target = target_packer(target_tokenizer(target))
        inputs = {"encoder_inputs": source, "decoder_inputs": target[:, :-1]}
        return inputs, target[:, 1:]

    dataset = (
        tf.data.Dataset.from_tensor_slices((sources, targets))
        .shuffle(2048, seed=seed)
        .batch(BATCH_SIZE)
        .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(16)
    )
    source_vocab = source_tokenizer.vocabulary_size()
    target_vocab = target_tokenizer.vocabulary_size()

    encoder_inputs = keras.Input((None,), dtype="int32", name="encoder_inputs")
    x = keras_hub.layers.TokenAndPositionEmbedding(
        source_vocab, SEQUENCE_LENGTH, EMBED_DIM
    )(encoder_inputs)
    encoder_outputs = keras_hub.layers.TransformerEncoder(
        intermediate_dim=INTERMEDIATE_DIM, num_heads=NUM_HEADS
    )(inputs=x)
    encoder = keras.Model(encoder_inputs, encoder_outputs)
    decoder_inputs = keras.Input((None,), dtype="int32", name="decoder_inputs")
    encoded = keras.Input((None, EMBED_DIM), name="decoder_state_inputs")
    x = keras_hub.layers.TokenAndPositionEmbedding(
        target_vocab, SEQUENCE_LENGTH, EMBED_DIM
    )(decoder_inputs)
    x = keras_hub.layers.TransformerDecoder(
        intermediate_dim=INTERMEDIATE_DIM, num_heads=NUM_HEADS
    )(decoder_sequence=x, encoder_sequence=encoded)
    x = keras.layers.Dropout(0.5)(x)
    outputs = keras.layers.Dense(target_vocab, activation="softmax")(x)
    decoder = keras.Model([decoder_inputs, encoded], outputs)
    model = keras.Model(
        {"encoder_inputs": encoder_inputs, "decoder_inputs": decoder_inputs},
        decoder([decoder_inputs, encoder(encoder_inputs)]),
    )
    model.compile("adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    started, cpu_started = time.time(), time.process_time()
    model.fit(dataset, epochs=epochs, verbose=2)
    fit_seconds = time.time() - started
    fit_cpu_seconds = time.process_time() - cpu_started

    start_id = target_tokenizer.token_to_id("[START]")
    end_id = target_tokenizer.token_to_id("[END]")

    @tf.function
    def greedy(source_ids):  # the recipe's decoding: the whole prefix each step
        batch = tf.shape(source_ids)[0]
        memory = encoder(source_ids)
        ids = tf.concat(
            [
                tf.fill([batch, 1], start_id),
                tf.zeros([batch, SEQUENCE_LENGTH], tf.int32),
            ],
            axis=1,
        )
        for index in range(SEQUENCE_LENGTH):
            probabilities = decoder([ids[:, :-1], memory])[:, index]
            ended = tf.reduce_any(ids[:, 1 : index + 1] == end_id, axis=1)
            token = tf.where(ended, 0, tf.argmax(probabilities, -1, tf.int32))
            ids = tf.tensor_scatter_nd_update(
                ids,
                tf.stack([tf.range(batch), tf.fill([batch], index + 1)], axis=1),
                token,
            )
        return ids[:, 1:]

    translations = []
    test_sources = [source for source, _ in test_pairs]
    for start in range(0, len(test_sources), 128):
        source_ids = source_packer(source_tokenizer(test_sources[start : start + 128]))
        for row in greedy(source_ids).numpy():
            row = [int(i) for i in row if i not in (0, start_id)]
            row = row[: row.index(end_id)] if end_id in row else row
            text = target_tokenizer.detokenize(np.array(row, "int32"))
            translations.append(_text(text))
    scores = corpus_scores(translations, [target for _, target in test_pairs])
    return {
        **scores,
        "fit_seconds": round(fit_seconds, 1),
        "fit_cpu_seconds": round(fit_cpu_seconds, 1),
        "epochs": epochs,
    }


def _text(tensor):
    text = tensor.numpy() if hasattr(tensor, "numpy") else tensor
    return (text.decode("utf-8") if isinstance(text, bytes) else str(text)).strip()


def our_config(output_dir, overrides):
    """Our run's `RunConfig`: the defaults, then `overrides`, in `output_dir`,
    with no export and no samples printed.

    `overrides` are flat (`{"seed": 1, "epochs": 5, "model": {...}}`, each
    name put in its section by `upgrade_flat_config`) or sections
    (`{"training": {"epochs": 5}}`), or both; a section given wins.

    Example:

    >>> config = our_config("run", {"seed": 1, "evaluation": {"beam_size": 2}})
    >>> config.training.seed, config.evaluation.beam_size, config.output.export_dir
    (1, 2, '')
    """
    flat = {
        name: value
        for name, value in overrides.items()
        if name == "model" or name not in SECTIONS
    }
    values = upgrade_flat_config(flat)
    for section, fields in overrides.items():
        if section in SECTIONS and section != "model":
            values.setdefault(section, {}).update(fields)
    return RunConfig.from_dict(values).replace(
        output={"output_dir": output_dir, "export_dir": ""},
        evaluation={"samples": 0},
    )


def ours(output_dir, **overrides):
    """Our main run with its defaults (plus `overrides`, see `our_config`);
    returns its results."""
    results = run(our_config(output_dir, overrides))
    keep = (
        "bleu",
        "chrf",
        "bleu_signature",
        "fit_seconds",
        "fit_cpu_seconds",
        "total_seconds",
        "epochs",
        "updates",
        "history",
    )
    return {key: results[key] for key in keep}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("ours", "keras_io"))
    parser.add_argument("--keras-io-epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0, help="both systems' random seed")
    parser.add_argument(
        "--ours",
        type=json.loads,
        default={},
        metavar="JSON",
        help='our system\'s settings: flat, e.g. {"epochs": 5}, or by section, '
        'e.g. {"training": {"epochs": 5}}',
    )
    for split in ("train", "valid", "test"):
        parser.add_argument(
            f"--{split}-files",
            nargs="+",
            default=(),
            metavar="FILE",
            help="SOURCE TARGET or one TSV file (default: Ding's split)",
        )
    args = parser.parse_args()
    files = {"train_files": args.train_files, "valid_files": args.valid_files}
    files["test_files"] = args.test_files
    if any(files.values()):
        if not (args.train_files and args.test_files):
            parser.error("your own corpus needs --train-files and --test-files.")
        splits = {"train": read_pairs(*args.train_files)}
        splits["test"] = read_pairs(*args.test_files)
    else:
        splits, files = load_ding_pairs(), {}
    results = {
        "corpus": files or "ding",
        "train_pairs": len(splits["train"]),
        "test_sentences": len(splits["test"]),
        "seed": args.seed,
        "machine": _machine(),
    }
    if args.only != "ours":
        results["keras_io"] = keras_io_recipe(
            splits["train"], splits["test"], args.keras_io_epochs, seed=args.seed
        )
    if args.only != "keras_io":
        with tempfile.TemporaryDirectory() as folder:
            results["ours"] = ours(
                os.path.join(folder, "run"), **{"seed": args.seed, **files, **args.ours}
            )
    if "ours" in results and "keras_io" in results:
        results["bleu_gain"] = results["ours"]["bleu"] - results["keras_io"]["bleu"]
    print(json.dumps(results, indent=2))


def _machine():
    return {
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
    }


if __name__ == "__main__":
    main()
