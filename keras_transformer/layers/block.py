"""What the encoder and decoder blocks share: arguments, checks, sub-layers."""

import keras

from keras_transformer.layers.feed_forward import FeedForward
from keras_transformer.layers.multi_head_attention import MultiHeadAttention


class TransformerBlock(keras.layers.Layer):
    """Base of `EncoderBlock` and `DecoderBlock`; not used on its own.

    Subclasses list their attention sub-layers in `ATTENTION_NAMES`; each
    gets a `MultiHeadAttention`, a layer norm and a dropout, and every block
    ends with a `FeedForward` wrapped the same way.
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
            dropout=activation_dropout,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name="feed_forward",
        )
        self.attention_layers = {}  # built in build(), once d_model is known
        self.layer_norms = {}
        self.dropouts = {}
        for name in (*self.ATTENTION_NAMES, "feed_forward"):
            self.layer_norms[name] = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon,
                dtype=self.dtype_policy,
                name=f"{name}_layer_norm",
            )
            self.dropouts[name] = keras.layers.Dropout(
                dropout, dtype=self.dtype_policy, name=f"{name}_dropout"
            )
            self._track_for_checkpoints(self.layer_norms[name])

    def build_sublayers(self, inputs_shape, attention_source_shapes):
        """Builds every sub-layer for inputs of `inputs_shape` (B, T, D).

        `attention_source_shapes` maps each attention name to the shape of
        the sequence it attends over.
        """
        d_model = inputs_shape[-1]
        if d_model % self.num_heads:
            raise ValueError(
                f"The model width d_model={d_model} must be divisible by "
                f"num_heads={self.num_heads}."
            )
        for name in self.ATTENTION_NAMES:
            attention = MultiHeadAttention(
                self.num_heads,
                d_model // self.num_heads,
                dropout=self.attention_dropout,
                kernel_initializer=self.kernel_initializer,
                dtype=self.dtype_policy,
                name=name,
            )
            attention.build(inputs_shape, attention_source_shapes[name])
            self.attention_layers[name] = attention
            self._track_for_checkpoints(attention)
        self.feed_forward.build(inputs_shape)
        for layer_norm in self.layer_norms.values():
            layer_norm.build(inputs_shape)
        self.built = True

    def _track_for_checkpoints(self, layer):
        """Makes `layer`, held in a dict, part of `tf.train.Checkpoint(model)`.

        Keras tracks layers in dicts for its own saving, but hides them from
        TensorFlow's object graph, so a `tf.train.Checkpoint` of the model
        would silently leave their weights out. An attribute named after the
        layer makes it a checkpoint dependency.
        """
        setattr(self, layer.name, layer)

    def residual(self, name, inputs, sublayer, training):
        """Wraps sub-layer `name` in dropout, a residual and layer norm.

        Post-norm, as in the paper (section 5.4):
        LayerNorm(x + Dropout(Sublayer(x))); with `norm_first`:
        x + Dropout(Sublayer(LayerNorm(x))).

        Args:
            name: which sub-layer's norm and dropout to use.
            inputs: (B, T, D).
            sublayer: a callable of the (normed) inputs returning a pair
                `(outputs, extras)`; `extras` (attention scores, a cache) is
                passed through untouched.
            training: whether dropout is active.

        Returns:
            `(outputs, extras)` with outputs (B, T, D).
        """
        layer_norm = self.layer_norms[name]
        normed = layer_norm(inputs) if self.norm_first else inputs
        outputs, extras = sublayer(normed)
        outputs = inputs + self.dropouts[name](outputs, training=training)  # (B, T, D)
        if not self.norm_first:
            outputs = layer_norm(outputs)
        return outputs, extras

    def residual_feed_forward(self, inputs, training):
        """The block's last sub-layer: the feed-forward network, wrapped."""

        def feed_forward(x):
            return self.feed_forward(x, training=training), None

        outputs, _ = self.residual("feed_forward", inputs, feed_forward, training)
        return outputs  # (B, T, D)

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
