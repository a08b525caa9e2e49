"""Package attributes imported on first use (PEP 562).

A package's `__init__` names what it exports and where it lives; nothing is
imported until an attribute is read, so `import keras_transformer.recipe`
or the command line's `--help` do not start TensorFlow, and the layers and
the model import on any Keras backend where TensorFlow is not installed.
An attribute whose module needs TensorFlow then says so in one line.
"""

import importlib


def lazy_attributes(package, exports):
    """`__getattr__` and `__dir__` for a package exporting `exports`.

    Args:
        package: the package's `__name__`.
        exports: {attribute name: module that defines it}.

    Example:

    >>> getattr_, dir_ = lazy_attributes("pkg", {"sqrt": "math"})
    >>> getattr_("sqrt")(4.0)
    2.0
    """

    def __getattr__(name):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            module = importlib.import_module(exports[name])
        except ModuleNotFoundError as error:
            if error.name != "tensorflow":
                raise
            raise tensorflow_missing(f"{package}.{name}") from None
        return getattr(module, name)

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__


def tensorflow_missing(part):
    """The error raised where `part` of the package needs TensorFlow.

    Example:

    >>> print(tensorflow_missing("keras_transformer.data"))  # doctest: +ELLIPSIS
    keras_transformer.data needs TensorFlow (pip install tensorflow); ...
    """
    return ModuleNotFoundError(
        f"{part} needs TensorFlow (pip install tensorflow); keras_transformer."
        "layers and keras_transformer.models run on any Keras backend without it.",
        name="tensorflow",
    )
