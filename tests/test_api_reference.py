"""The API reference (docs/reference/*.md) against the package's public names.

Every `::: name` a reference page renders, and every `[text][name]` link to
one, must resolve (import the longest module prefix, then getattr the rest),
and every name in a subpackage's `__all__`, and in the top-level package's,
must have an entry: a `::: ...name` that resolves to the same object.
`mkdocs build --strict` checks that the entries render.
"""

import importlib
import pathlib
import re
import types

import pytest

REFERENCE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reference"
# `::: name`, or a link `[text][name]` to an entry.
ENTRY = r"^::: (\S+)$|\]\[(keras_transformer[\w.]*)\]"
# Subpackages that need only Keras; the others import TensorFlow.
KERAS_ONLY = ("layers", "models")
SUBPACKAGES = (
    "layers",
    "models",
    "training",
    "decoding",
    "data",
    "evaluation",
    "alignment",
    "export",
    "plots",
    "marian",
    "recipe",
    "serving",
)


def reference_names():
    """(page, identifier) of every `::: identifier` and `[...][identifier]`."""
    names = []
    for page in sorted(REFERENCE.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(
            r"^::: (\S+)$|\]\[(keras_transformer[\w.]*)\]", text, re.M
        ):
            names.append((page.name, match.group(1) or match.group(2)))
    return names


def resolve(identifier):
    """The object a dotted name names: its longest importable module, then getattr."""
    parts = identifier.split(".")
    for end in range(len(parts), 0, -1):
        module_name = ".".join(parts[:end])
        try:
            target = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise  # a dependency of the module is missing: not ours to hide
            continue
        for attribute in parts[end:]:
            target = getattr(target, attribute)
        return target
    raise ModuleNotFoundError(identifier)


def _marks(identifier):
    subpackage = identifier.split(".")[1] if identifier.count(".") else ""
    return [] if subpackage in KERAS_ONLY else [pytest.mark.tensorflow]


NAMES = reference_names()


def test_the_reference_lists_names():
    assert len(NAMES) > 50, NAMES


@pytest.mark.parametrize(
    "page, identifier",
    [pytest.param(*name, marks=_marks(name[1]), id=":".join(name)) for name in NAMES],
)
def test_reference_name_resolves(page, identifier):
    resolve(identifier)  # raises if it does not


def _documented(name, value):
    """Whether a `:::` entry ending in `.name` resolves to `value`."""
    for _, identifier in NAMES:
        if identifier.rsplit(".", 1)[-1] == name and resolve(identifier) is value:
            return True
    return False


@pytest.mark.parametrize(
    "subpackage",
    [
        pytest.param(name, marks=_marks(f"keras_transformer.{name}"))
        for name in SUBPACKAGES
    ],
)
def test_every_public_name_has_an_entry(subpackage):
    module = importlib.import_module(f"keras_transformer.{subpackage}")
    missing = [
        name for name in module.__all__ if not _documented(name, getattr(module, name))
    ]
    assert not missing, (
        f"keras_transformer.{subpackage}: no reference entry for {missing}"
    )


@pytest.mark.tensorflow
def test_every_top_level_name_has_an_entry():
    import keras_transformer

    pages = {page.stem for page in REFERENCE.glob("*.md")}
    missing = []
    for name in keras_transformer.__all__:
        value = getattr(keras_transformer, name)
        if isinstance(value, types.ModuleType):  # a subpackage: it has a page
            if name not in pages:
                missing.append(name)
        elif not name.startswith("__") and not _documented(name, value):
            missing.append(name)
    assert not missing, f"keras_transformer: no reference entry for {missing}"


def test_every_subpackage_has_a_page():
    pages = {page.stem for page in REFERENCE.glob("*.md")}
    assert set(SUBPACKAGES) <= pages, set(SUBPACKAGES) - pages
