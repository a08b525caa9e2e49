"""keras_transformer: the Transformer of "Attention Is All You Need" for Keras 3.

Layers, the encoder-decoder model, the paper's training recipe and decoding
are imported here; the subpackages `keras_transformer.data` (corpora,
tokenizer, tf.data pipeline), `keras_transformer.evaluation` (BLEU, chrF)
and `keras_transformer.export` (the text-in, text-out translator, its
SavedModel and CTranslate2 exports) are imported on their own, e.g.
`import keras_transformer.data`.

The layers (`keras_transformer.layers`) and the model
(`keras_transformer.models`) need only Keras and run on any Keras 3 backend
(TensorFlow, JAX, PyTorch); the rest is TensorFlow code and says so in one
line where TensorFlow is not installed.
"""

from keras_transformer.lazy import lazy_attributes

__version__ = "0.1.0"

_EXPORTS = {
    "beam_search": "keras_transformer.decoding",
    "decode": "keras_transformer.decoding",
    "greedy_decode": "keras_transformer.decoding",
    "DecoderBlock": "keras_transformer.layers",
    "EncoderBlock": "keras_transformer.layers",
    "FeedForward": "keras_transformer.layers",
    "MultiHeadAttention": "keras_transformer.layers",
    "PositionalEmbedding": "keras_transformer.layers",
    "causal_mask": "keras_transformer.layers",
    "padding_mask_from_ids": "keras_transformer.layers",
    "sinusoidal_encoding": "keras_transformer.layers",
    "Transformer": "keras_transformer.models",
    "TransformerConfig": "keras_transformer.models",
    "build_transformer": "keras_transformer.models",
    "LabelSmoothedCrossEntropy": "keras_transformer.training",
    "MaskedAccuracy": "keras_transformer.training",
    "TransformerSchedule": "keras_transformer.training",
    "transformer_optimizer": "keras_transformer.training",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
