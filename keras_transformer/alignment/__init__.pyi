from .links import alignment_attention, piece_roles, word_links, word_positions
from .pharaoh import alignment_error_rate, format_pharaoh, parse_pharaoh

__all__ = [
    "alignment_attention",
    "alignment_error_rate",
    "format_pharaoh",
    "parse_pharaoh",
    "piece_roles",
    "word_links",
    "word_positions",
]
