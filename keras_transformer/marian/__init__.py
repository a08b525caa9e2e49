"""Hugging Face Marian (OPUS-MT) checkpoints as this package's models.

`import_marian(hf_dir, output_dir)` writes a run folder that every command
takes (`keras-transformer import-marian`); `vocabulary` says how Marian's
ids become ours, `checkpoint` how its config and weights do.
"""

from keras_transformer.lazy import lazy_attributes

_EXPORTS = {
    "import_marian": "keras_transformer.marian.run",
    "load_marian": "keras_transformer.marian.run",
    "MarianTokenizer": "keras_transformer.marian.tokenizer",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
