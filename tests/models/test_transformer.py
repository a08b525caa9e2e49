import keras
import numpy as np
import pytest

from keras_transformer import Transformer, TransformerConfig, build_transformer

VOCAB = 50
RNG = np.random.default_rng(0)


def tiny_model(**overrides):
    values = dict(d_model=32, d_ff=64, dropout=0.0)
    return build_transformer(TransformerConfig.tiny(VOCAB, **{**values, **overrides}))


def logits(model, source, target):
    return np.array(model({"encoder_inputs": source, "decoder_inputs": target}))


SOURCE = RNG.integers(1, VOCAB, size=(3, 7))
TARGET = RNG.integers(1, VOCAB, size=(3, 6))


@pytest.mark.parametrize("preset, paper_count", [("base", 65e6), ("big", 213e6)])
def test_parameter_counts_match_the_paper(preset, paper_count):
    model = build_transformer(getattr(TransformerConfig, preset)(37000))
    assert abs(model.count_params() / paper_count - 1) < 0.05


def test_shared_embeddings_use_one_matrix():
    shared, separate = tiny_model(), tiny_model(shared_embeddings=False)
    embedding = VOCAB * 32
    assert separate.count_params() - shared.count_params() == 2 * embedding + VOCAB
    matrices = [w for w in shared.weights if w.path.endswith("embeddings")]
    assert len(matrices) == 1


def test_dropout_rates_reach_every_block():
    model = tiny_model(dropout=0.2, attention_dropout=0.1, activation_dropout=0.3)
    for block in (*model.encoder_blocks, *model.decoder_blocks):
        assert (block.dropout, block.attention_dropout) == (0.2, 0.1)
        assert block.feed_forward.dropout == 0.3
        assert block.self_attention.dropout == 0.1
    assert all(block.cross_attention.dropout == 0.1 for block in model.decoder_blocks)


def test_named_inputs_and_float32_logits():
    model = tiny_model()
    assert sorted(model.input) == ["decoder_inputs", "encoder_inputs"]
    outputs = model({"encoder_inputs": SOURCE, "decoder_inputs": TARGET})
    assert tuple(outputs.shape) == (3, 6, VOCAB)
    assert outputs.dtype == "float32"


@pytest.mark.parametrize("norm_first", [False, True])
def test_later_decoder_tokens_never_change_earlier_logits(norm_first):
    model = tiny_model(norm_first=norm_first)
    reference = logits(model, SOURCE, TARGET)
    for t in range(TARGET.shape[1] - 1):
        changed = TARGET.copy()
        changed[:, t + 1 :] = RNG.integers(1, VOCAB, size=changed[:, t + 1 :].shape)
        np.testing.assert_allclose(
            logits(model, SOURCE, changed)[:, : t + 1],
            reference[:, : t + 1],
            atol=1e-5,
        )


@pytest.mark.parametrize("shared_embeddings", [True, False])
def test_appended_padding_never_changes_real_logits(shared_embeddings):
    model = tiny_model(shared_embeddings=shared_embeddings)
    reference = logits(model, SOURCE, TARGET)
    padded_source = np.pad(SOURCE, ((0, 0), (0, 5)))
    padded_target = np.pad(TARGET, ((0, 0), (0, 4)))
    np.testing.assert_allclose(
        logits(model, padded_source, TARGET), reference, atol=1e-5
    )
    np.testing.assert_allclose(
        logits(model, SOURCE, padded_target)[:, :6], reference, atol=1e-5
    )


def test_batch_items_with_different_lengths_equal_one_by_one():
    model = tiny_model()
    source = SOURCE.copy()
    source[0, 4:] = 0
    batched = logits(model, source, TARGET)
    alone = logits(model, source[:1, :4], TARGET[:1])
    np.testing.assert_allclose(batched[:1], alone, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("max_length", [10, None])  # a buffer, a cache that grows
def test_cached_decoding_equals_the_teacher_forced_pass(norm_first, max_length):
    model = tiny_model(norm_first=norm_first)
    source = SOURCE.copy()
    source[1, 5:] = 0
    full = logits(model, source, TARGET)
    encoder_outputs, encoder_padding_mask = model.encode(source)
    cross_attention_cache = model.compute_cross_attention_cache(encoder_outputs)
    cache = model.init_cache(len(source), max_length)
    for t in range(TARGET.shape[1]):
        step_logits, cache = model.decode_step(
            TARGET[:, t : t + 1],
            cache,
            t,
            cross_attention_cache,
            encoder_padding_mask,
            cache_update="append" if max_length is None else "write",
        )
        np.testing.assert_allclose(step_logits[:, 0], full[:, t], atol=1e-4)


MARIAN_OPTIONS = {
    "shared": dict(output_bias=True, sinusoid_layout="split", activation="swish"),
    "separate": dict(
        shared_embeddings=False,
        target_vocab_size=30,
        scale_embedding=False,
        sinusoid_layout="split",
    ),
}


@pytest.mark.parametrize("variant", sorted(MARIAN_OPTIONS))
def test_marian_options_decode_cached_and_round_trip(variant, tmp_path):
    model = tiny_model(**MARIAN_OPTIONS[variant])
    target = TARGET % model.config.output_vocab_size
    full = logits(model, SOURCE, target)
    assert full.shape[-1] == model.config.output_vocab_size
    encoder_outputs, encoder_padding_mask = model.encode(SOURCE)
    context = model.compute_cross_attention_cache(encoder_outputs), encoder_padding_mask
    cache = model.init_cache(len(SOURCE))
    for t in range(target.shape[1]):
        step_logits, cache = model.decode_step(target[:, t : t + 1], cache, t, *context)
        np.testing.assert_allclose(step_logits[:, 0], full[:, t], atol=1e-4)
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert reloaded.config == model.config
    np.testing.assert_allclose(logits(reloaded, SOURCE, target), full, atol=1e-6)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_cached_decoding_equals_the_teacher_forced_pass_under_a_mixed_policy(policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = tiny_model()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    full = logits(model, SOURCE, TARGET)
    encoder_outputs, encoder_padding_mask = model.encode(SOURCE)
    context = model.compute_cross_attention_cache(encoder_outputs), encoder_padding_mask
    cache = model.init_cache(len(SOURCE), max_length=10)
    keys, values = cache[0]
    assert keys.dtype == values.dtype == policy.removeprefix("mixed_")
    for t in range(TARGET.shape[1]):
        step_logits, cache = model.decode_step(
            TARGET[:, t : t + 1], cache, t, *context, cache_update="write"
        )
        assert step_logits.dtype == "float32"
        np.testing.assert_allclose(step_logits[:, 0], full[:, t], atol=0.05)


def test_encode_and_decode_compose_to_the_model():
    model = tiny_model()
    encoder_outputs, mask = model.encode(SOURCE)
    np.testing.assert_allclose(
        model.decode(TARGET, encoder_outputs, mask),
        logits(model, SOURCE, TARGET),
        atol=1e-6,
    )


def test_keras_file_round_trip_without_custom_objects(tmp_path):
    model = tiny_model(norm_first=True)
    path = tmp_path / "model.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert isinstance(reloaded, Transformer)
    assert reloaded.config == model.config
    np.testing.assert_allclose(
        logits(reloaded, SOURCE, TARGET), logits(model, SOURCE, TARGET), atol=1e-6
    )


def test_build_transformer_rejects_other_configs():
    with pytest.raises(TypeError, match="TransformerConfig"):
        build_transformer({"vocab_size": 10})


@pytest.mark.parametrize("norm_first", [False, True])
def test_cross_attention_of_every_layer_and_head(norm_first):
    """Distributions over the real source pieces, each layer's as its block's."""
    model = tiny_model(norm_first=norm_first)
    source = SOURCE.copy()
    source[0, 4:] = 0
    encoder_outputs, mask = model.encode(source)
    outputs, attention = model.decode(
        TARGET, encoder_outputs, mask, return_cross_attention=True
    )
    np.testing.assert_allclose(outputs, logits(model, source, TARGET), atol=1e-6)
    assert tuple(attention.shape) == (3, 2, 4, 6, 7)  # (B, layers, h, T, S)
    attention = np.array(attention)
    np.testing.assert_allclose(attention.sum(axis=-1), 1.0, atol=1e-5)
    assert not np.any(attention[0, ..., 4:])  # padding gets exactly 0
    x = model.target_embedding(TARGET)  # each block on its own input
    for layer, block in enumerate(model.decoder_blocks):
        x, scores = block(
            x,
            encoder_outputs,
            decoder_padding_mask=TARGET != 0,
            encoder_padding_mask=mask,
            return_attention_scores=True,
        )
        np.testing.assert_allclose(attention[:, layer], scores, atol=1e-6)


def test_a_dtype_policy_reaches_every_layer_and_round_trips(tmp_path):
    config = TransformerConfig.tiny(VOCAB, d_model=32, d_ff=64, norm_first=True)
    model = Transformer(config, dtype="mixed_bfloat16")  # the global policy: float32
    layers = [model, *model.layers[2:], *model.decoder_blocks[0]._flatten_layers()]
    assert model.layers[0].name.endswith("inputs")  # the int32 inputs come first
    assert {layer.dtype_policy.name for layer in layers} == {"mixed_bfloat16"}
    assert logits(model, SOURCE, TARGET).dtype == "float32"
    assert model.decode(TARGET, *model.encode(SOURCE)).dtype == "float32"
    rebuilt = Transformer.from_config(model.get_config())
    assert rebuilt.dtype_policy.name == "mixed_bfloat16"
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert reloaded.target_embedding.compute_dtype == "bfloat16"
    np.testing.assert_allclose(
        logits(reloaded, SOURCE, TARGET), logits(model, SOURCE, TARGET), atol=1e-6
    )


def test_config_round_trips_with_the_base_arguments(tmp_path):
    model = Transformer(TransformerConfig.tiny(VOCAB, d_model=32), name="frozen")
    model.trainable = False
    config = model.get_config()
    assert {"name", "trainable", "dtype", "config"} <= set(config)
    assert "layers" not in config  # not the functional graph
    rebuilt = Transformer.from_config(config)
    assert rebuilt.get_config() == config
    assert (rebuilt.name, rebuilt.trainable) == ("frozen", False)
    assert not rebuilt.trainable_weights
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert reloaded.get_config() == config
    np.testing.assert_allclose(
        logits(reloaded, SOURCE, TARGET), logits(model, SOURCE, TARGET), atol=1e-6
    )


def test_init_cache_is_made_by_the_decoder_blocks():
    model = tiny_model()
    cache = model.init_cache(2, max_length=5)
    assert len(cache) == len(model.decoder_blocks)
    for pair, block in zip(cache, model.decoder_blocks, strict=True):
        expected = block.empty_self_attention_cache(2, 5)
        assert [tuple(part.shape) for part in pair] == [
            tuple(part.shape) for part in expected
        ]
    assert tuple(model.init_cache(2)[0][0].shape) == (2, 4, 0, 8)


@pytest.mark.parametrize("max_length", [None, 6])
def test_beams_decode_against_one_cross_attention_cache_row_per_item(max_length):
    beams = 3
    model = tiny_model()
    source = SOURCE.copy()
    source[1, 5:] = 0
    full = logits(model, np.repeat(source, beams, axis=0), np.repeat(TARGET, beams, 0))
    encoder_outputs, encoder_padding_mask = model.encode(source)  # a row per item
    cross_attention_cache = model.compute_cross_attention_cache(encoder_outputs)
    cache = model.init_cache(len(source) * beams, max_length)
    for t in range(TARGET.shape[1]):
        step_logits, cache = model.decode_step(
            np.repeat(TARGET[:, t : t + 1], beams, axis=0),  # rows b * 3 + k
            cache,
            t,
            cross_attention_cache,
            encoder_padding_mask,
            cache_update="append" if max_length is None else "write",
            rows_per_item=beams,
        )
        np.testing.assert_allclose(step_logits[:, 0], full[:, t], atol=1e-4)


def test_decode_step_names_rows_that_do_not_fit_the_cross_attention_cache():
    model = tiny_model()
    encoder_outputs, encoder_padding_mask = model.encode(SOURCE)
    context = model.compute_cross_attention_cache(encoder_outputs), encoder_padding_mask
    beams = np.repeat(TARGET[:, :1], 2, axis=0)  # 6 rows, rows_per_item forgotten
    message = "has 6 rows, but cross_attention_cache has 3 rows and rows_per_item=1"
    with pytest.raises(ValueError, match=message):
        model.decode_step(beams, model.init_cache(6), 0, *context)


@pytest.mark.parametrize(
    "layer, heads, full_context", [(None, 1, False), (0, 0, True), (-1, 3, False)]
)
def test_alignment_output_is_the_aligning_layer_s_attention(
    layer, heads, full_context, tmp_path
):
    """The attention of the layer `align` reads, every head's (in a pass of
    its own for full context), the logits unchanged, and the weights and
    operations the plain model's, through a `.keras` round trip."""
    config = dict(
        alignment_layer=layer,
        alignment_heads=heads,
        full_context_alignment=full_context,
    )
    model = build_transformer(
        TransformerConfig.tiny(VOCAB, d_model=32, d_ff=64, dropout=0.0, **config),
        alignment_output=True,
    )
    path = tmp_path / "model.keras"
    model.save(path)
    model = keras.saving.load_model(path)
    outputs = model({"encoder_inputs": SOURCE, "decoder_inputs": TARGET})
    plain = tiny_model(**config)
    plain.set_weights(model.get_weights())
    encoder_outputs, mask = plain.encode(SOURCE)
    logits_, attention = plain.decode(
        TARGET, encoder_outputs, mask, return_cross_attention=True
    )
    np.testing.assert_allclose(outputs["logits"], logits_, atol=1e-6)
    if full_context:
        attention = plain.full_context_cross_attention(TARGET, encoder_outputs, mask)
    expected = np.array(attention)[:, plain.config.alignment_layer_index]
    np.testing.assert_allclose(outputs["alignment"], expected, atol=1e-6)
    assert [type(op) for op in model.operations] == [
        type(op) for op in plain.operations
    ]  # the graph's operations, by which checkpoints reach the layers


def test_full_context_attention_sees_later_tokens_and_no_padding():
    """Without the causal mask a position's attention changes with a later
    token (the causal pass's does not), and a target of one token has
    nothing to hide: its attention is the causal pass's. Padding changes
    nothing, and only the layers up to the aligning one run."""
    model = tiny_model(num_decoder_layers=3, alignment_layer=1)
    encoder_outputs, mask = model.encode(SOURCE)

    def full(target, **kwargs):
        return np.array(
            model.full_context_cross_attention(target, encoder_outputs, mask, **kwargs)
        )

    def causal(target):
        _, attention = model.decode(
            target, encoder_outputs, mask, return_cross_attention=True
        )
        return np.array(attention)

    changed = TARGET.copy()
    changed[:, -1] = (changed[:, -1] % (VOCAB - 1)) + 1  # another later token
    assert full(TARGET).shape == (3, 2, 4, 6, 7)
    assert np.abs(full(changed)[..., 0, :] - full(TARGET)[..., 0, :]).max() > 1e-3
    np.testing.assert_allclose(
        causal(changed)[..., :-1, :], causal(TARGET)[..., :-1, :], atol=1e-6
    )
    np.testing.assert_allclose(
        full(TARGET[:, :1]), causal(TARGET[:, :1])[:, :2], atol=1e-6
    )
    padded = np.pad(TARGET, [[0, 0], [0, 2]])
    np.testing.assert_allclose(full(padded)[..., :6, :], full(TARGET), atol=1e-6)
    assert full(TARGET, num_layers=3).shape[1] == 3
