from .run import import_marian, load_marian
from .tokenizer import MarianTokenizer

__all__ = ["MarianTokenizer", "import_marian", "load_marian"]
