"""Translation quality: sacreBLEU corpus BLEU and chrF, and a Keras callback."""

from keras_transformer.evaluation.bleu import BleuCallback, corpus_scores

__all__ = ["BleuCallback", "corpus_scores"]
