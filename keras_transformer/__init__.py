"""keras_transformer: the Transformer of "Attention Is All You Need" for Keras 3.

The subpackages are attributes, each imported when first touched:
`keras_transformer.layers` and `keras_transformer.models` (the layers and
the encoder-decoder model), `training` (the paper's loss, metric, schedule
and optimizer, and `load_model` for saved `.keras` files), `decoding`
(greedy and beam search), `data` (corpora, tokenizer, tf.data pipeline),
`evaluation` (BLEU, chrF), `export` (the text-in, text-out translator, its
SavedModel and CTranslate2 exports), `plots`, `marian` (OPUS-MT
checkpoints), `recipe` (a training run) and `serving` (TF Serving's REST
API over an export, `keras-transformer serve`). The most used names are
attributes of the package too, e.g. `keras_transformer.MultiHeadAttention`
and `keras_transformer.load_model`.

    import keras_transformer as kt

    model = kt.models.build_transformer(kt.models.TransformerConfig.tiny(50))

Nothing is imported until a name is read, so the command line's `--help`
starts neither Keras nor TensorFlow. The layers and the model need only
Keras and run on any Keras 3 backend (TensorFlow, JAX, PyTorch), and so
does decoding; data, export, evaluation's callback and plots are TensorFlow programs
(evaluation's corpus scores need only sacreBLEU).

The names are listed in `__init__.pyi`, which type checkers read and from
which `lazy_loader` (SPEC 1) makes this package's `__getattr__`.
"""

import lazy_loader

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
