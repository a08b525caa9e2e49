"""Writing a `Translator` as a CTranslate2 model, for fast serving on CPU.

CTranslate2 (OpenNMT) runs Transformer translation models in C++ with
quantized weights. `transformer_spec` maps a `keras_transformer.Transformer`
onto CTranslate2's `TransformerSpec`, layer by layer; `export_ctranslate2`
writes it as a model folder with the SentencePiece model and the
translator's decoding settings beside it, which `CTranslate2Translator`
(and `keras-transformer translate`) reads. `ctranslate2` is an optional
dependency, imported when needed.
"""

import json
import os
import warnings

import numpy as np
from keras import ops

from keras_transformer.export.saved_model import VOCABULARY_FILE
from keras_transformer.export.staging import staging_folder
from keras_transformer.layers import sinusoidal_encoding

SETTINGS_FILE = "decoding.json"
MODEL_FILE = "model.bin"  # what makes a folder a CTranslate2 model
# CTranslate2's activations (`ctranslate2.specs.Activation`) by Keras name.
ACTIVATIONS = {"relu": "RELU", "gelu": "GELU", "silu": "SWISH", "swish": "SWISH"}


def import_ctranslate2():
    """The `ctranslate2` package, or an ImportError that says how to install it."""
    try:
        import ctranslate2
    except ImportError as error:
        raise ImportError(
            'CTranslate2 exports need ctranslate2: pip install -e ".[ctranslate2]"'
        ) from error
    return ctranslate2


def is_ctranslate2_export(path):
    """Whether `path` is a CTranslate2 model folder (it holds `model.bin`)."""
    return os.path.isfile(os.path.join(path, MODEL_FILE))


def export_ctranslate2(translator, output_dir, quantization=None):
    """Writes `translator` as the CTranslate2 model folder `output_dir`.

    The folder holds CTranslate2's `model.bin`, `config.json` and
    vocabulary, the SentencePiece model (`tokenizer.model`) and the
    translator's decoding settings (`decoding.json`: beam size, alpha,
    extra length, max length), which `CTranslate2Translator` reads to
    translate text as the translator does. It is written to a hidden
    folder first and renamed into place, so an interrupted export leaves
    no half-written model.

    Args:
        translator: a `keras_transformer.export.Translator`.
        output_dir: the folder to create.
        quantization: None to keep float32 weights, or a CTranslate2
            weight type: "int8", "int8_float32", "int16", "float32", ...
            (`ctranslate2.specs.model_spec.ACCEPTED_MODEL_TYPES`).

    Returns:
        `output_dir`.

    Raises:
        FileExistsError: `output_dir` exists.
        ImportError: ctranslate2 is not installed.
        ValueError: an unknown `quantization`, or a model CTranslate2 cannot
            run (see `transformer_spec`).
    """
    output_dir = os.path.normpath(output_dir)
    if os.path.exists(output_dir):
        raise FileExistsError(f"{output_dir} exists; pass another folder.")
    spec = transformer_spec(
        translator.model, translator.tokenizer, translator.max_length
    )
    spec.validate()
    spec.optimize(quantization=quantization)
    with staging_folder(output_dir) as staging:
        spec.save(staging)
        translator.tokenizer.save(os.path.join(staging, VOCABULARY_FILE))
        settings = {
            "beam_size": int(translator.beam_size),
            "alpha": float(translator.alpha),
            "extra_length": int(translator.extra_length),
            "max_length": int(translator.max_length),
        }
        with open(os.path.join(staging, SETTINGS_FILE), "w") as file:
            json.dump(settings, file, indent=2)
    return output_dir


def transformer_spec(model, tokenizer, max_length):
    """`model` as a CTranslate2 `TransformerSpec`, weights and vocabulary set.

    Post-norm and pre-norm models map alike (pre-norm with its final layer
    norms). The embeddings are scaled by sqrt(d_model) (unless
    `config.scale_embedding` is False), with the output bias if the config
    has one, as in `PositionalEmbedding`, and the position encodings are
    this package's sinusoids (in `config.sinusoid_layout`), as a table of
    `max_length` positions:
    CTranslate2 refuses longer sources and translations, which
    `CTranslate2Translator` never asks for. Our fused key-value projections
    are split into CTranslate2's stacked layouts: one query-key-value
    linear in self-attention, a query and a key-value linear in
    cross-attention. Every source ends with the end token, as
    `Translator.source_ids` makes it (`add_source_eos`), and the decoder
    starts with the start token.

    CTranslate2 returns the attention of decoding, under the causal mask:
    a model trained to align with full context
    (`config.full_context_alignment`) is converted with a warning, as its
    CTranslate2 alignments are not its SavedModel's.

    Args:
        model: a `keras_transformer.Transformer`.
        tokenizer: the `SubwordTokenizer` it was trained with.
        max_length: the most tokens in a source and in a translation (the
            translator's `max_length`).

    Returns:
        A `ctranslate2.specs.TransformerSpec`, to `validate`, `optimize` and
        `save`.

    Raises:
        ImportError: ctranslate2 is not installed.
        ValueError: the activation has no CTranslate2 equivalent.
    """
    ctranslate2 = import_ctranslate2()
    config = model.config
    activation = ACTIVATIONS.get(config.activation)
    if activation is None:
        raise ValueError(
            f"CTranslate2 has no activation {config.activation!r}; it has "
            f"{', '.join(sorted(ACTIVATIONS))}."
        )
    if config.full_context_alignment:
        warnings.warn(
            "This model aligns with full context (full_context_alignment), "
            "which CTranslate2 cannot run: its alignments (align, translate "
            "--alignments and --markup) come from the attention of decoding, "
            "under the causal mask, and are worse. Align with the SavedModel.",
            stacklevel=2,
        )
    spec = ctranslate2.specs.TransformerSpec.from_config(
        (config.num_encoder_layers, config.num_decoder_layers),
        config.num_heads,
        pre_norm=config.norm_first,
        activation=ctranslate2.specs.Activation[activation],
        alignment_layer=config.alignment_layer_index,
        alignment_heads=config.alignment_heads,
    )
    encoding = ops.convert_to_numpy(
        sinusoidal_encoding(max_length, config.d_model, layout=config.sinusoid_layout)
    )  # (max_length, D)
    spec.encoder.position_encodings.encodings = encoding
    spec.decoder.position_encodings.encodings = encoding
    spec.encoder.embeddings[0].weight = _array(
        model.source_embedding.token_embedding.embeddings
    )
    spec.decoder.embeddings.weight = _array(
        model.target_embedding.token_embedding.embeddings
    )
    spec.encoder.scale_embeddings = config.scale_embedding
    spec.decoder.scale_embeddings = config.scale_embedding
    if model.output_projection is None:  # the embedding is the projection
        spec.decoder.projection.weight = spec.decoder.embeddings.weight  # (V, D)
        if config.output_bias:
            spec.decoder.projection.bias = _array(model.target_embedding.bias)
    else:
        _set_linear(spec.decoder.projection, _linear(model.output_projection))
    if config.norm_first:
        _set_layer_norm(spec.encoder.layer_norm, model.encoder_layer_norm)
        _set_layer_norm(spec.decoder.layer_norm, model.decoder_layer_norm)
    for layer, block in zip(spec.encoder.layer, model.encoder_blocks, strict=True):
        _set_self_attention(layer.self_attention, block)
        _set_feed_forward(layer.ffn, block)
    for layer, block in zip(spec.decoder.layer, model.decoder_blocks, strict=True):
        _set_self_attention(layer.self_attention, block)
        _set_cross_attention(layer.attention, block)
        _set_feed_forward(layer.ffn, block)

    source_pieces, pieces = tokenizer.pieces()
    spec.register_source_vocabulary(source_pieces)
    spec.register_target_vocabulary(pieces)
    spec.config.unk_token = pieces[tokenizer.unknown_id]
    spec.config.bos_token = spec.config.decoder_start_token = pieces[tokenizer.start_id]
    spec.config.eos_token = pieces[tokenizer.end_id]
    spec.config.add_source_eos = True
    spec.config.layer_norm_epsilon = config.layer_norm_epsilon
    return spec


def _array(variable):
    return np.asarray(ops.convert_to_numpy(variable), np.float32)


def _linear(dense):
    """A Keras Dense as CTranslate2 wants it: weight (out, in), bias (out,)."""
    return _array(dense.kernel).T, _array(dense.bias)


def _set_linear(spec, *parts):
    """Sets a CTranslate2 linear to `parts` (weight, bias) stacked on `out`."""
    weights, biases = zip(*parts, strict=True)
    spec.weight = np.concatenate(weights)  # (out, in)
    spec.bias = np.concatenate(biases)


def _set_layer_norm(spec, layer_norm):
    spec.gamma = _array(layer_norm.gamma)
    spec.beta = _array(layer_norm.beta)


def _set_feed_forward(spec, block):
    _set_layer_norm(spec.layer_norm, block.feed_forward_layer_norm)
    _set_linear(spec.linear_0, _linear(block.feed_forward.inner_dense))
    _set_linear(spec.linear_1, _linear(block.feed_forward.output_dense))


def _set_self_attention(spec, block):
    """`block`'s self-attention and its layer norm into `spec`.

    CTranslate2 stacks the queries, keys and values in one linear.
    """
    attention = block.self_attention
    query = _linear(attention.query_dense)  # (h * K, D), (h * K,)
    _set_linear(spec.linear[0], query, *_split_key_value(attention))
    _set_linear(spec.linear[-1], _linear(attention.output_dense))
    _set_layer_norm(spec.layer_norm, block.self_attention_layer_norm)


def _set_cross_attention(spec, block):
    """`block`'s cross-attention and its layer norm into `spec`.

    CTranslate2 has the queries in one linear, then the keys and values in
    another.
    """
    attention = block.cross_attention
    _set_linear(spec.linear[0], _linear(attention.query_dense))  # (h * K, D)
    _set_linear(spec.linear[1], *_split_key_value(attention))
    _set_linear(spec.linear[-1], _linear(attention.output_dense))
    _set_layer_norm(spec.layer_norm, block.cross_attention_layer_norm)


def _split_key_value(attention):
    """The fused `key_value` projection as CTranslate2 linears: (keys,
    values), each (weight (h * d, D), bias (h * d,))."""
    return tuple(
        (kernel.T, bias) for kernel, bias in attention.split_key_value()
    )  # MultiHeadAttention owns the fused layout
