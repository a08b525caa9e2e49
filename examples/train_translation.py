"""The main run: train a German-English Transformer offline, report BLEU, export.

Same as `keras-transformer train`; every option of that command works here,
`--config FILE` and `--set section.key=value` too:

    python examples/train_translation.py --epochs 2 --output-dir runs/quick
    python examples/train_translation.py --set training.epochs=2 --print-config
"""

import sys

from keras_transformer.cli import main

if __name__ == "__main__":
    main(["train", *sys.argv[1:]])
