"""The main job: train a German-English Transformer offline, report BLEU, export.

Same as `keras-transformer train`; every option of that command works here:

    python examples/train_translation.py --epochs 2 --output-dir runs/quick
"""

import sys

from keras_transformer.cli import main

if __name__ == "__main__":
    main(["train", *sys.argv[1:]])
