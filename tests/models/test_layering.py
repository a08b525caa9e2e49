"""The model's package sits below training's: it imports nothing of it.

`keras_transformer.training` imports the model (its `load_model` registers
the model's classes beside the recipe's loss, metric, schedule and
optimizer), so an import the other way would make each package import the
other.
"""

import ast
import json
import pathlib

import keras
import pytest

import keras_transformer.models
from tests.fixtures.backends import run_python

MODELS = pathlib.Path(keras_transformer.models.__file__).parent
PACKAGE = keras_transformer.models.__name__.split(".")
TRAINING = "keras_transformer.training"

IMPORT_THE_MODELS = """
import importlib
import json
import pkgutil
import sys

import keras_transformer.models as models

for module in pkgutil.iter_modules(models.__path__):
    importlib.import_module(f"{models.__name__}.{module.name}")
for name in models.__all__:
    getattr(models, name)
ours = [name for name in sys.modules if name.startswith("keras_transformer.")]
print(json.dumps(ours))
"""


@pytest.mark.slow
def test_importing_the_models_imports_no_training_module(tmp_path):
    """In a fresh process: every module of the package, and every name."""
    output = run_python(tmp_path, IMPORT_THE_MODELS, keras.backend.backend())
    imported = json.loads(output.splitlines()[-1])
    assert "keras_transformer.models.transformer" in imported
    assert not [name for name in imported if name.startswith(TRAINING)], imported


def imported_names(path):
    """The absolute names that the module at `path` (in `MODELS`) imports,
    wherever it imports them (a function's body included)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):  # `from ..training import x` too
            parts = PACKAGE[: len(PACKAGE) + 1 - node.level] if node.level else []
            module = ".".join([*parts, *filter(None, [node.module])])
            names += [f"{module}.{alias.name}" for alias in node.names]
    return names


def test_no_module_of_the_models_imports_training():
    """Also not in a function's body, which an import does not run."""
    for path in sorted(MODELS.glob("*.py*")):
        names = imported_names(path)
        assert not [name for name in names if name.startswith(TRAINING)], path
