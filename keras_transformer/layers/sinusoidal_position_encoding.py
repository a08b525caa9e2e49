"""The sinusoidal position encoding of the paper, in two channel layouts."""

import math

import keras
import numpy as np
from keras import ops

SINUSOID_LAYOUTS = ("interleaved", "split")


def sinusoidal_encoding(
    length, d_model, start_index=0, dtype="float32", layout="interleaved"
):
    """The position encoding of the paper (section 3.5), for any length.

    PE(pos, 2i) = sin(pos / 10000^(2i / d_model)) and
    PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model)), interleaved: even
    channels hold sines and odd channels cosines. With `layout="split"`
    the same waves are laid out as Marian (and fairseq, tensor2tensor) lay
    them: the sines in the first ceil(d_model / 2) channels, the cosines in
    the rest. Nothing is tabulated, so any length and any `start_index`
    work. The angles are computed in float32 whatever `dtype` is, so that
    positions stay exact in float16 and bfloat16.

    Args:
        length: number of positions (int or scalar tensor).
        d_model: number of channels.
        start_index: position of the first row (int or scalar tensor).
        dtype: dtype of the result.
        layout: "interleaved" or "split" (see above).

    Returns:
        A (length, d_model) tensor.

    Example:

    >>> encoding = sinusoidal_encoding(50, 16)
    >>> tuple(encoding.shape)
    (50, 16)
    >>> split = sinusoidal_encoding(50, 16, layout="split")
    >>> bool(np.allclose(split[:, :8], encoding[:, 0::2]))
    True
    """
    if layout not in SINUSOID_LAYOUTS:
        raise ValueError(f"layout must be one of {SINUSOID_LAYOUTS}, got {layout!r}.")
    channels = np.arange(d_model)  # (D,), constants: no ops per call
    if layout == "interleaved":
        pair_index = channels // 2 * 2  # 2i for channels 2i and 2i + 1
        is_sine = channels % 2 == 0
    else:
        sines = (d_model + 1) // 2
        is_sine = channels < sines
        pair_index = 2 * np.where(is_sine, channels, channels - sines)
    inverse_frequency = np.exp(pair_index * (-math.log(10000.0) / d_model))  # (D,)
    positions = ops.cast(ops.arange(length) + start_index, "float32")  # (L,)
    angles = ops.expand_dims(positions, 1) * inverse_frequency.astype("float32")
    encoding = ops.where(is_sine, ops.sin(angles), ops.cos(angles))  # (L, D)
    return ops.cast(encoding, dtype)


@keras.saving.register_keras_serializable(package="keras_transformer")
class SinusoidalPositionEncoding(keras.layers.Layer):
    """The sinusoidal position encoding of section 3.5, as a layer.

    Called on embedded tokens (B, T, D), it returns the encoding of their
    positions `start_index, ..., start_index + T - 1`, broadcast to the
    inputs' shape, to be added to them (`sinusoidal_encoding` gives the
    formula). It has no weights and no length limit.

    keras-hub's `SinePositionEncoding` computes the paper's interleaved
    layout in the compute dtype. This layer also has Marian's "split"
    layout (all sines, then all cosines), which imported OPUS-MT models
    need, and computes the angles in float32 under any dtype policy, so
    that late positions keep their value in float16 and bfloat16.

    Args:
        layout: "interleaved" (the paper's, the default) or "split"
            (Marian's), see `sinusoidal_encoding`.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: embedded tokens (B, T, D); only their shape is read.
        start_index: position of the first token (an int or scalar
            tensor), so that incremental decoding encodes token t at t.

    Returns:
        The encoding (B, T, D), in the layer's compute dtype.

    Example:

    >>> layer = SinusoidalPositionEncoding()
    >>> embedded = np.zeros((2, 5, 16), "float32")
    >>> tuple(layer(embedded).shape)
    (2, 5, 16)
    >>> step = layer(embedded[:, :1], start_index=4)
    >>> bool(np.allclose(step[:, 0], layer(embedded)[:, 4]))
    True
    """

    def __init__(self, layout="interleaved", **kwargs):
        super().__init__(**kwargs)
        if layout not in SINUSOID_LAYOUTS:
            raise ValueError(
                f"layout must be one of {SINUSOID_LAYOUTS}, got {layout!r}."
            )
        self.layout = layout
        self.supports_masking = True  # a Keras mask on `inputs` passes through
        self.built = True

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)  # (B, T, D)
        encoding = sinusoidal_encoding(
            shape[-2], inputs.shape[-1], start_index, self.compute_dtype, self.layout
        )  # (T, D)
        return ops.broadcast_to(encoding, shape)  # (B, T, D)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update({"layout": self.layout})
        return config
