"""Data: parallel corpora, the shared subword tokenizer, the tf.data pipeline.

Every corpus loader returns, per split, a `tf.data.Dataset` of
`(source, target)` string pairs; `train_tokenizer` learns one vocabulary for
both languages; `make_dataset` turns pairs into `model.fit` batches.
"""

import keras_transformer.requires_tensorflow  # noqa: F401 (says if TF is missing)
from keras_transformer.data.corpora import (
    DING_ALIASES,
    CorpusNotFoundError,
    load_translation_corpus,
    resolve_language_pair,
)
from keras_transformer.data.corpus_scan import split_pairs
from keras_transformer.data.ding import (
    DING_PATH,
    assign_split,
    load_ding_pairs,
    source_key,
)
from keras_transformer.data.ding_parser import (
    parse_line,
    parse_phrases,
    parse_variants,
)
from keras_transformer.data.parallel_files import (
    dataset_to_lists,
    load_parallel_files,
    load_text_corpus,
    pairs_to_dataset,
)
from keras_transformer.data.parallel_text import (
    read_pairs,
    read_parallel_files,
    read_tsv,
)
from keras_transformer.data.pipeline import make_dataset, mix_pairs, model_example
from keras_transformer.data.tfds_ding import DingDeEn
from keras_transformer.data.tokenizer import SubwordTokenizer, train_tokenizer

__all__ = [
    "DING_ALIASES",
    "DING_PATH",
    "CorpusNotFoundError",
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
