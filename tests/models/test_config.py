import dataclasses
import inspect
import json
import re
import zipfile
from pathlib import Path

import pytest

from keras_transformer import TransformerConfig
from keras_transformer.models.config import MOVED_SETTINGS, PRESETS

FIXTURES = Path(__file__).parents[1] / "fixtures"


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


def test_a_moved_setting_says_where_it_went():
    # max_length is decoding's limit now; label smoothing and the warm-up
    # are the training recipe's settings.
    with pytest.raises(TypeError, match="Unknown TransformerConfig field") as error:
        TransformerConfig(100, max_length=64)
    message = str(error.value)
    assert "keras_transformer.decoding.decode(..., max_length=)" in message
    assert "keras_transformer.export.Translator(..., max_length=)" in message
    for name, value in (
        ("label_smoothing", 0.1),
        ("warmup_steps", 4000),
        ("max_length", 64),
    ):
        moved = f"{name} moved: {re.escape(MOVED_SETTINGS[name])}"
        with pytest.raises(TypeError, match=moved):
            TransformerConfig(100, **{name: value})
        with pytest.raises(ValueError, match=moved):
            TransformerConfig.base(100, **{name: value})
        with pytest.raises(ValueError, match=moved):
            TransformerConfig.tiny(100).replace(**{name: value})


def test_an_unknown_keyword_is_a_type_error_and_an_unknown_field_a_value_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'd_modle'"):
        TransformerConfig(100, d_modle=64)
    with pytest.raises(ValueError, match="Unknown TransformerConfig field 'd_modle'"):
        TransformerConfig.tiny(100).replace(d_modle=64)


def test_the_constructor_keeps_the_dataclass_signature():
    parameters = inspect.signature(TransformerConfig).parameters
    assert list(parameters) == [f.name for f in dataclasses.fields(TransformerConfig)]


def test_from_dict_names_every_unknown_key_and_the_fields():
    saved = {**TransformerConfig.tiny(100).to_dict(), "d_modle": 64, "heads": 2}
    with pytest.raises(ValueError) as error:
        TransformerConfig.from_dict(saved)
    message = str(error.value)
    assert message.startswith("Unknown TransformerConfig fields 'd_modle', 'heads'.")
    assert "The fields are vocab_size, d_model, num_heads," in message


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


def saved_configs():
    """The model configs that files of earlier versions hold: a version-1
    run folder's model_config.json and .keras file, and the saved layers'
    fixtures' (tests/fixtures/saved_artifacts.py)."""
    path = FIXTURES / "run_v1" / "model_config.json"
    yield pytest.param(json.loads(path.read_text()), id="run_v1/model_config.json")
    for path in sorted(FIXTURES.glob("**/model.keras")):
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))["config"]["config"]
        yield pytest.param(config, id=str(path.relative_to(FIXTURES)))


@pytest.mark.parametrize("saved", saved_configs())
def test_from_dict_reads_the_configs_of_earlier_versions(saved):
    # Every key is a field, kept, or a moved setting, dropped.
    kept = {key: value for key, value in saved.items() if key not in MOVED_SETTINGS}
    assert kept.items() <= TransformerConfig.from_dict(saved).to_dict().items()


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
        (
            {"alignment_layer": 6},
            r"alignment_layer must be None or an int in \[-6, 6\)",
        ),
        ({"alignment_layer": -7}, "alignment_layer"),
        ({"alignment_layer": True}, "alignment_layer"),
        ({"alignment_heads": 9}, r"alignment_heads must be an int in \[0, 8\]"),
        ({"alignment_heads": -1}, "alignment_heads"),
        ({"full_context_alignment": 1}, "full_context_alignment must be a bool"),
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
