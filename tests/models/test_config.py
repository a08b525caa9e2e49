import pytest

from keras_transformer import TransformerConfig


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
    assert base.label_smoothing == big.label_smoothing == 0.1
    assert base.shared_embeddings and not base.norm_first


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
        ({"label_smoothing": -0.1}, "label_smoothing"),
        ({"vocab_size": 0}, "vocab_size"),
        ({"num_encoder_layers": 2.5}, "num_encoder_layers"),
        ({"max_length": 0}, "max_length"),
        ({"layer_norm_epsilon": 0.0}, "layer_norm_epsilon"),
    ],
)
def test_bad_values_raise_value_error(changes, message):
    with pytest.raises(ValueError, match=message):
        TransformerConfig.base(37000).replace(**changes)
