"""Decoding controls measured on a test set, through an export's engine: a
typed prefix, and the repetition and length controls.

    python benchmarks/controls.py saved_models/translator/1 \\
        > benchmarks/results/controls.json

The test set is Ding's test split, or `--texts` with `--references`. Every
row translates the whole set with the export's beam search
(`engines.open_export`; a CTranslate2 folder works too) and reports:

- prefix rows, as in interactive translation: the first k reference words
  typed (k = 1, 2, 3, each with a space after); the first three with the
  third cut in half (token healing completes it); and the whole reference.
  For each: the share of outputs that begin with the prefix exactly, BLEU
  and chrF of the whole outputs (they should rise with k), and for the
  whole reference the share of outputs equal to it.
- control rows: `no_repeat_ngram_size` 2 and 3 (the share of outputs with
  a repeated n-gram of that many pieces, without and with the control),
  `min_length` 12 (outputs of fewer pieces, without and with),
  `repetition_penalty` 1.2 (outputs that repeat a piece, without and
  with), `disable_unk` (unknown pieces in the outputs, without and with).
  Pieces are the outputs re-encoded with the export's SentencePiece
  model, which may segment a little differently from the search: the
  counts are checks of the outputs as a reader sees them.
- seconds of each row (wall), beside the plain row, and the words of its
  outputs: a row whose outputs are longer takes longer.

`--before OLD_EXPORT` measures an older export of the same model the same
way after it, in the same run, under "before".

Prints one JSON object on stdout.
"""

import argparse
import json
import os
import sys
import time

from keras_transformer.evaluation import corpus_scores
from keras_transformer.export.control_settings import ControlSettings
from keras_transformer.export.engines import open_export
from keras_transformer.export.streaming import translate_batches

UNKNOWN_PIECE = "\u2047"  # how SentencePiece writes the unknown piece: " ⁇ "
MIN_LENGTH = 12


def prefixes(references):
    """Name -> a typed prefix per reference."""
    rows = {}
    for k in (1, 2, 3):
        rows[f"first_{k}_words"] = [
            " ".join(reference.split()[:k]) + " " for reference in references
        ]
    half = []
    for reference in references:
        words = reference.split()[:3]
        if words:
            words[-1] = words[-1][: max(1, len(words[-1]) // 2)]
        half.append(" ".join(words))
    rows["first_3_words_last_cut_in_half"] = half
    rows["whole_reference"] = list(references)
    return rows


def translate_all(engine, texts, batch_size, prefixes=None, controls=None):
    """(translations, wall seconds) of `texts` through `engine`."""
    items = list(range(len(texts)))

    def run(batch):
        typed = None if prefixes is None else [prefixes[i] for i in batch]
        return engine.translate(
            [texts[i] for i in batch], prefixes=typed, controls=controls
        )

    started = time.perf_counter()
    translations = sum(
        translate_batches(run, items, batch_size, key=lambda i: len(texts[i])), []
    )
    return translations, time.perf_counter() - started


def repeats_ngram(pieces, size):
    """Whether an n-gram of `size` pieces occurs twice in `pieces`."""
    grams = [tuple(pieces[i : i + size]) for i in range(len(pieces) - size + 1)]
    return len(set(grams)) < len(grams)


def measure(path, texts, references, batch_size):
    engine = open_export(path)
    tokenizer, _ = engine.source_limit()  # the shared vocabulary's processor
    plain, plain_seconds = translate_all(engine, texts, batch_size)
    pieces = [tokenizer.encode(text, out_type=str) for text in plain]
    rows = {"plain": {"seconds": round(plain_seconds, 2), **scores(plain, references)}}
    rows["plain"]["words"] = words(plain)
    for name, typed in prefixes(references).items():
        outputs, seconds = translate_all(engine, texts, batch_size, typed)
        verbatim = sum(o.startswith(p) for o, p in zip(outputs, typed, strict=True))
        rows[name] = {
            "seconds": round(seconds, 2),
            "begin_with_prefix": round(verbatim / len(texts), 4),
            **scores(outputs, references),
            "words": words(outputs),
        }
        if name == "whole_reference":
            equal = sum(o == r for o, r in zip(outputs, references, strict=True))
            rows[name]["equal_to_reference"] = round(equal / len(texts), 4)
    controlled = {
        "no_repeat_ngram_size_2": ControlSettings(no_repeat_ngram_size=2),
        "no_repeat_ngram_size_3": ControlSettings(no_repeat_ngram_size=3),
        f"min_length_{MIN_LENGTH}": ControlSettings(min_length=MIN_LENGTH),
        "disable_unk": ControlSettings(disable_unk=True),
        "repetition_penalty_1.2": ControlSettings(repetition_penalty=1.2),
    }
    checks = {
        "no_repeat_ngram_size_2": lambda p, _: repeats_ngram(p, 2),
        "no_repeat_ngram_size_3": lambda p, _: repeats_ngram(p, 3),
        f"min_length_{MIN_LENGTH}": lambda p, _: len(p) < MIN_LENGTH,
        "disable_unk": lambda _, text: UNKNOWN_PIECE in text,
        "repetition_penalty_1.2": lambda p, _: repeats_ngram(p, 1),
    }
    for name, controls in controlled.items():
        outputs, seconds = translate_all(engine, texts, batch_size, controls=controls)
        check = checks[name]
        with_pieces = [tokenizer.encode(text, out_type=str) for text in outputs]
        rows[name] = {
            "seconds": round(seconds, 2),
            "outputs_failing_the_check": {
                "without": sum(map(check, pieces, plain)),
                "with": sum(map(check, with_pieces, outputs)),
            },
            **scores(outputs, references),
        }
    return rows


def words(translations):
    """The words of `translations`, all told."""
    return sum(len(translation.split()) for translation in translations)


def scores(translations, references):
    result = corpus_scores(translations, references)
    return {"bleu": round(result["bleu"], 2), "chrf": round(result["chrf"], 2)}


def add_test_set_arguments(parser):
    """The export and test-set arguments `test_set` reads."""
    parser.add_argument("export", help="a SavedModel version folder, or CTranslate2")
    parser.add_argument("--texts", help="a source a line (default: Ding's test split)")
    parser.add_argument("--references", help="with --texts: a reference a line")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--limit", type=int, help="the first N lines only")


def test_set(args):
    """(texts, references) of `add_test_set_arguments`' arguments."""
    if args.texts is None:
        from keras_transformer.data import load_ding_pairs

        texts, references = map(list, zip(*load_ding_pairs()["test"], strict=True))
    else:
        with open(args.texts, encoding="utf-8") as file:
            texts = file.read().splitlines()
        with open(args.references, encoding="utf-8") as file:
            references = file.read().splitlines()
    texts, references = texts[: args.limit], references[: args.limit]
    print(f"{len(texts)} lines...", file=sys.stderr)
    return texts, references


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_test_set_arguments(parser)
    parser.add_argument("--before", metavar="OLD_EXPORT", help="also measure this")
    args = parser.parse_args(argv)
    texts, references = test_set(args)
    rows = measure(args.export, texts, references, args.batch_size)
    result = {
        "benchmark": "controls",
        "export": os.path.abspath(args.export),
        "lines": len(texts),
        "cpu_count": os.cpu_count(),
        "rows": rows,
    }
    if args.before:
        result["before"] = {
            "export": os.path.abspath(args.before),
            "rows": measure(args.before, texts, references, args.batch_size),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
