"""Translation quality: sacreBLEU corpus BLEU, chrF and TER, and a Keras callback."""

import keras_transformer.requires_tensorflow  # noqa: F401 (says if TF is missing)
from keras_transformer.evaluation.bleu import (
    BleuCallback,
    check_bleu_language,
    corpus_scores,
    format_scores,
)

__all__ = ["BleuCallback", "check_bleu_language", "corpus_scores", "format_scores"]
