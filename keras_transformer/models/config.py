"""Hyper-parameters of a Transformer, validated, with the paper's presets."""

import dataclasses

PRESETS = ("tiny", "small", "base", "big")
# Settings that earlier versions kept here, and a config saved then (in a
# .keras file or a run's model_config.json) still holds: version 1's training
# settings, and max_length, a data and decoding limit (the training recipe's
# `model.max_length`, the decoders' and the Translator's `max_length`).
_NOT_ARCHITECTURE = ("label_smoothing", "warmup_steps", "max_length")


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Hyper-parameters of an encoder-decoder Transformer.

    The architecture only; how it trains (label smoothing, the schedule) is
    the training recipe's, and how long its inputs and outputs may be is the
    data pipeline's and the decoders' (`max_length`: the recipe's
    `model.max_length`, `decode`'s and the `Translator`'s argument; the
    sinusoidal positions work for any length). The presets (`PRESETS`)
    `base` and `big` are the paper's models (Table 3); `small` and `tiny`
    train on a CPU. Any field can be overridden in a preset:
    `TransformerConfig.base(37000, dropout=0.2)`.

    Args:
        vocab_size: size of the (shared) vocabulary; id 0 is padding.
        d_model: model width.
        num_heads: attention heads h; must divide `d_model`.
        d_ff: inner width of the feed-forward networks.
        num_encoder_layers: encoder layers N.
        num_decoder_layers: decoder layers N.
        dropout: P_drop, applied to embeddings and sub-layer outputs.
        attention_dropout: dropout on attention probabilities.
        activation_dropout: dropout on the feed-forward networks' inner
            activations.
        norm_first: pre-norm blocks (and a final layer norm) instead of the
            paper's post-norm.
        shared_embeddings: one embedding matrix for source, target and the
            pre-softmax projection (section 3.4); otherwise three separate
            weights.
        activation: feed-forward activation.
        layer_norm_epsilon: epsilon of every layer norm.
        sinusoid_layout: where the position encoding puts its sines and
            cosines: "interleaved" (the paper's) or "split" (Marian's), see
            `layers.sinusoidal_encoding`.
        scale_embedding: multiply embeddings by sqrt(d_model) (section 3.4).
        output_bias: a bias on the logits of the tied pre-softmax
            projection (Marian's `final_logits_bias`); needs
            `shared_embeddings` (a separate projection has its own bias).
        target_vocab_size: size of a separate target vocabulary; None when
            source and target share `vocab_size`. Needs `shared_embeddings`
            False.

    Example:

    >>> config = TransformerConfig.base(vocab_size=37000)
    >>> config.d_model, config.num_heads, config.d_ff
    (512, 8, 2048)
    """

    vocab_size: int
    d_model: int = 512
    num_heads: int = 8
    d_ff: int = 2048
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    norm_first: bool = False
    shared_embeddings: bool = True
    activation: str = "relu"
    layer_norm_epsilon: float = 1e-6
    sinusoid_layout: str = "interleaved"
    scale_embedding: bool = True
    output_bias: bool = False
    target_vocab_size: int | None = None

    def __post_init__(self):
        positive = (
            "vocab_size",
            "d_model",
            "num_heads",
            "d_ff",
            "num_encoder_layers",
            "num_decoder_layers",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by "
                f"num_heads={self.num_heads}."
            )
        for name in (
            "dropout",
            "attention_dropout",
            "activation_dropout",
        ):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value!r}.")
        if self.layer_norm_epsilon <= 0:
            raise ValueError(
                f"layer_norm_epsilon must be > 0, got {self.layer_norm_epsilon!r}."
            )
        if self.output_bias and not self.shared_embeddings:
            raise ValueError(
                "output_bias needs shared_embeddings: a separate output "
                "projection has its own bias."
            )
        if self.target_vocab_size is not None:
            value = self.target_vocab_size
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"target_vocab_size must be a positive int or None, got {value!r}."
                )
            if self.shared_embeddings:
                raise ValueError(
                    "target_vocab_size needs shared_embeddings False: one "
                    "matrix cannot embed two vocabularies."
                )

    @classmethod
    def base(cls, vocab_size, **overrides):
        """The paper's base model: N=6, d=512, d_ff=2048, h=8, P_drop=0.1."""
        return cls(vocab_size=vocab_size).replace(**overrides)

    @classmethod
    def big(cls, vocab_size, **overrides):
        """The paper's big model: N=6, d=1024, d_ff=4096, h=16, P_drop=0.3."""
        values = dict(d_model=1024, num_heads=16, d_ff=4096, dropout=0.3)
        return cls(vocab_size=vocab_size, **values).replace(**overrides)

    @classmethod
    def small(cls, vocab_size, **overrides):
        """A CPU-sized model: N=3, d=256, d_ff=1024, h=4, pre-norm.

        Pre-norm (`norm_first`) trains stably at a higher learning rate, and
        attention dropout 0.1 (with the job's weight decay) regularises it
        for small corpora (docs/experiments.md).
        """
        values = dict(
            d_model=256,
            num_heads=4,
            d_ff=1024,
            attention_dropout=0.1,
            num_encoder_layers=3,
            num_decoder_layers=3,
            norm_first=True,
        )
        return cls(vocab_size=vocab_size, **values).replace(**overrides)

    @classmethod
    def tiny(cls, vocab_size, **overrides):
        """A model for tests and toy tasks: N=2, d=128, d_ff=512, h=4."""
        values = dict(
            d_model=128,
            num_heads=4,
            d_ff=512,
            num_encoder_layers=2,
            num_decoder_layers=2,
        )
        return cls(vocab_size=vocab_size, **values).replace(**overrides)

    @property
    def output_vocab_size(self):
        """The target vocabulary's size: the logits' last axis."""
        return self.target_vocab_size or self.vocab_size

    def replace(self, **changes):
        """A copy with `changes` applied (and validated).

        Example:

        >>> TransformerConfig.tiny(100).replace(d_modle=64)
        Traceback (most recent call last):
        ...
        ValueError: Unknown TransformerConfig field 'd_modle'; the fields are ...
        """
        _check_field_names(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        """The config of `to_dict`'s values; the settings that earlier
        versions saved here (version 1's training settings, `max_length`)
        are left out.

        Example:

        >>> config = TransformerConfig.from_dict({"vocab_size": 9, "max_length": 64})
        >>> config.d_model, hasattr(config, "max_length")
        (512, False)
        """
        values = {k: v for k, v in values.items() if k not in _NOT_ARCHITECTURE}
        _check_field_names(values)
        return cls(**values)


def _check_field_names(names):
    """Raises ValueError naming any of `names` that is not a config field."""
    fields = [field.name for field in dataclasses.fields(TransformerConfig)]
    for name in names:
        if name not in fields:
            raise ValueError(
                f"Unknown TransformerConfig field {name!r}; the fields are "
                f"{', '.join(fields)}."
            )
