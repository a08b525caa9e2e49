"""Imported first by the subpackages that are TensorFlow programs.

The layers and the model run on any Keras 3 backend; the data pipeline
(tf.data, tf-text), the decoders (`tf.while_loop` in a `tf.function`), the
exports (SavedModel), the BLEU callback and plots (Keras callbacks that
write TensorFlow summaries) are TensorFlow programs. Where TensorFlow is not
installed, importing one of them fails with one line that says so, instead
of a traceback ending in "No module named 'tensorflow'".
"""

try:
    import tensorflow  # noqa: F401
except ModuleNotFoundError as error:
    if error.name != "tensorflow":
        raise
    raise ModuleNotFoundError(
        "This part of keras_transformer (data, decoding, export, evaluation, "
        "plots) needs TensorFlow (pip install tensorflow); keras_transformer."
        "layers and keras_transformer.models run on any Keras backend without it.",
        name="tensorflow",
    ) from None
