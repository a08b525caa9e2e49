"""Translation quality: sacreBLEU corpus BLEU and chrF, and a Keras callback."""

from keras_transformer.evaluation.bleu import (
    BleuCallback,
    check_bleu_language,
    corpus_scores,
)

__all__ = ["BleuCallback", "check_bleu_language", "corpus_scores"]
