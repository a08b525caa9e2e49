"""Translation quality: sacreBLEU corpus BLEU, chrF and TER, and a Keras callback."""

from keras_transformer.evaluation.bleu import (
    BleuCallback,
    check_bleu_language,
    corpus_scores,
    format_scores,
)

__all__ = ["BleuCallback", "check_bleu_language", "corpus_scores", "format_scores"]
