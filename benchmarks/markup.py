"""Markup through translation on real messages: verbatim, well-formed, counted.

Translates each source line of a file with an export twice: as it is
(plain), and with its markup carried through (`translate --markup`'s
`MarkupTranslation`: split, translate and align the plain text, restore).
For the lines that hold markup it reports the share of protected spans
(placeholders, URLs, e-mail addresses) that appear verbatim in the output,
the spans the output has beyond the source's (written by the model and
left in), those written by the model and taken out (a line whose
translation holds its spans is translated again with them banned, unless
`--no-ban`), the share of outputs
that are well-formed (they split again without error) and of outputs that
keep the number of each tag, the sides of spans glued to a letter or
digit in the output where the source had none (`%spour`: a placeholder
run into a word), beside the milliseconds a sentence of each way:

    python benchmarks/gettext_corpus.py data/gettext-en-fr --language fr
    python benchmarks/markup.py EXPORT data/gettext-en-fr/test.en --mode html

Prints one JSON object.
"""

import argparse
import collections
import json
import re
import time

from keras_transformer.alignment.markup import PROTECTED, split_markup
from keras_transformer.export.markup_lines import MarkupTranslation
from keras_transformer.export.streaming import long_inputs_function

TAG = re.compile(r"<[^>]+>")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export")
    parser.add_argument("sources", help="a file, a source a line")
    parser.add_argument("--mode", choices=("xml", "html"), default="html")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--no-ban",
        action="store_true",
        help="do not ban each line's spans from its translation (a CTranslate2 "
        "export's way): the spans the model writes are only taken out",
    )
    args = parser.parse_args()

    with open(args.sources, encoding="utf-8") as file:
        lines = [line.rstrip("\n") for line in file]
    marked = [line for line in lines if TAG.search(line) or PROTECTED.search(line)]
    plain = long_inputs_function(args.export, batch_size=args.batch_size)
    with_markup = MarkupTranslation(
        long_inputs_function(args.export, batch_size=args.batch_size, aligned=True),
        args.mode,
        ban_spans=not args.no_ban,
    )
    timings, outputs = {}, {}
    for name, translate in (("plain", plain), ("markup", with_markup)):
        translate(marked[: args.batch_size])  # traced and warm
        with_markup.spans_removed = 0  # count the measured pass alone
        started = time.perf_counter()
        results = []
        for start in range(0, len(marked), args.batch_size):
            results += translate(marked[start : start + args.batch_size])
        timings[name] = (time.perf_counter() - started) / max(len(marked), 1)
        outputs[name] = results
    translations = [translation for translation, _ in outputs["markup"]]
    well_formed_inputs = [well_formed(line, args.mode) for line in marked]
    checked = [
        (source, output)
        for source, output, good in zip(
            marked, translations, well_formed_inputs, strict=True
        )
        if good
    ]
    protected = sum(len(PROTECTED.findall(source)) for source, _ in checked)
    kept = sum(
        min(count, collections.Counter(PROTECTED.findall(output))[span])
        for source, output in checked
        for span, count in collections.Counter(PROTECTED.findall(source)).items()
    )
    extra = sum(
        max(0, count - collections.Counter(PROTECTED.findall(source))[span])
        for source, output in checked
        for span, count in collections.Counter(PROTECTED.findall(output)).items()
    )
    result = {
        "sources": len(lines),
        "with_markup": len(marked),
        "not_well_formed_inputs": well_formed_inputs.count(False),
        "protected_spans": protected,
        "protected_verbatim": share(kept, protected),
        "protected_extra": extra,  # spans the model wrote itself, left in
        "protected_glued_into_words": sum(
            glued_into_words(source, output) for source, output in checked
        ),
        "spans_banned": not args.no_ban,
        "spans_taken_out": with_markup.spans_removed,  # written, then taken out
        "well_formed_outputs": share(
            sum(well_formed(output, args.mode) for _, output in checked), len(checked)
        ),
        "tag_counts_kept": share(
            sum(
                _tags(source, args.mode) == _tags(output, args.mode)
                for source, output in checked
                if well_formed(output, args.mode)
            ),
            len(checked),
        ),
        "ms_per_sentence": {name: round(1000 * t, 1) for name, t in timings.items()},
        "examples": [
            {"source": source, "output": output} for source, output in checked[:8]
        ],
    }
    print(json.dumps(result, indent=1, ensure_ascii=False))


def glued_into_words(source, output):
    """The sides of protected spans that a letter or digit touches in
    `output` beyond those in `source`.

    Example:

    >>> glued_into_words("user %s:", "utilisateur %spour :")
    1
    >>> glued_into_words("%d files", "%dfichiers, %d")
    1
    """

    def sides(text):
        touched = collections.Counter()
        for match in PROTECTED.finditer(text):
            before, after = text[match.start() - 1 : match.start()], text[match.end() :]
            touched[match[0], "before"] += bool(re.match(r"\w", before))
            touched[match[0], "after"] += bool(re.match(r"\w", after))
        return touched

    return sum((sides(output) - sides(source)).values())


def well_formed(text, mode):
    try:
        split_markup(text, mode)
    except ValueError:
        return False
    return True


def _tags(text, mode):
    """How many times each tag (start, end, void, comment) stands in `text`,
    as `split_markup` reads them."""
    _, elements = split_markup(text, mode)
    return collections.Counter(
        tag
        for element in elements
        for tag in (element.start, element.end)
        if tag.startswith("<")
    )


def share(part, whole):
    return round(part / whole, 4) if whole else None


if __name__ == "__main__":
    main()
