"""A parallel corpus from the gettext catalogues installed on this machine.

Debian packages install their translated messages as `.mo` files under
/usr/share/locale/<language>/LC_MESSAGES/: English source strings and their
translations, written by people. This writes the English-<language> pairs
of every installed catalogue as train / valid / test files, for trying the
recipe on a language pair other than Ding's German-English, offline:

    python benchmarks/gettext_corpus.py data/gettext-en-fr --language fr
    python benchmarks/translation_quality.py \\
        --train-files data/gettext-en-fr/train.en data/gettext-en-fr/train.fr ...

The pairs depend on the packages installed, so the script prints how many
catalogues it read. Message contexts are dropped, spacing is normalised,
untranslated and plural messages are skipped, and each English message
(ignoring case) is kept once, so no test source appears in training.
"""

import argparse
import gettext
import glob
import json
import os
import random


def read_catalogues(language):
    """The (English, translation) pairs of the installed catalogues."""
    paths = sorted(glob.glob(f"/usr/share/locale/{language}/LC_MESSAGES/*.mo"))
    pairs, seen, read = [], set(), 0
    for path in paths:
        try:
            with open(path, "rb") as file:
                catalogue = gettext.GNUTranslations(file)._catalog
        except (OSError, UnicodeDecodeError):  # a bad or non-UTF-8 catalogue
            continue
        read += 1
        for key, value in catalogue.items():
            if not isinstance(key, str) or not isinstance(value, str):
                continue  # plural forms
            source = " ".join(key.split("\x04")[-1].split())  # context dropped
            target = " ".join(value.split())
            if not source or not target or source == target:
                continue
            if len(source) > 300 or source.lower() in seen:
                continue
            seen.add(source.lower())
            pairs.append((source, target))
    return pairs, read


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--language", default="fr")
    parser.add_argument("--train-pairs", type=int, default=30_000)
    parser.add_argument("--held-out-pairs", type=int, default=1_000)
    args = parser.parse_args()
    pairs, read = read_catalogues(args.language)
    random.Random(0).shuffle(pairs)
    held = args.held_out_pairs
    splits = {
        "test": pairs[:held],
        "valid": pairs[held : 2 * held],
        "train": pairs[2 * held : 2 * held + args.train_pairs],
    }
    os.makedirs(args.folder, exist_ok=True)
    for name, part in splits.items():
        for side, language in ((0, "en"), (1, args.language)):
            with open(os.path.join(args.folder, f"{name}.{language}"), "w") as file:
                file.writelines(pair[side] + "\n" for pair in part)
    sizes = {name: len(part) for name, part in splits.items()}
    print(json.dumps({"catalogues": read, "pairs": len(pairs), **sizes}))


if __name__ == "__main__":
    main()
