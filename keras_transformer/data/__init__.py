"""Data: parallel corpora, the shared subword tokenizer, the tf.data pipeline.

Every corpus loader returns, per split, a `tf.data.Dataset` of
`(source, target)` string pairs; `train_tokenizer` learns one vocabulary for
both languages; `make_dataset` turns pairs into `model.fit` batches.

The names (in `__init__.pyi`) are TensorFlow programs, imported on first
use; the run config reads `checks` before TensorFlow starts.
"""

import lazy_loader

_getattr, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)


def __getattr__(name):
    import keras_transformer.requires_tensorflow  # noqa: F401 (says if TF is missing)

    return _getattr(name)
