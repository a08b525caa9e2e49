"""What the encoder and decoder blocks share: arguments, checks, sub-layers."""

import keras

from keras_transformer.layers.feed_forward import FeedForward
from keras_transformer.layers.multi_head_attention import MultiHeadAttention


class TransformerBlock(keras.layers.Layer):
    """Base of `EncoderBlock` and `DecoderBlock`; not used on its own.

    It holds the arguments the two share and makes their sub-layers. Each
    attention sub-layer (`self_attention`, and `cross_attention` in the
    decoder) comes with a layer norm and a dropout (`self_attention_layer_norm`,
    `self_attention_dropout`, ...), and every block ends with `feed_forward`,
    `feed_forward_layer_norm` and `feed_forward_dropout`. The sub-layers are
    made in `build()`, once d_model is known, in the order `call()` uses
    them; that is the order of the block's `weights`.
    """

    def __init__(
        self,
        num_heads,
        d_ff,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        activation="relu",
        norm_first=False,
        layer_norm_epsilon=1e-6,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(num_heads) < 1:
            raise ValueError(f"num_heads must be >= 1, got {num_heads}.")
        for name, rate in (
            ("dropout", dropout),
            ("attention_dropout", attention_dropout),
            ("activation_dropout", activation_dropout),
        ):
            if not 0.0 <= rate < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {rate}.")
        self.num_heads = int(num_heads)
        self.d_ff = int(d_ff)
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation_dropout = activation_dropout
        self.activation = keras.activations.get(activation)
        self.norm_first = norm_first
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.supports_masking = True

    def _make_attention_sublayer(self, name, query_shape, source_shape):
        """`name`, `name_layer_norm` and `name_dropout`, built.

        The attention runs (B, T, D) queries over (B, S, D') sources.
        """
        d_model = query_shape[-1]
        if d_model % self.num_heads:
            raise ValueError(
                f"The model width d_model={d_model} must be divisible by "
                f"num_heads={self.num_heads}."
            )
        attention = MultiHeadAttention(
            self.num_heads,
            d_model // self.num_heads,
            dropout=self.attention_dropout,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name=name,
        )
        attention.build(query_shape, source_shape)
        return (
            attention,
            self._make_layer_norm(f"{name}_layer_norm", query_shape),
            self._make_dropout(f"{name}_dropout"),
        )

    def _make_feed_forward_sublayer(self, inputs_shape):
        """`feed_forward`, its layer norm and dropout, built for (B, T, D)."""
        feed_forward = FeedForward(
            self.d_ff,
            activation=self.activation,
            dropout=self.activation_dropout,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name="feed_forward",
        )
        feed_forward.build(inputs_shape)
        return (
            feed_forward,
            self._make_layer_norm("feed_forward_layer_norm", inputs_shape),
            self._make_dropout("feed_forward_dropout"),
        )

    def _make_layer_norm(self, name, inputs_shape):
        layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
        )
        layer_norm.build(inputs_shape)
        return layer_norm

    def _make_dropout(self, name):
        return keras.layers.Dropout(self.dropout, dtype=self.dtype_policy, name=name)

    def _sublayer_inputs(self, inputs, layer_norm):
        """What a sub-layer sees: LayerNorm(x) with `norm_first`, else x."""
        return layer_norm(inputs) if self.norm_first else inputs

    def _sublayer_outputs(self, inputs, outputs, layer_norm, dropout, training):
        """The residual around a sub-layer, as in section 5.4.

        Post-norm, as in the paper: LayerNorm(x + Dropout(Sublayer(x)));
        with `norm_first`: x + Dropout(Sublayer(LayerNorm(x))).
        """
        outputs = inputs + dropout(outputs, training=training)  # (B, T, D)
        return outputs if self.norm_first else layer_norm(outputs)

    def _feed_forward_sublayer(self, inputs, training):
        """The block's last sub-layer: the feed-forward network, wrapped."""
        x = self._sublayer_inputs(inputs, self.feed_forward_layer_norm)
        return self._sublayer_outputs(
            inputs,
            self.feed_forward(x, training=training),
            self.feed_forward_layer_norm,
            self.feed_forward_dropout,
            training,
        )  # (B, T, D)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "d_ff": self.d_ff,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "activation_dropout": self.activation_dropout,
                "activation": keras.activations.serialize(self.activation),
                "norm_first": self.norm_first,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
