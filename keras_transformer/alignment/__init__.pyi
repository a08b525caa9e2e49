from .links import (
    alignment_attention,
    piece_roles,
    piece_word_positions,
    word_links,
    word_positions,
)
from .markup import Element, restore_markup, split_markup
from .pharaoh import alignment_error_rate, format_pharaoh, parse_pharaoh
from .spans import protected_spans, without_spans

__all__ = [
    "Element",
    "alignment_attention",
    "alignment_error_rate",
    "format_pharaoh",
    "parse_pharaoh",
    "piece_roles",
    "piece_word_positions",
    "protected_spans",
    "restore_markup",
    "split_markup",
    "without_spans",
    "word_links",
    "word_positions",
]
