"""A Hugging Face Marian folder: its config, mapped to ours, and its weights.

Each way Marian differs from this package's defaults is a
`TransformerConfig` field: the sinusoid layout (`sinusoid_layout="split"`),
the feed-forward activation, the layer-norm epsilon (PyTorch's 1e-5),
`scale_embedding`, `final_logits_bias` (`output_bias`), separate source
and target vocabularies (`target_vocab_size`), untied output weights
(`shared_embeddings=False`); `max_position_embeddings` becomes an imported
run's `model.max_length` (`run.import_marian`), no part of the architecture.
The pad id is handled by renumbering the vocabulary (`vocabulary`).
A config value the import cannot represent is a one-line `ValueError`
naming the field, never a silently different model.
"""

import json
import os

from keras_transformer.marian import vocabulary

CONFIG, GENERATION_CONFIG = "config.json", "generation_config.json"
SAFETENSORS, PYTORCH_BIN = "model.safetensors", "pytorch_model.bin"
SOURCE_SPM, TARGET_SPM = "source.spm", "target.spm"
VOCAB, TARGET_VOCAB = "vocab.json", "target_vocab.json"
# transformers' activation names -> Keras's (same functions).
ACTIVATIONS = {"relu": "relu", "swish": "silu", "silu": "silu", "gelu": "gelu"}
LAYER_NORM_EPSILON = 1e-5  # MarianEncoderLayer's nn.LayerNorm default
# Fields read by `model_config`, and values required of fields that select
# architectures the layers do not have (BART-style options Marian configs
# of older transformers versions carry with Marian's values).
_MAPPED = {
    "d_model",
    "encoder_layers",
    "decoder_layers",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "activation_function",
    "dropout",
    "attention_dropout",
    "activation_dropout",
    "vocab_size",
    "decoder_vocab_size",
    "share_encoder_decoder_embeddings",
    "tie_word_embeddings",
    "scale_embedding",
    "pad_token_id",
    "eos_token_id",
    "decoder_start_token_id",
    "model_type",
}
_REQUIRED = {
    "normalize_before": False,
    "add_final_layer_norm": False,
    "normalize_embedding": False,
    "static_position_embeddings": True,
    "add_bias_logits": False,
    "is_encoder_decoder": True,
}
# Fields that do not change what the model computes: training-time
# settings, bookkeeping, and generation settings (read from
# generation_config.json, or the config's own as a fallback).
_IGNORED = {
    "_name_or_path",
    "architectures",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "init_std",
    "encoder_layerdrop",
    "decoder_layerdrop",
    "use_cache",
    "gradient_checkpointing",
    "output_past",
    "num_hidden_layers",
    "classif_dropout",
    "classifier_dropout",
    "num_labels",
    "id2label",
    "label2id",
    "is_decoder",
    "return_dict",
    "bos_token_id",
    "forced_eos_token_id",
    "bad_words_ids",
    "num_beams",
    "max_length",
    "max_position_embeddings",  # an imported run's model.max_length
    "extra_pos_embeddings",
    "layernorm_embedding",
}


def read_json(folder, name):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: not a Marian checkpoint.")
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def model_config(config, name=CONFIG):
    """The `TransformerConfig` of a Marian config.json's values.

    Example:

    >>> values = {"model_type": "marian", "d_model": 16, "encoder_layers": 1,
    ...     "decoder_layers": 1, "encoder_attention_heads": 2,
    ...     "decoder_attention_heads": 2, "encoder_ffn_dim": 32,
    ...     "decoder_ffn_dim": 32, "activation_function": "swish",
    ...     "vocab_size": 9, "scale_embedding": True,
    ...     "max_position_embeddings": 64}
    >>> config = model_config(values)
    >>> config.vocab_size, config.activation, config.sinusoid_layout
    (10, 'silu', 'split')
    >>> model_config({**values, "activation_function": "tanh"})
    Traceback (most recent call last):
    ...
    ValueError: config.json: activation_function 'tanh' is not supported ...
    """
    from keras_transformer.models.config import TransformerConfig

    for field, value in config.items():
        if field in _REQUIRED and value != _REQUIRED[field]:
            raise ValueError(
                f"{name}: {field} {value!r} is not supported (only "
                f"{_REQUIRED[field]!r})."
            )
        if field not in _MAPPED | _REQUIRED.keys() | _IGNORED:
            raise ValueError(f"{name}: field {field!r} is not known to the import.")
    if config.get("model_type") != "marian":
        raise ValueError(
            f"{name}: model_type {config.get('model_type')!r} is not 'marian'."
        )
    for field in ("attention_heads", "ffn_dim"):
        encoder, decoder = config[f"encoder_{field}"], config[f"decoder_{field}"]
        if encoder != decoder:
            raise ValueError(
                f"{name}: encoder_{field} {encoder} differs from decoder_{field} "
                f"{decoder}; the layers take one value."
            )
    activation = config.get("activation_function", "gelu")
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"{name}: activation_function {activation!r} is not supported "
            f"({', '.join(ACTIVATIONS)})."
        )
    shared = config.get("share_encoder_decoder_embeddings", True)
    tied = config.get("tie_word_embeddings", True)
    vocab_size = config["vocab_size"]
    decoder_vocab_size = config.get("decoder_vocab_size") or vocab_size
    if shared and decoder_vocab_size != vocab_size:
        raise ValueError(
            f"{name}: decoder_vocab_size {decoder_vocab_size} differs from "
            f"vocab_size {vocab_size} with shared embeddings."
        )
    return TransformerConfig(
        vocab_size=vocab_size + 1,  # + our padding row (vocabulary)
        target_vocab_size=None if shared else decoder_vocab_size + 1,
        d_model=config["d_model"],
        num_heads=config["encoder_attention_heads"],
        d_ff=config["encoder_ffn_dim"],
        num_encoder_layers=config["encoder_layers"],
        num_decoder_layers=config["decoder_layers"],
        dropout=config.get("dropout", 0.1),
        attention_dropout=config.get("attention_dropout", 0.0),
        activation_dropout=config.get("activation_dropout", 0.0),
        shared_embeddings=shared and tied,
        activation=ACTIVATIONS[activation],
        layer_norm_epsilon=LAYER_NORM_EPSILON,
        sinusoid_layout="split",
        scale_embedding=config.get("scale_embedding", False),
        output_bias=shared and tied,
    )


def read_weights(folder):
    """{name: float32 array} of model.safetensors, or of pytorch_model.bin
    when torch is installed."""
    path = os.path.join(folder, SAFETENSORS)
    if os.path.exists(path):
        from safetensors.numpy import load_file

        weights = load_file(path)
        return {name: value.astype("float32") for name, value in weights.items()}
    path = os.path.join(folder, PYTORCH_BIN)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{folder} has neither {SAFETENSORS} nor {PYTORCH_BIN}: not a Marian "
            "checkpoint."
        )
    try:
        import torch
    except ImportError:
        raise ValueError(
            f"{path} needs torch to read; install torch, or save the model as "
            f"{SAFETENSORS} (model.save_pretrained(folder)) where torch is."
        ) from None
    state = torch.load(path, map_location="cpu", weights_only=True)
    return {name: value.float().numpy() for name, value in state.items()}


def check_ids(config, source_vocab, target_vocab):
    """Raises ValueError unless the config's special ids are the vocabularies'
    `</s>` and `<pad>`, which the renumbering assumes."""
    expected = {
        "eos_token_id": target_vocab[vocabulary.END_PIECE],
        "decoder_start_token_id": target_vocab[vocabulary.START_PIECE],
        "pad_token_id": source_vocab[vocabulary.START_PIECE],
    }
    for field, value in expected.items():
        if field in config and config[field] != value:
            raise ValueError(
                f"{CONFIG}: {field} {config[field]} is not the vocabulary's ({value})."
            )


def assign_weights(model, weights, source_order, target_order):
    """Copies Marian's `weights` (from `read_weights`) into `model` (built
    from `model_config`), renumbering the vocabularies."""
    take = _Taker(weights)
    config = model.config
    bias = vocabulary.output_bias(take("final_logits_bias").reshape(-1), target_order)
    if config.target_vocab_size is None:
        source = target = take("model.shared.weight")
        take.drop("model.encoder.embed_tokens.weight")
        take.drop("model.decoder.embed_tokens.weight")
    else:
        source = take("model.encoder.embed_tokens.weight")
        target = take("model.decoder.embed_tokens.weight")
        take.drop("model.shared.weight")
    output = take.pop("lm_head.weight", target)  # absent when tied
    if config.shared_embeddings:
        model.source_embedding.token_embedding.embeddings.assign(
            vocabulary.permute_rows(source, source_order)
        )
        model.source_embedding.bias.assign(bias)
    else:
        model.source_embedding.token_embedding.embeddings.assign(
            vocabulary.permute_rows(source, source_order)
        )
        model.target_embedding.token_embedding.embeddings.assign(
            vocabulary.permute_rows(target, target_order)
        )
        model.output_projection.kernel.assign(
            vocabulary.permute_rows(output, target_order).T
        )
        model.output_projection.bias.assign(bias)
    for i, block in enumerate(model.encoder_blocks):
        prefix = f"model.encoder.layers.{i}."
        _attention(block.self_attention, take, prefix + "self_attn.")
        _layer_norm(block.self_attention_layer_norm, take, prefix + "self_attn_")
        _feed_forward(block, take, prefix)
    for i, block in enumerate(model.decoder_blocks):
        prefix = f"model.decoder.layers.{i}."
        _attention(block.self_attention, take, prefix + "self_attn.")
        _layer_norm(block.self_attention_layer_norm, take, prefix + "self_attn_")
        _attention(block.cross_attention, take, prefix + "encoder_attn.")
        _layer_norm(block.cross_attention_layer_norm, take, prefix + "encoder_attn_")
        _feed_forward(block, take, prefix)
    take.check_all_used()


class _Taker:
    """Hands out the checkpoint's arrays once each, and names what is left."""

    _UNUSED = ("embed_positions.weight",)  # recomputed by the layers

    def __init__(self, weights):
        self.weights = dict(weights)

    def __call__(self, name):
        if name not in self.weights:
            raise ValueError(f"The checkpoint has no weight {name!r}.")
        return self.weights.pop(name)

    def pop(self, name, default):
        return self.weights.pop(name, default)

    def drop(self, name):
        self.weights.pop(name, None)

    def check_all_used(self):
        left = [n for n in self.weights if not n.endswith(self._UNUSED)]
        if left:
            raise ValueError(
                f"The checkpoint has weights the import does not use: {left[:3]}"
                f"{' ...' if len(left) > 3 else ''}."
            )


def _attention(attention, take, prefix):
    """q/k/v/out projections -> query, key_value, output; PyTorch's (out,
    in) weights are Keras's kernels transposed."""
    attention.query_dense.kernel.assign(take(prefix + "q_proj.weight").T)
    attention.query_dense.bias.assign(take(prefix + "q_proj.bias"))
    attention.fuse_key_value(
        take(prefix + "k_proj.weight").T,
        take(prefix + "k_proj.bias"),
        take(prefix + "v_proj.weight").T,
        take(prefix + "v_proj.bias"),
    )
    attention.output_dense.kernel.assign(take(prefix + "out_proj.weight").T)
    attention.output_dense.bias.assign(take(prefix + "out_proj.bias"))


def _layer_norm(layer_norm, take, prefix):
    layer_norm.gamma.assign(take(prefix + "layer_norm.weight"))
    layer_norm.beta.assign(take(prefix + "layer_norm.bias"))


def _feed_forward(block, take, prefix):
    feed_forward = block.feed_forward
    feed_forward.inner_dense.kernel.assign(take(prefix + "fc1.weight").T)
    feed_forward.inner_dense.bias.assign(take(prefix + "fc1.bias"))
    feed_forward.output_dense.kernel.assign(take(prefix + "fc2.weight").T)
    feed_forward.output_dense.bias.assign(take(prefix + "fc2.bias"))
    _layer_norm(block.feed_forward_layer_norm, take, prefix + "final_")
