"""The encoder-decoder Transformer as a functional Keras model."""

import keras
from keras import ops

from keras_transformer.layers.decoder_block import DecoderBlock
from keras_transformer.layers.encoder_block import EncoderBlock
from keras_transformer.layers.masks import padding_mask_from_ids
from keras_transformer.layers.positional_embedding import PositionalEmbedding
from keras_transformer.models.config import TransformerConfig


@keras.saving.register_keras_serializable(package="keras_transformer")
class Transformer(keras.Model):
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
    from step to step), and `decode_step` decodes new tokens against them. To `fit` or
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
        layer = config.alignment_layer_index
        x, scores = self._decoder_stack(
            decoder_inputs,
            encoder_outputs,
            encoder_padding_mask,
            attention_of=(layer,) if alignment_output else (),
        )
        outputs = self._logits(x)  # (B, T, V)
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
            decoder_inputs, encoder_outputs, encoder_padding_mask, training, layers
        )
        if not return_cross_attention:
            return self._logits(x)
        scores = [ops.cast(layer, "float32") for layer in scores]
        return self._logits(x), ops.stack(scores, axis=1)

    def _decoder_stack(
        self,
        decoder_inputs,
        encoder_outputs,
        encoder_padding_mask,
        training=None,
        attention_of=(),
    ):
        """The decoder blocks' output (B, T, D), and the cross-attention
        (B, h, T, S) of each layer in `attention_of`."""
        decoder_padding_mask = padding_mask_from_ids(decoder_inputs)  # (B, T)
        x = self.target_embedding(decoder_inputs, training=training)  # (B, T, D)
        cross_attention = []
        for index, block in enumerate(self.decoder_blocks):
            x = block(
                x,
                encoder_outputs,
                decoder_padding_mask=decoder_padding_mask,
                encoder_padding_mask=encoder_padding_mask,
                return_attention_scores=index in attention_of,
                training=training,
            )
            if index in attention_of:
                x, scores = x  # scores (B, h, T, S)
                cross_attention.append(scores)
        return x, cross_attention

    def compute_cross_attention_cache(self, encoder_outputs):
        """Every decoder layer's keys and values of the encoder output.

        Fixed for a source item while its target decodes: computed once,
        with one row per item. The token rows of `decode_step` may be K per
        item (beam k of item b at row b * K + k, `rows_per_item=K`).

        Args:
            encoder_outputs: (B, S, d_model) from `encode`.

        Returns:
            A tuple of `(keys, values)` pairs, one per decoder layer, each
            (B, h, S, d_model / h).
        """
        return tuple(
            block.compute_cross_attention_cache(encoder_outputs)
            for block in self.decoder_blocks
        )

    def init_cache(self, batch_size, max_length=None):
        """Empty self-attention caches: the state `decode_step` updates.

        Each decoder layer's self-attention makes its own
        (`DecoderBlock.empty_self_attention_cache`), so that its shapes and
        dtype have one owner.

        Args:
            batch_size: B, the rows decoded (an int or scalar tensor).
            max_length: None for caches of length 0 that each step extends
                (`decode_step(cache_update="append")`), or the most target
                tokens for buffers of that length that each step writes in
                place (`cache_update="write"`, the fixed shapes XLA needs).

        Returns:
            A tuple of `(keys, values)` pairs, one per decoder layer, each
            (B, h, L, d_model / h) with L = 0 or `max_length`, in the
            model's compute dtype.

        Example:

        >>> model = build_transformer(TransformerConfig.tiny(vocab_size=100))
        >>> cache = model.init_cache(batch_size=3, max_length=10)
        >>> len(cache) == model.config.num_decoder_layers
        True
        >>> [tuple(part.shape) for part in cache[0]]
        [(3, 4, 10, 32), (3, 4, 10, 32)]
        """
        length = 0 if max_length is None else max_length
        return tuple(
            block.empty_self_attention_cache(batch_size, length)
            for block in self.decoder_blocks
        )

    def decode_step(
        self,
        token_ids,
        cache,
        index,
        cross_attention_cache,
        encoder_padding_mask,
        cache_update="append",
        rows_per_item=1,
    ):
        """Decodes `token_ids` at positions `index, index + 1, ...` with a cache.

        Each call costs only the new tokens: their keys and values enter
        the cache and earlier ones are read back.

        Args:
            token_ids: int (B', t), usually t = 1; B' = B * `rows_per_item`
                rows for B source items.
            cache: from `init_cache` or a previous `decode_step`, B' rows.
            index: int or scalar tensor, position of `token_ids[:, 0]`.
            cross_attention_cache: from `compute_cross_attention_cache`, B
                rows.
            encoder_padding_mask: (B, S) from `encode`.
            cache_update: "append" for caches of `index` positions that
                grow by t, "write" for buffers written in place (see
                `init_cache`).
            rows_per_item: K, the number of consecutive rows of `token_ids`
                (and of `cache`) that share one source item, e.g. beam
                search's beams (beam k of item b at row b * K + k); an int,
                or a scalar int tensor outside `jax.jit`. See `DecoderBlock`.

        Returns:
            `(logits, cache)`: float32 (B', t, vocab_size) and the updated
            cache.
        """
        x = self.target_embedding(token_ids, start_index=index)  # (B', t, D)
        new_cache = []
        for block, self_cache, cross_cache in zip(
            self.decoder_blocks, cache, cross_attention_cache, strict=True
        ):
            x, self_cache = block(
                x,
                encoder_padding_mask=encoder_padding_mask,
                self_attention_cache=self_cache,
                cross_attention_cache=cross_cache,
                cache_index=index,
                cache_update=cache_update,
                rows_per_item=rows_per_item,
            )
            new_cache.append(self_cache)
        return self._logits(x), tuple(new_cache)

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
