"""Imported first by the subpackages that are TensorFlow programs.

The layers, the model and decoding run on any Keras 3 backend; the data
pipeline (tf.data, tf-text), the exports (SavedModel), the BLEU callback
and plots (Keras callbacks that write TensorFlow summaries) are TensorFlow
programs. Where TensorFlow is not
installed, importing one of them fails with one line that says so, instead
of a traceback ending in "No module named 'tensorflow'".
"""

try:
    import tensorflow  # noqa: F401
except ModuleNotFoundError as error:
    if error.name != "tensorflow":
        raise
    raise ModuleNotFoundError(
        "This part of keras_transformer (data, export, evaluation, plots) needs "
        "TensorFlow (pip install tensorflow); keras_transformer.layers, .models "
        "and .decoding run on any Keras backend without it.",
        name="tensorflow",
    ) from None
