"""A dictionary word in <b>: does the tag land on the word's translation?

For each test sentence, the longest of its words that the Ding dictionary
translates by one word (a headword sub-entry of one word on both sides,
every variant) is wrapped in `<b>...</b>`, and the sentence is translated
with its markup carried through (`translate --markup xml`: translate the
plain text, align, put the tag back around the target words linked to
the word). It reports the share of outputs that are well-formed and, of
the outputs in which one of the word's dictionary translations appears,
the share whose `<b>` span holds it, the share whose span is that word
alone, and the span's mean length in words (a span around the whole
sentence holds it too), beside the milliseconds a sentence of plain and
of markup translation:

    python benchmarks/markup_dictionary.py EXPORT [--sentences N]

The sentences are the German sources of the Ding test split
(`data.load_ding_pairs`) unless `--sources` names a file; the dictionary
is Ding's file (`--dictionary`, Debian's `trans-de-en` by default). The
export translates German into English. Prints one JSON object.
"""

import argparse
import html
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from markup import share, well_formed  # noqa: E402

from keras_transformer.alignment.markup import split_markup  # noqa: E402
from keras_transformer.data.ding import DING_PATH, load_ding_pairs  # noqa: E402
from keras_transformer.data.ding_parser import clean  # noqa: E402
from keras_transformer.export.markup_lines import MarkupTranslation  # noqa: E402
from keras_transformer.export.streaming import long_inputs_function  # noqa: E402

ONE_WORD = re.compile(r"^[^\W\d_]+$")  # letters only
BOLD = re.compile(r"<b>(.*?)</b>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")
PUNCTUATION = ".,;:!?\"'()«»„“”‚‘’-"


def one_word_translations(lines):
    """{German word: set of lowercase English words} of Ding lines: the
    one-word variants of each line's first sub-entry, on both sides.

    Example:

    >>> one_word_translations(["Haus {n}; Gebäude {n} :: house; building | x :: y",
    ...                        "# comment", "gut {adj} :: good; fine work"])
    {'Haus': {'building', 'house'}, 'Gebäude': {'building', 'house'}, 'gut': {'good'}}
    """
    dictionary = {}
    for line in lines:
        if line.startswith("#") or " :: " not in line:
            continue
        german, english = (
            [clean(variant) for variant in side.split(" | ")[0].split("; ")]
            for side in line.split(" :: ", 1)
        )
        targets = {word.lower() for word in english if ONE_WORD.match(word)}
        for word in german:
            if targets and ONE_WORD.match(word):
                dictionary.setdefault(word, set()).update(targets)
    return dictionary


def bold_case(sentence, dictionary):
    """`sentence` as XML with its longest dictionary word (the first of
    the longest) in `<b>`, and that word's translations; None without one.

    Example:

    >>> bold_case("Das Haus ist alt.", {"Haus": {"house"}, "alt": {"old"}})
    ('Das <b>Haus</b> ist alt.', {'house'})
    """
    tokens = sentence.split(" ")
    words = [token.strip(PUNCTUATION) for token in tokens]
    known = [index for index, word in enumerate(words) if word in dictionary]
    if not known:
        return None
    chosen = max(known, key=lambda index: len(words[index]))  # the first longest
    marked = []
    for index, (token, word) in enumerate(zip(tokens, words, strict=True)):
        escaped = html.escape(token, quote=False)
        if index == chosen:
            before, _, after = token.partition(word)
            escaped = "".join(
                (
                    html.escape(before, quote=False),
                    f"<b>{html.escape(word, quote=False)}</b>",
                    html.escape(after, quote=False),
                )
            )
        marked.append(escaped)
    return " ".join(marked), dictionary[words[chosen]]


def bold_check(output, translations):
    """What the `<b>` of `output` holds: {"appears": a translation is in
    the output, "holds": one is in the span, "exact": the span is one
    translation and nothing else, "words": the span's words}, words
    compared lowercased, without punctuation.

    Example:

    >>> bold_check("The <b>house</b> is old.", {"house"})
    {'appears': True, 'holds': True, 'exact': True, 'words': 1}
    >>> bold_check("<b>The house is old.</b>", {"house"})
    {'appears': True, 'holds': True, 'exact': False, 'words': 4}
    >>> bold_check("The <b></b>house is old.", {"house"})["holds"]
    False
    """

    def words(text):
        text = html.unescape(TAG.sub(" ", text))
        return [word.strip(PUNCTUATION).lower() for word in text.split()]

    held = [word for span in BOLD.findall(output) for word in words(span)]
    return {
        "appears": bool(set(words(output)) & translations),
        "holds": bool(set(held) & translations),
        "exact": len(held) == 1 and held[0] in translations,
        "words": len(held),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export")
    parser.add_argument("--dictionary", default=DING_PATH)
    parser.add_argument(
        "--sources", help="a file of sentences, one a line (default: Ding's test)"
    )
    parser.add_argument("--sentences", type=int, help="the first N only")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    with open(args.dictionary, encoding="utf-8") as file:
        dictionary = one_word_translations(line.rstrip("\n") for line in file)
    if args.sources:
        with open(args.sources, encoding="utf-8") as file:
            sentences = [line.rstrip("\n") for line in file]
    else:
        sentences = [german for german, _ in load_ding_pairs()["test"]]
    sentences = sentences[: args.sentences]
    cases = [bold_case(sentence, dictionary) for sentence in sentences]
    cases = [case for case in cases if case is not None]
    marked = [source for source, _ in cases]
    plain = long_inputs_function(args.export, batch_size=args.batch_size)
    with_markup = MarkupTranslation(
        long_inputs_function(args.export, batch_size=args.batch_size, aligned=True),
        "xml",
    )
    timings, outputs = {}, {}
    texts = {"plain": [split_markup(source)[0] for source in marked], "markup": marked}
    for name, translate in (("plain", plain), ("markup", with_markup)):
        translate(texts[name][: args.batch_size])  # traced and warm
        started = time.perf_counter()
        results = []
        for start in range(0, len(marked), args.batch_size):
            results += translate(texts[name][start : start + args.batch_size])
        timings[name] = (time.perf_counter() - started) / max(len(marked), 1)
        outputs[name] = results
    translations = [translation for translation, _ in outputs["markup"]]
    checks = [
        bold_check(output, dictionary_words)
        for output, (_, dictionary_words) in zip(translations, cases, strict=True)
    ]
    appearing = [check for check in checks if check["appears"]]
    result = {
        "sentences": len(sentences),
        "with_a_dictionary_word": len(cases),
        "well_formed_outputs": share(
            sum(well_formed(output, "xml") for output in translations),
            len(cases),
        ),
        "empty_bold": sum(check["words"] == 0 for check in checks),
        "translation_appears": len(appearing),
        "bold_holds_translation": share(
            sum(check["holds"] for check in appearing), len(appearing)
        ),
        "bold_is_translation": share(
            sum(check["exact"] for check in appearing), len(appearing)
        ),
        "bold_words_mean": share(
            sum(check["words"] for check in appearing), len(appearing)
        ),
        "ms_per_sentence": {name: round(1000 * t, 1) for name, t in timings.items()},
        "examples": [
            {"source": source, "output": output}
            for (source, _), output in zip(cases[:8], translations, strict=False)
        ],
    }
    print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
