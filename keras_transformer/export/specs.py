"""The inputs of the `Translator`'s serving signatures, in one place.

A signature's inputs are what TF Serving's clients send: their names, types
and shapes are this module's specs, the clipping of the beam settings
is `beam_settings`, and how every signature is traced is `traced`.
"""

import tensorflow as tf

TEXT = tf.TensorSpec([None], tf.string, name="text")
# Pairs of texts: `score`'s and `align`'s.
SOURCE = tf.TensorSpec([None], tf.string, name="source")
TARGET = tf.TensorSpec([None], tf.string, name="target")
BEAM_SIZE = tf.TensorSpec([], tf.int32, name="beam_size")
ALPHA = tf.TensorSpec([], tf.float32, name="alpha")
IDS = tf.TensorSpec([None, None], tf.int32, name="ids")
NUM_RESULTS = tf.TensorSpec([], tf.int32, name="num_results")
MAX_BEAM_SIZE = 64
# The sampling signatures' settings: keras-hub's top-k (top_k > 0) or top-p
# sampler, the temperature that divides the logits, and the draws' seed.
SAMPLING = [
    tf.TensorSpec([], tf.int32, name="top_k"),
    tf.TensorSpec([], tf.float32, name="top_p"),
    tf.TensorSpec([], tf.float32, name="temperature"),
    tf.TensorSpec([], tf.int32, name="seed"),
]
# The controlled signatures' inputs: one value per text, so that TF
# Serving's batcher can put rows with different settings in one batch.
ROW_CONTROLS = [
    TEXT,
    tf.TensorSpec([None], tf.string, name="prefix"),
    tf.TensorSpec([None], tf.float32, name="repetition_penalty"),
    tf.TensorSpec([None], tf.int32, name="no_repeat_ngram_size"),
    tf.TensorSpec([None], tf.int32, name="min_length"),
    tf.TensorSpec([None], tf.bool, name="disable_unk"),
    tf.TensorSpec([None, None], tf.string, name="banned"),
    tf.TensorSpec([None, None], tf.string, name="required"),
]


def traced(*inputs):
    """`tf.function` traced once for the `inputs` specs, without AutoGraph.

    Every loop and branch of decoding is `keras.ops` or `tf.cond` control
    flow already; AutoGraph's conversion of each function a signature calls
    was a third of a fresh export's time (28 s against 18 s for a tiny
    model), and a Python `if` or `for` over a tensor fails the trace
    instead of being converted. Keras's own `ExportArchive` traces its
    endpoints without AutoGraph too.

    Example:

    >>> @traced(TEXT)
    ... def length(text):
    ...     return tf.strings.length(text)
    >>> length(tf.constant(["abc"])).numpy()
    array([3], dtype=int32)
    """
    return tf.function(input_signature=list(inputs), autograph=False)


def beam_settings(beam_size, alpha):
    """A signature's beam size clipped to [1, `MAX_BEAM_SIZE`] and its alpha
    to >= 0."""
    return tf.clip_by_value(beam_size, 1, MAX_BEAM_SIZE), tf.maximum(alpha, 0.0)
