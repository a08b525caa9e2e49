"""Terminology constraints measured on a test set, through an export's engine.

    python benchmarks/constraints.py saved_models/translator/1 \\
        [--before OLD_EXPORT] > benchmarks/results/constraints.json

Post & Vilar's (2018) protocol on Ding's test split (or `--texts` with
`--references`): the export translates every line with beam search; for
each line, 1 and 2 required phrases are drawn (seeded) from the reference
words that the unconstrained translation lacks, and the lines with that
many such words are translated again under them. Reported per row:

- `term_use`: the share of translations with every required phrase's
  pieces (the SavedModel's `required_met`), and `term_use_as_words`: the
  share where each term appears as written in the text;
- BLEU and chrF of the constrained and of the unconstrained translations
  of those lines (they should rise);
- banned phrases: a word of each unconstrained translation is banned, and
  the translations that still hold it as a word are counted (it is banned
  in every spelling by the target's pieces, so none should).

Speed: the first `--speed-lines` lines with 0, 1, 2 and 4 required
phrases a line (drawn from the reference, fewer where it has fewer words),
and with 1 banned, at beam 4 and 8, through the `controlled_beam`
signature, beside the plain `beam` signature; with `--before`, an export
of older code (one whose `controlled_beam` has no `required` input
included) in the same run, for "no constraints, within 3 % of before".

Prints one JSON object on stdout.
"""

import argparse
import functools
import json
import os
import random
import re
import sys
import time

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from controls import add_test_set_arguments, scores, test_set  # noqa: E402

from keras_transformer.export.control_settings import Terms  # noqa: E402
from keras_transformer.export.engines import open_export, phrase_table  # noqa: E402
from keras_transformer.export.streaming import translate_batches  # noqa: E402

# The words terms are drawn from: letters, with an apostrophe inside ("we'll").
WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


def words(text, min_length):
    return [word for word in WORD.findall(text) if len(word) >= min_length]


def has_word(text, word):
    return re.search(r"(?<![\w'])" + re.escape(word) + r"(?![\w'])", text) is not None


def translate_all(engine, texts, batch_size, terms=None):
    """(translations, seconds, translations missing a term) of `texts`."""
    items = list(range(len(texts)))
    missed = engine.terms_missed

    def run(batch):
        given = None if terms is None else [terms[i] for i in batch]
        return engine.translate([texts[i] for i in batch], terms=given)

    started = time.perf_counter()
    outputs = sum(
        translate_batches(run, items, batch_size, key=lambda i: len(texts[i])), []
    )
    return outputs, time.perf_counter() - started, engine.terms_missed - missed


def quality(engine, texts, references, batch_size, seed, min_length):
    free, _, _ = translate_all(engine, texts, batch_size)
    rng = random.Random(seed)
    rows = {}
    for count in (1, 2):
        lines, terms = [], []
        for index, (output, reference) in enumerate(zip(free, references, strict=True)):
            lacking = sorted(set(words(reference, min_length)) - set(words(output, 1)))
            if len(lacking) >= count:
                lines.append(index)
                terms.append(Terms(required=rng.sample(lacking, count)))
        if not lines:
            rows[f"{count}_required"] = {"lines": 0}
            continue
        subset = [texts[i] for i in lines]
        outputs, seconds, missed = translate_all(engine, subset, batch_size, terms)
        used = sum(
            all(has_word(output, term) for term in row.required)
            for output, row in zip(outputs, terms, strict=True)
        )
        refs = [references[i] for i in lines]
        rows[f"{count}_required"] = {
            "lines": len(lines),
            "term_use": round(1 - missed / max(1, len(lines)), 4),
            "term_use_as_words": round(used / max(1, len(lines)), 4),
            "constrained": scores(outputs, refs),
            "unconstrained": scores([free[i] for i in lines], refs),
            "seconds": round(seconds, 2),
        }
    lines, terms = [], []
    for index, output in enumerate(free):
        candidates = sorted(set(words(output, min_length)))
        if candidates:
            lines.append(index)
            terms.append(Terms(banned=[rng.choice(candidates)]))
    outputs, _, _ = translate_all(engine, [texts[i] for i in lines], batch_size, terms)
    rows["1_banned"] = {
        "lines": len(lines),
        "still_holding_the_word": sum(
            has_word(output, row.banned[0])
            for output, row in zip(outputs, terms, strict=True)
        ),
    }
    return rows


def signature_seconds(
    path, texts, phrases, beam_size, batch_size, repeats, kind="required"
):
    """Seconds of `controlled_beam` (or `beam` where `phrases` is None) over
    `texts` in batches, `phrases` a list of phrases per text (`kind`
    "required" or "banned"), after one untimed call: the fastest of
    `repeats` passes."""
    name = "beam" if phrases is None else "controlled_beam"
    signature = load(path).signatures[name]
    accepted = signature.structured_input_signature[1]
    calls = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        rows = len(batch)
        inputs = dict(
            text=tf.constant(batch),
            beam_size=tf.constant(beam_size),
            alpha=tf.constant(0.6),
        )
        if phrases is not None:
            inputs.update(
                prefix=tf.fill([rows], ""),
                repetition_penalty=tf.fill([rows], 1.0),
                no_repeat_ngram_size=tf.fill([rows], 0),
                min_length=tf.fill([rows], 0),
                disable_unk=tf.fill([rows], False),
                banned=tf.fill([rows, 1], ""),
                required=tf.fill([rows, 1], ""),
            )
            inputs[kind] = phrase_table(phrases[start : start + batch_size])
        calls.append({key: value for key, value in inputs.items() if key in accepted})
    signature(**calls[0])  # warm-up
    passes = []
    for _ in range(repeats):
        started = time.perf_counter()
        for inputs in calls:
            signature(**inputs)
        passes.append(time.perf_counter() - started)
    return round(min(passes), 2)


@functools.cache
def load(path):
    return tf.saved_model.load(path)


def speed(path, before, texts, references, batch_size, seed, min_length, repeats):
    rng = random.Random(seed)
    phrases = {
        count: [
            rng.sample(drawn, min(count, len(drawn)))
            for drawn in (sorted(set(words(r, min_length))) for r in references)
        ]
        for count in (0, 1, 2, 4)
    }
    rows = {}
    for beam_size in (4, 8):
        row = {
            "plain_beam_signature": signature_seconds(
                path, texts, None, beam_size, batch_size, repeats
            )
        }
        for count, given in phrases.items():
            row[f"{count}_required"] = signature_seconds(
                path, texts, given, beam_size, batch_size, repeats
            )
        row["1_banned"] = signature_seconds(
            path, texts, phrases[1], beam_size, batch_size, repeats, kind="banned"
        )
        if before is not None:
            row["before_plain_beam_signature"] = signature_seconds(
                before, texts, None, beam_size, batch_size, repeats
            )
            row["before_controlled_beam"] = signature_seconds(
                before, texts, [[] for _ in texts], beam_size, batch_size, repeats
            )
        rows[f"beam_{beam_size}"] = row
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_test_set_arguments(parser)
    parser.add_argument("--before", help="an export of the code before constraints")
    parser.add_argument("--speed-lines", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeats", type=int, default=3, help="passes per speed (the fastest)"
    )
    parser.add_argument(
        "--min-word-length", type=int, default=2, help="of the words drawn as terms"
    )
    args = parser.parse_args(argv)
    texts, references = test_set(args)
    engine = open_export(args.export)
    result = {
        "benchmark": "constraints",
        "export": os.path.abspath(args.export),
        "lines": len(texts),
        "cpu_count": os.cpu_count(),
        "quality": quality(
            engine, texts, references, args.batch_size, args.seed, args.min_word_length
        ),
        "speed_lines": min(args.speed_lines, len(texts)),
        "speed_seconds": speed(
            args.export,
            args.before,
            texts[: args.speed_lines],
            references[: args.speed_lines],
            args.batch_size,
            args.seed,
            args.min_word_length,
            args.repeats,
        ),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
