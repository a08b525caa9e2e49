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
    `feed_forward_layer_norm` and `feed_forward_dropout`. The feed-forward
    network, layer norms and dropouts are made in `__init__` (the subclasses
    make theirs there, after `feed_forward`), the attention layers in
    `build()`, once d_model is known. That order is the order of `weights`,
    which the optimizer's slots follow (by index, in `.keras` files and
    checkpoints alike); with the order `build()` initializes weights in
    (attention first), it also keeps the random draws of a seeded run, so
    runs and files made before give the same numbers.

    Subclasses list their attention sub-layers in `ATTENTION_NAMES`.
    """

    ATTENTION_NAMES = ()

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
        self.feed_forward = FeedForward(
            self.d_ff,
            activation=self.activation,
            dropout=self.activation_dropout,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name="feed_forward",
        )

    def _make_layer_norm(self, name):
        return keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
        )

    def _make_dropout(self, name):
        return keras.layers.Dropout(self.dropout, dtype=self.dtype_policy, name=name)

    def _make_attention(self, name, query_shape, source_shape):
        """A built `MultiHeadAttention` from (B, T, D) queries over (B, S, D')."""
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
        return attention

    def _build_after_attention(self, inputs_shape):
        """Builds `feed_forward` and the layer norms for inputs (B, T, D)."""
        self.feed_forward.build(inputs_shape)
        for layer_norm in self.layer_norms.values():
            layer_norm.build(inputs_shape)

    # The two views below keep the layout of `.keras` files. Keras saves a
    # sub-layer's weights under the first attribute path that reaches it,
    # visiting public attributes in alphabetical order. Until the sub-layers
    # became plain attributes they lived in these dicts, so files store the
    # attention layers under `attention_layers/multi_head_attention[_1]` and
    # the first layer norm under `layer_norms/layer_normalization` (the other
    # layer norms under their attribute names, which sort first). Visited
    # before `cross_attention` and `self_attention*`, these views make Keras
    # read and write that same layout, so files saved before keep loading
    # (tests/models/test_saved_artifacts.py). TensorFlow checkpoints name
    # sub-layers by their attribute names, the same before and now.

    @property
    def attention_layers(self):
        """The attention sub-layers by name, e.g. `{"self_attention": ...}`."""
        return {name: getattr(self, name) for name in self.ATTENTION_NAMES}

    @property
    def layer_norms(self):
        """The layer norms by sub-layer name, e.g. `{"feed_forward": ...}`."""
        names = (*self.ATTENTION_NAMES, "feed_forward")
        return {name: getattr(self, f"{name}_layer_norm") for name in names}

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
