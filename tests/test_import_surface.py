"""The package's import surface: `import keras_transformer as kt`, then `kt.*`.

The subpackages are attributes imported when first touched (lazy_loader,
SPEC 1), the names come from the `__init__.pyi` stubs that type checkers
read too, and a `.keras` file loads in a fresh process with one line.
"""

import ast
import importlib
import pathlib

import keras
import pytest

import keras_transformer as kt
from tests.fixtures.backends import run_python
from tests.models.test_transformer import tiny_model

SUBPACKAGES = (
    "alignment",
    "data",
    "decoding",
    "evaluation",
    "export",
    "layers",
    "marian",
    "models",
    "plots",
    "recipe",
    "serving",
    "training",
)
BACKEND = keras.backend.backend()  # the fresh processes run under this one
# The packages whose names an `__init__.pyi` lists.
STUBBED = (
    "",
    ".alignment",
    ".data",
    ".evaluation",
    ".marian",
    ".models",
    ".recipe",
    ".serving",
    ".training",
)


TOUCH_EACH_SUBPACKAGE = f"""
import sys

import keras_transformer as kt

heavy = ["keras", "tensorflow"] + ["keras_transformer." + n for n in {SUBPACKAGES}]
assert not [name for name in heavy if name in sys.modules], sys.modules.keys()
for name in {SUBPACKAGES}:
    assert getattr(kt, name) is sys.modules["keras_transformer." + name], name
kt.layers.MultiHeadAttention, kt.models.build_transformer, kt.MultiHeadAttention
print("ok")
"""


@pytest.mark.slow
def test_subpackages_are_attributes_imported_when_touched(tmp_path):
    """`import keras_transformer` imports neither Keras nor a subpackage."""
    assert run_python(tmp_path, TOUCH_EACH_SUBPACKAGE, BACKEND).splitlines()[-1] == "ok"


@pytest.mark.parametrize("package", ["", *(f".{name}" for name in SUBPACKAGES)])
def test_every_name_in_all_resolves_and_is_listed_by_dir(package):
    module = importlib.import_module(f"keras_transformer{package}")
    assert module.__all__ and set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_the_top_level_lists_the_subpackages_and_the_most_used_names():
    assert set(SUBPACKAGES) <= set(kt.__all__)
    assert kt.MultiHeadAttention is kt.layers.MultiHeadAttention
    assert kt.Transformer is kt.models.Transformer
    assert kt.beam_search is kt.decoding.beam_search
    assert kt.TransformerSchedule is kt.training.TransformerSchedule
    assert not hasattr(kt, "no_such_name")


@pytest.mark.parametrize("package", STUBBED)
def test_the_stubs_all_lists_what_they_import(package):
    """A stub's `__all__` (read by type checkers) equals the names it imports
    (from which lazy_loader makes the package's `__all__`)."""
    module = importlib.import_module(f"keras_transformer{package}")
    stub = ast.parse(pathlib.Path(module.__file__).with_suffix(".pyi").read_text())
    (listed,) = [
        ast.literal_eval(node.value)
        for node in stub.body
        if isinstance(node, ast.Assign) and node.targets[0].id == "__all__"
    ]
    assert listed == module.__all__


LOAD_MODEL = """
import keras_transformer as kt

model = kt.load_model("model.keras")
print(type(model).__name__, type(model.loss).__name__, model.optimizer.name)
"""


@pytest.mark.slow
def test_one_line_loads_a_keras_file_in_a_fresh_process(tmp_path):
    """`kt.load_model(path)` after `import keras_transformer as kt`.

    Keras 3 finds the class a `.keras` file names (e.g.
    "keras_transformer>Transformer") among the registered classes only: it
    imports a class's module for its own packages (keras, keras_hub, ...),
    not for ours. `import keras_transformer` imports no module, so that the
    command line's `--help` starts neither Keras nor TensorFlow; a plain
    `keras.saving.load_model` in a fresh process therefore needs the classes
    imported first. `kt.load_model` (`kt.training.load_model`) imports them:
    the model and the loss, metric, schedule and optimizer of a compiled
    file.
    """
    model = tiny_model()
    model.compile(
        optimizer=kt.training.transformer_optimizer(model.config.d_model),
        loss=kt.training.LabelSmoothedCrossEntropy(),
        metrics=[kt.training.MaskedAccuracy()],
    )
    model.save(tmp_path / "model.keras")
    loaded = run_python(tmp_path, LOAD_MODEL, BACKEND).splitlines()[-1]
    assert loaded == f"Transformer LabelSmoothedCrossEntropy {model.optimizer.name}"


KERAS_LOAD_MODEL = """
import keras

import keras_transformer.layers
import keras_transformer as kt

layers = keras.saving.load_model("layers.keras")
kt.models.Transformer
model = keras.saving.load_model("model.keras")
print([type(layer).__name__ for layer in layers.layers], type(model).__name__)
"""


@pytest.mark.slow
def test_keras_loads_files_once_their_classes_are_imported(tmp_path):
    """Plain `keras.saving.load_model` after importing the layers (a model
    made of them), then after touching `kt.models.Transformer` (the model)."""
    layers = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            kt.layers.PositionalEmbedding(50, 16),
            kt.layers.EncoderBlock(2, 32),
        ]
    )
    layers.save(tmp_path / "layers.keras")
    tiny_model().save(tmp_path / "model.keras")
    loaded = run_python(tmp_path, KERAS_LOAD_MODEL, BACKEND).splitlines()[-1]
    assert loaded == "['PositionalEmbedding', 'EncoderBlock'] Transformer"
