"""One encoder layer: self-attention and a feed-forward network."""

import keras

from keras_transformer.layers.block import TransformerBlock
from keras_transformer.layers.output_specs import symbolic_outputs


@keras.saving.register_keras_serializable(package="keras_transformer")
class EncoderBlock(TransformerBlock):
    """One of the N identical encoder layers of section 3.1.

    Multi-head self-attention, then a position-wise feed-forward network,
    each wrapped as LayerNorm(x + Dropout(Sublayer(x))) (post-norm, as in the
    paper) or x + Dropout(Sublayer(LayerNorm(x))) with `norm_first=True`.
    The model width d_model is the input's width and must be divisible by
    `num_heads`.

    Args:
        num_heads: number of attention heads h.
        d_ff: inner width of the feed-forward network.
        dropout: dropout on each sub-layer's output, in [0, 1).
        attention_dropout: dropout on attention probabilities, in [0, 1).
        activation_dropout: dropout on the feed-forward network's inner
            activations, in [0, 1).
        activation: feed-forward activation, ReLU by default.
        norm_first: pre-norm instead of the paper's post-norm.
        layer_norm_epsilon: epsilon of the layer norms.
        kernel_initializer: initializer of every kernel.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: (B, S, D).
        padding_mask: (B, S), true for real tokens. Defaults to the Keras
            mask attached to `inputs`, if any.
        attention_mask: (B, S, S), true where token s may see token s'.
        return_attention_scores: also return the (B, h, S, S) probabilities.
        training: whether dropout is active.

    Returns:
        (B, S, D), and the attention probabilities if requested (the
        structure `compute_output_shape` gives).

    Example:

    >>> block = EncoderBlock(num_heads=2, d_ff=32)
    >>> x = np.random.rand(2, 5, 16).astype("float32")
    >>> tuple(block(x, padding_mask=np.array([[1] * 5, [1, 1, 1, 0, 0]])).shape)
    (2, 5, 16)
    """

    def build(self, inputs_shape):
        (
            self.self_attention,
            self.self_attention_layer_norm,
            self.self_attention_dropout,
        ) = self._make_attention_sublayer("self_attention", inputs_shape, inputs_shape)
        (
            self.feed_forward,
            self.feed_forward_layer_norm,
            self.feed_forward_dropout,
        ) = self._make_feed_forward_sublayer(inputs_shape)

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        mask=None,
    ):
        padding_mask = mask if padding_mask is None else padding_mask
        x = self._sublayer_inputs(inputs, self.self_attention_layer_norm)
        outputs = self.self_attention(
            x,
            x,
            padding_mask=padding_mask,
            attention_mask=attention_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        if return_attention_scores:
            outputs, scores = outputs  # scores (B, h, S, S)
        outputs = self._sublayer_outputs(
            inputs,
            outputs,
            self.self_attention_layer_norm,
            self.self_attention_dropout,
            training,
        )
        outputs = self._feed_forward_sublayer(outputs, training)  # (B, S, D)
        return (outputs, scores) if return_attention_scores else outputs

    def compute_output_shape(self, inputs_shape, return_attention_scores=False):
        """(B, S, D), and with `return_attention_scores` (B, h, S, S)."""
        if not return_attention_scores:
            return tuple(inputs_shape)
        batch, length = inputs_shape[:2]
        return tuple(inputs_shape), (batch, self.num_heads, length, length)

    def compute_output_spec(self, inputs, *, return_attention_scores=False, **kwargs):
        shapes = self.compute_output_shape(inputs.shape, return_attention_scores)
        return symbolic_outputs(shapes, self.compute_dtype)
