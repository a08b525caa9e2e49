"""Writes the Ding corpus as plain parallel text files, as a user's corpus would be.

    python examples/write_ding_files.py data/ding
    keras-transformer train --train-files data/ding/train.de data/ding/train.en \
        --valid-files data/ding/valid.de data/ding/valid.en \
        --test-files data/ding/test.de data/ding/test.en

writes `train`, `valid` and `test` files, one sentence per line, `.de` and
`.en`. `--train-share 0.25` keeps a random quarter of the training pairs
(seed 0), and `--with-phrases` adds Ding's 80,401 phrase entries to them:
the corpora of different sizes that the training length was measured on.
"""

import argparse
import os
import random

from keras_transformer.data import dataset_to_lists, load_translation_corpus


def write_pairs(folder, name, sources, targets):
    for language, lines in (("de", sources), ("en", targets)):
        with open(os.path.join(folder, f"{name}.{language}"), "w") as file:
            file.writelines(line + "\n" for line in lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--train-share", type=float, default=1.0)
    parser.add_argument("--with-phrases", action="store_true")
    args = parser.parse_args(argv)
    if not 0.0 < args.train_share <= 1.0:
        parser.error(f"--train-share must be in (0, 1], got {args.train_share}.")
    train = "train+phrases" if args.with_phrases else "train"
    corpus = load_translation_corpus(
        "ding", "de", "en", splits=("train", train, "validation", "test")
    )
    os.makedirs(args.folder, exist_ok=True)
    sentences = list(zip(*dataset_to_lists(corpus["train"]), strict=True))
    kept = random.Random(0).sample(sentences, round(args.train_share * len(sentences)))
    if args.with_phrases:
        kept += list(zip(*dataset_to_lists(corpus[train]), strict=True))[
            len(sentences) :
        ]
    write_pairs(args.folder, "train", *zip(*kept, strict=True))
    for split, name in (("validation", "valid"), ("test", "test")):
        write_pairs(args.folder, name, *dataset_to_lists(corpus[split]))
    print(
        f"Wrote {len(kept):,} training pairs and the Ding validation and test "
        f"splits to {args.folder}"
    )


if __name__ == "__main__":
    main()
