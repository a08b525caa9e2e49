from .corpora import (
    DING_ALIASES,
    CorpusNotFoundError,
    load_translation_corpus,
    resolve_language_pair,
)
from .corpus_scan import split_pairs
from .ding import (
    DING_PATH,
    assign_split,
    load_ding_pairs,
    source_key,
)
from .ding_parser import (
    parse_line,
    parse_phrases,
    parse_variants,
)
from .parallel_files import (
    dataset_to_lists,
    load_parallel_files,
    load_text_corpus,
    pairs_to_dataset,
)
from .parallel_text import (
    read_pairs,
    read_parallel_files,
    read_tsv,
)
from .pipeline import make_dataset, mix_pairs, model_example
from .tfds_ding import DingDeEn
from .tokenizer import SubwordTokenizer, train_tokenizer

__all__ = [
    "CorpusNotFoundError",
    "DING_ALIASES",
    "DING_PATH",
    "DingDeEn",
    "SubwordTokenizer",
    "assign_split",
    "dataset_to_lists",
    "load_ding_pairs",
    "load_parallel_files",
    "load_text_corpus",
    "load_translation_corpus",
    "make_dataset",
    "mix_pairs",
    "model_example",
    "pairs_to_dataset",
    "parse_line",
    "parse_phrases",
    "parse_variants",
    "read_pairs",
    "read_parallel_files",
    "read_tsv",
    "resolve_language_pair",
    "source_key",
    "split_pairs",
    "train_tokenizer",
]
