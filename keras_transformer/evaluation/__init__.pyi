from .bleu import BleuCallback
from .scores import check_bleu_language, corpus_scores, format_scores

__all__ = ["BleuCallback", "check_bleu_language", "corpus_scores", "format_scores"]
