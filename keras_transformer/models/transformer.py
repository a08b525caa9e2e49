"""The encoder-decoder Transformer as a functional Keras model."""

import keras
from keras import ops

from keras_transformer.layers.decoder_block import DecoderBlock
from keras_transformer.layers.encoder_block import EncoderBlock
from keras_transformer.layers.masks import padding_mask_from_ids
from keras_transformer.layers.positional_embedding import PositionalEmbedding
from keras_transformer.models.cached_decoding import CachedDecoding
from keras_transformer.models.config import TransformerConfig


@keras.saving.register_keras_serializable(package="keras_transformer")
class Transformer(CachedDecoding, keras.Model):
    """The Transformer of "Attention Is All You Need", as a functional model.

    Inputs are a dict of int token ids, `encoder_inputs` (B, S) and
    `decoder_inputs` (B, T), with 0 as padding; the output is float32 logits
    (B, T, config.output_vocab_size) for the token after each decoder
    position. With
    `config.shared_embeddings` one matrix embeds source and target and is the
    pre-softmax projection (section 3.4).

    Besides `fit`/`predict`, the model exposes what decoding needs:
    `encode` runs the encoder once, `compute_cross_attention_cache` computes
    every decoder layer's keys and values of the encoder output once,
    `init_cache` makes the self-attention caches (the state that changes
    from step to step), and `decode_step` decodes new tokens against them
    (`CachedDecoding`). `full_context_cross_attention` is the attention
    that a model trained to align with full context aligns with. To `fit` or
    `evaluate` under a `tf.distribute` strategy, first call
    `training.fix_distributed_fit(model)` (`from keras_transformer import
    training`; the training recipe does), a workaround for
    keras-team/keras#20585. The model itself imports no training code.

    Build it with `build_transformer(config)`.

    Args:
        config: a `TransformerConfig` (or its dict).
        alignment_output: output `{"logits": ..., "alignment": ...}`: the
            logits and the cross-attention of `config.alignment_layer`,
            every head's, (B, h, T, S) in the compute dtype, to train the
            first `config.alignment_heads` (what `align` reads) toward
            given alignments (`training.GuidedAlignmentLoss`). The weights
            and their checkpoints are the same either way, so those of one
            load into the other.
        **kwargs: base `keras.Model` arguments, e.g. `name`, or `dtype`
            (a dtype policy such as "mixed_float16"), which every sub-layer
            takes; without one they follow the global policy.
    """

    def __init__(self, config, alignment_output=False, **kwargs):
        if isinstance(config, dict):
            config = TransformerConfig.from_dict(config)
        self.config = config
        self.alignment_output = alignment_output
        dtype = kwargs.pop("dtype", None)  # a functional model does not take it
        self._create_layers(dtype)
        encoder_inputs = keras.Input((None,), dtype="int32", name="encoder_inputs")
        decoder_inputs = keras.Input((None,), dtype="int32", name="decoder_inputs")
        encoder_outputs, encoder_padding_mask = self.encode(encoder_inputs)
        # Embedded once: a second pass adds no operation to the graph.
        stack_inputs = (
            self._embed_target(decoder_inputs),
            encoder_outputs,
            encoder_padding_mask,
        )
        aligning = (config.alignment_layer_index,) if alignment_output else ()
        x, scores = self._decoder_stack(*stack_inputs, attention_of=aligning)
        outputs = self._logits(x)  # (B, T, V)
        if aligning and config.full_context_alignment:
            # A second pass, without the causal mask. (The first still
            # returns the layer's scores: Keras takes the outputs of each
            # call of a layer to be as many as its first call's.)
            _, scores = self._decoder_stack(
                *stack_inputs, attention_of=aligning, use_causal_mask=False
            )
        if alignment_output:
            # The block's own output, with no operation after it: the
            # graph's operations, by which checkpoints reach the layers, stay
            # the plain model's.
            (attention,) = scores  # (B, h, T, S)
            outputs = {"logits": outputs, "alignment": attention}
        super().__init__(
            inputs={"encoder_inputs": encoder_inputs, "decoder_inputs": decoder_inputs},
            outputs=outputs,
            **kwargs,
        )
        if dtype is not None:
            self.dtype_policy = dtype

    def __setattr__(self, name, value):
        # On the PyTorch backend a layer is a `torch.nn.Module`, which takes
        # no sub-layer before `Module.__init__`, and the layers are created
        # before `super().__init__` builds the graph that tracks them: until
        # then they are plain attributes (as in keras-hub's `Backbone`).
        if keras.backend.backend() == "torch" and "_modules" not in self.__dict__:
            return object.__setattr__(self, name, value)
        return super().__setattr__(name, value)

    def _create_layers(self, dtype):
        config = self.config

        def embedding(name, vocab_size=config.vocab_size, output_bias=False):
            return PositionalEmbedding(
                vocab_size,
                config.d_model,
                dropout=config.dropout,
                sinusoid_layout=config.sinusoid_layout,
                scale_embedding=config.scale_embedding,
                output_bias=output_bias,
                dtype=dtype,
                name=name,
            )

        block_arguments = dict(
            num_heads=config.num_heads,
            d_ff=config.d_ff,
            dropout=config.dropout,
            attention_dropout=config.attention_dropout,
            activation_dropout=config.activation_dropout,
            activation=config.activation,
            norm_first=config.norm_first,
            layer_norm_epsilon=config.layer_norm_epsilon,
            dtype=dtype,
        )
        if config.shared_embeddings:
            self.source_embedding = self.target_embedding = embedding(
                "shared_embedding", output_bias=config.output_bias
            )
            self.output_projection = None
        else:
            self.source_embedding = embedding("source_embedding")
            self.target_embedding = embedding(
                "target_embedding", config.output_vocab_size
            )
            self.output_projection = keras.layers.Dense(
                config.output_vocab_size, dtype=dtype, name="output_projection"
            )
        self.encoder_blocks = [
            EncoderBlock(**block_arguments, name=f"encoder_block_{i}")
            for i in range(config.num_encoder_layers)
        ]
        self.decoder_blocks = [
            DecoderBlock(**block_arguments, name=f"decoder_block_{i}")
            for i in range(config.num_decoder_layers)
        ]
        self.encoder_layer_norm = self.decoder_layer_norm = None
        if config.norm_first:  # pre-norm stacks end with a layer norm
            self.encoder_layer_norm, self.decoder_layer_norm = (
                keras.layers.LayerNormalization(
                    epsilon=config.layer_norm_epsilon, dtype=dtype, name=name
                )
                for name in ("encoder_layer_norm", "decoder_layer_norm")
            )

    def encode(self, encoder_inputs, training=None):
        """Runs the encoder once.

        Args:
            encoder_inputs: int token ids (B, S), 0 for padding.
            training: whether dropout is active.

        Returns:
            `(encoder_outputs, encoder_padding_mask)`: (B, S, d_model) and
            the boolean (B, S) mask of real source tokens.
        """
        encoder_padding_mask = padding_mask_from_ids(encoder_inputs)  # (B, S)
        x = self.source_embedding(encoder_inputs, training=training)  # (B, S, D)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=encoder_padding_mask, training=training)
        if self.encoder_layer_norm is not None:
            x = self.encoder_layer_norm(x)
        return x, encoder_padding_mask

    def decode(
        self,
        decoder_inputs,
        encoder_outputs,
        encoder_padding_mask,
        training=None,
        return_cross_attention=False,
    ):
        """Teacher-forced decoding of a whole target prefix in one pass.

        Args:
            decoder_inputs: int token ids (B, T), 0 for padding.
            encoder_outputs: (B, S, d_model) from `encode`.
            encoder_padding_mask: (B, S) from `encode`.
            training: whether dropout is active.
            return_cross_attention: also return the cross-attention
                probabilities of every decoder layer and head, float32
                (B, layers, h, T, S): how each target position attends over
                the source pieces, the alignment the paper visualises.

        Returns:
            float32 logits (B, T, vocab_size), and the cross-attention if
            asked.
        """
        layers = range(len(self.decoder_blocks)) if return_cross_attention else ()
        x, scores = self._decoder_stack(
            self._embed_target(decoder_inputs, training),
            encoder_outputs,
            encoder_padding_mask,
            training,
            layers,
        )
        if not return_cross_attention:
            return self._logits(x)
        return self._logits(x), _stacked_float32(scores)

    def _embed_target(self, decoder_inputs, training=None):
        """The decoder blocks' input (B, T, D) and padding mask (B, T)."""
        x = self.target_embedding(decoder_inputs, training=training)  # (B, T, D)
        return x, padding_mask_from_ids(decoder_inputs)

    def _decoder_stack(
        self,
        embedded_target,
        encoder_outputs,
        encoder_padding_mask,
        training=None,
        attention_of=(),
        use_causal_mask=True,
    ):
        """The decoder blocks' output (B, T, D) of an `_embed_target`, and
        the cross-attention (B, h, T, S) of each layer in `attention_of`.

        Without the causal mask (each position sees the whole target: the
        full context that alignments may be read with), only the blocks up
        to the last of `attention_of` run, and the output is None."""
        x, decoder_padding_mask = embedded_target  # (B, T, D), (B, T)
        blocks = self.decoder_blocks
        if not use_causal_mask:
            blocks = blocks[: max(attention_of) + 1]
        cross_attention = []
        for index, block in enumerate(blocks):
            x = block(
                x,
                encoder_outputs,
                decoder_padding_mask=decoder_padding_mask,
                encoder_padding_mask=encoder_padding_mask,
                use_causal_mask=use_causal_mask,
                return_attention_scores=index in attention_of,
                training=training,
            )
            if index in attention_of:
                x, scores = x  # scores (B, h, T, S)
                cross_attention.append(scores)
        return (x if use_causal_mask else None), cross_attention

    def full_context_cross_attention(
        self,
        decoder_inputs,
        encoder_outputs,
        encoder_padding_mask,
        num_layers=None,
        training=None,
    ):
        """The cross-attention of a decoder pass without the causal mask.

        Each target position sees every other, later ones included: the
        full context that a model with `config.full_context_alignment`
        is trained to align with (Garg et al., 2019). Only the first
        `num_layers` blocks run. A translation never reads it.

        Args:
            decoder_inputs: int token ids (B, T), 0 for padding.
            encoder_outputs: (B, S, d_model) from `encode`.
            encoder_padding_mask: (B, S) from `encode`.
            num_layers: how many of the first decoder layers to run; None
                for those up to `config.alignment_layer`.
            training: whether dropout is active.

        Returns:
            float32 (B, num_layers, h, T, S), as `decode` returns the
            cross-attention.

        Example:

        >>> model = build_transformer(TransformerConfig.tiny(vocab_size=20))
        >>> outputs, mask = model.encode(np.array([[5, 6, 2]]))
        >>> attention = model.full_context_cross_attention(
        ...     np.array([[1, 7, 8, 0]]), outputs, mask)
        >>> tuple(attention.shape)  # alignment_layer 0 of 2: one layer
        (1, 1, 4, 4, 3)
        """
        if num_layers is None:
            num_layers = self.config.alignment_layer_index + 1
        _, scores = self._decoder_stack(
            self._embed_target(decoder_inputs, training),
            encoder_outputs,
            encoder_padding_mask,
            training,
            attention_of=range(num_layers),
            use_causal_mask=False,
        )
        return _stacked_float32(scores)

    def _logits(self, decoder_outputs):
        if self.decoder_layer_norm is not None:
            decoder_outputs = self.decoder_layer_norm(decoder_outputs)
        if self.output_projection is None:
            return self.target_embedding(decoder_outputs, reverse=True)  # (B, T, V)
        return ops.cast(self.output_projection(decoder_outputs), "float32")

    def get_config(self):
        # Keras gives a functional model's graph as its config only where
        # the constructor is `keras.Model`'s; to a subclass with its own,
        # like keras-hub's `Backbone`, it gives `Layer.get_config`'s `name`,
        # `trainable` and `dtype`, which `from_config` passes back.
        config = super().get_config()
        config["config"] = self.config.to_dict()
        config["alignment_output"] = self.alignment_output
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def build_transformer(config, name="transformer", alignment_output=False):
    """Builds the encoder-decoder Transformer described by `config`.

    Args:
        config: a `TransformerConfig`.
        name: the model's name.
        alignment_output: also output the attention that aligns (see
            `Transformer`).

    Returns:
        A `Transformer` (a functional `keras.Model`) with inputs
        `{"encoder_inputs": (B, S), "decoder_inputs": (B, T)}` and float32
        logits (B, T, vocab_size).

    Example:

    >>> model = build_transformer(TransformerConfig.tiny(vocab_size=100))
    >>> logits = model({"encoder_inputs": np.array([[5, 6, 7, 2]]),
    ...                 "decoder_inputs": np.array([[1, 8, 9]])})
    >>> tuple(logits.shape)
    (1, 3, 100)
    """
    if not isinstance(config, TransformerConfig):
        raise TypeError(
            "build_transformer expects a TransformerConfig, "
            f"got {type(config).__name__}."
        )
    return Transformer(config, alignment_output=alignment_output, name=name)


def _stacked_float32(scores):
    """Each layer's attention (B, h, T, S) -> float32 (B, layers, h, T, S)."""
    return ops.stack([ops.cast(layer, "float32") for layer in scores], axis=1)
