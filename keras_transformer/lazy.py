"""Package attributes imported on first use (PEP 562).

A package's `__init__` names what it exports and where it lives; nothing is
imported until an attribute is read, so `import keras_transformer.recipe`
or the command line's `--help` do not start TensorFlow.
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
        return getattr(importlib.import_module(exports[name]), name)

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__
