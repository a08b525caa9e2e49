"""Hyper-parameters of a Transformer, validated, with the paper's presets."""

import dataclasses
import functools

PRESETS = ("tiny", "small", "base", "big")
# Where word alignments are read by default: the penultimate decoder layer
# (None; the only one of a one-layer decoder), all its heads (0), measured
# best for a model not trained to align (benchmarks/alignment_quality.py),
# as Garg et al. (2019) found.
ALIGNMENT_LAYER = None
ALIGNMENT_HEADS = 0
# Guided alignment training (Garg et al.) trains one head of that layer by
# default, in the causal pass: training it with full context (a second pass
# of the decoder layers up to that one) aligned no better at weight 0.1, and
# 7 points of AER better at 1.0 but with test BLEU 0.9 lower (one run).
# Its loss weighs as much as the translation's: at 1.0 the head aligned far
# better than at Marian's 0.1 (fairseq's is 0.05), with BLEU as good
# (benchmarks/README.md).
GUIDED_ALIGNMENT_HEADS = 1
GUIDED_FULL_CONTEXT = False
GUIDED_ALIGNMENT_WEIGHT = 1.0
# Settings that were fields once, and where each went. A config saved then (in
# a .keras file or a run folder's model_config.json) still holds them:
# `TransformerConfig.from_dict` drops them; the constructor, the presets and
# `replace` refuse them, saying where they went.
MOVED_SETTINGS = {
    "max_length": "the longest output is an argument of decoding, "
    "keras_transformer.decoding.decode(..., max_length=) and "
    "keras_transformer.export.Translator(..., max_length=); a training run's "
    "is its model.max_length (--max-length)",
    "label_smoothing": "it is the loss's, keras_transformer.training."
    "LabelSmoothedCrossEntropy(label_smoothing=); a training run's is its "
    "training.label_smoothing (--label-smoothing)",
    "warmup_steps": "it is the schedule's, keras_transformer.training."
    "transformer_optimizer(d_model, warmup_steps=); a training run's is its "
    "training.warmup_steps (--warmup-steps)",
}


def _refusing_moved_settings(cls):
    """`cls` with a constructor that says where a setting of `MOVED_SETTINGS`
    went, instead of Python's bare "unexpected keyword argument"; the
    dataclass's own constructor (and its signature) does the rest."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        moved = [name for name in kwargs if name in MOVED_SETTINGS]
        if moved:
            raise TypeError(_unknown_fields_message(moved))
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


@_refusing_moved_settings
@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Hyper-parameters of an encoder-decoder Transformer.

    The architecture only; how it trains (label smoothing, the schedule) is
    the training recipe's, and how long its inputs and outputs may be is the
    data pipeline's and the decoders' (`max_length`: the recipe's
    `model.max_length`, `decode`'s and the `Translator`'s argument; the
    sinusoidal positions work for any length). These settings were fields
    once (`MOVED_SETTINGS`): the constructor, the presets and `replace`
    refuse them, saying where they went, and `from_dict` drops them from a
    config saved then. The presets (`PRESETS`) `base` and `big` are the
    paper's models (Table 3); `small` and `tiny` train on a CPU. Any field
    can be overridden in a preset: `TransformerConfig.base(37000, dropout=0.2)`.

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
        alignment_layer: the decoder layer whose cross-attention gives word
            alignments (`keras_transformer.alignment`), an index from 0
            (-1: the last layer, -2 the one before); fairseq's and
            CTranslate2's setting of the same name. None (the default):
            the penultimate layer, measured best for a model not trained
            to align (the only layer of a one-layer decoder);
            `alignment_layer_index` resolves it.
        alignment_heads: how many of that layer's first heads to average
            for them; 0 for all (fairseq's and CTranslate2's setting).
        full_context_alignment: read alignments (and train them, with
            guided alignment) from a decoder pass without the causal mask,
            up to `alignment_layer`: each target position then sees the
            whole target, the piece it aligns included (Garg et al.'s full
            context, fairseq's `--full-context-alignment`). Only a model
            trained so aligns well so. Translation is unchanged.

    Example:

    >>> config = TransformerConfig.base(vocab_size=37000)
    >>> config.d_model, config.num_heads, config.d_ff
    (512, 8, 2048)
    >>> TransformerConfig(37000, max_length=64)
    Traceback (most recent call last):
    ...
    TypeError: ... max_length moved: the longest output is an argument of decoding, ...
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
    alignment_layer: int | None = ALIGNMENT_LAYER
    alignment_heads: int = ALIGNMENT_HEADS
    full_context_alignment: bool = False

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
            if not _is_int(value) or value < 1:
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
        layers, heads = self.num_decoder_layers, self.num_heads
        layer = self.alignment_layer
        if layer is not None and (not _is_int(layer) or not -layers <= layer < layers):
            raise ValueError(
                f"alignment_layer must be None or an int in [{-layers}, {layers}) "
                f"for {layers} decoder layers, got {layer!r}."
            )
        if not _is_int(self.alignment_heads) or not 0 <= self.alignment_heads <= heads:
            raise ValueError(
                f"alignment_heads must be an int in [0, {heads}] (0: all "
                f"{heads} heads), got {self.alignment_heads!r}."
            )
        if not isinstance(self.full_context_alignment, bool):
            raise ValueError(
                "full_context_alignment must be a bool, got "
                f"{self.full_context_alignment!r}."
            )
        if self.target_vocab_size is not None:
            value = self.target_vocab_size
            if not _is_int(value) or value < 1:
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
    def alignment_layer_index(self):
        """The decoder layer that word alignments are read from, from 0.

        Example:

        >>> TransformerConfig.base(100).alignment_layer_index  # the penultimate
        4
        >>> TransformerConfig.base(100, alignment_layer=-1).alignment_layer_index
        5
        """
        layers = self.num_decoder_layers
        if self.alignment_layer is None:
            return max(layers - 2, 0)
        return self.alignment_layer % layers

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
        ValueError: Unknown TransformerConfig field 'd_modle'. The fields are ...
        """
        _check_field_names(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        """The config of `to_dict`'s values, or of a config saved by an
        earlier version: the settings that were fields then
        (`MOVED_SETTINGS`) are dropped.

        Raises:
            ValueError: a key is neither a field nor in `MOVED_SETTINGS`.

        Example:

        >>> config = TransformerConfig.from_dict({"vocab_size": 9, "max_length": 64})
        >>> config.d_model, hasattr(config, "max_length")
        (512, False)
        >>> TransformerConfig.from_dict({"vocab_size": 9, "dim": 64, "heads": 2})
        Traceback (most recent call last):
        ...
        ValueError: Unknown TransformerConfig fields 'dim', 'heads'. The fields are ...
        """
        values = {k: v for k, v in values.items() if k not in MOVED_SETTINGS}
        _check_field_names(values)
        return cls(**values)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_field_names(names):
    """Raises ValueError naming those of `names` that are not config fields."""
    fields = [field.name for field in dataclasses.fields(TransformerConfig)]
    unknown = [name for name in names if name not in fields]
    if unknown:
        raise ValueError(_unknown_fields_message(unknown))


def _unknown_fields_message(names):
    """The error message for `names`, which are not config fields: where
    those in `MOVED_SETTINGS` went, and the fields."""
    fields = ", ".join(field.name for field in dataclasses.fields(TransformerConfig))
    label = "field" if len(names) == 1 else "fields"
    moved = "".join(
        f" {name} moved: {MOVED_SETTINGS[name]}."
        for name in names
        if name in MOVED_SETTINGS
    )
    return (
        f"Unknown TransformerConfig {label} {', '.join(map(repr, names))}.{moved} "
        f"The fields are {fields}."
    )
