import pytest

from keras_transformer import TransformerConfig
from keras_transformer.models.config import PRESETS


def test_paper_presets_follow_table_3():
    base = TransformerConfig.base(37000)
    assert (base.num_encoder_layers, base.num_decoder_layers) == (6, 6)
    assert (base.d_model, base.d_ff, base.num_heads, base.dropout) == (
        512,
        2048,
        8,
        0.1,
    )
    big = TransformerConfig.big(37000)
    assert (big.num_encoder_layers, big.num_decoder_layers) == (6, 6)
    assert (big.d_model, big.d_ff, big.num_heads, big.dropout) == (1024, 4096, 16, 0.3)
    assert base.shared_embeddings and not base.norm_first


def test_each_preset_is_a_constructor():
    assert PRESETS == ("tiny", "small", "base", "big")
    for preset in PRESETS:
        config = getattr(TransformerConfig, preset)(100, dropout=0.2)
        assert (config.vocab_size, config.dropout) == (100, 0.2)


def test_training_settings_and_max_length_are_not_fields():
    # label smoothing and the warm-up are the training recipe's settings;
    # max_length is the data pipeline's and the decoders' limit.
    with pytest.raises(TypeError, match="label_smoothing"):
        TransformerConfig(100, label_smoothing=0.1)
    with pytest.raises(TypeError, match="max_length"):
        TransformerConfig(100, max_length=64)
    for name, value in (
        ("label_smoothing", 0.1),
        ("warmup_steps", 4000),
        ("max_length", 64),
    ):
        with pytest.raises(
            ValueError, match=f"Unknown TransformerConfig field '{name}'"
        ):
            TransformerConfig.base(100, **{name: value})
        with pytest.raises(
            ValueError, match=f"Unknown TransformerConfig field '{name}'"
        ):
            TransformerConfig.tiny(100).replace(**{name: value})


def test_from_dict_reads_a_config_that_kept_training_settings():
    # What version 1 wrote to .keras files and model_config.json.
    config = TransformerConfig.tiny(100)
    saved = {**config.to_dict(), "label_smoothing": 0.2, "warmup_steps": 400}
    assert TransformerConfig.from_dict(saved) == config
    assert "label_smoothing" not in config.to_dict()


def test_from_dict_reads_a_config_that_kept_max_length():
    # What .keras files and model_config.json held before max_length moved
    # to the run (model.max_length) and the decoders (max_length=).
    config = TransformerConfig.small(100)
    for max_length in (64, 128, 256):
        saved = {**config.to_dict(), "max_length": max_length}
        assert TransformerConfig.from_dict(saved) == config
    assert "max_length" not in config.to_dict()


def test_presets_take_overrides():
    config = TransformerConfig.small(8000, dropout=0.2, num_encoder_layers=4)
    assert (config.d_model, config.dropout, config.num_encoder_layers) == (256, 0.2, 4)
    assert TransformerConfig.tiny(100).replace(d_model=64).d_model == 64


def test_dict_round_trip():
    config = TransformerConfig.tiny(100, norm_first=True)
    assert TransformerConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"d_model": 100, "num_heads": 8},
            "d_model=100 must be divisible by num_heads=8",
        ),
        ({"dropout": 1.0}, "dropout"),
        ({"activation_dropout": -0.1}, "activation_dropout"),
        ({"vocab_size": 0}, "vocab_size"),
        ({"num_encoder_layers": 2.5}, "num_encoder_layers"),
        ({"layer_norm_epsilon": 0.0}, "layer_norm_epsilon"),
        ({"output_bias": True, "shared_embeddings": False}, "output_bias"),
        ({"target_vocab_size": 50}, "target_vocab_size needs shared_embeddings"),
        ({"target_vocab_size": 0, "shared_embeddings": False}, "target_vocab_size"),
    ],
)
def test_bad_values_raise_value_error(changes, message):
    with pytest.raises(ValueError, match=message):
        TransformerConfig.base(37000).replace(**changes)


def test_output_vocab_size_is_the_target_vocabulary():
    config = TransformerConfig.tiny(100)
    assert config.output_vocab_size == 100
    separate = config.replace(shared_embeddings=False, target_vocab_size=70)
    assert separate.output_vocab_size == 70
