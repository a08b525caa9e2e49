"""The encoder-decoder model and its configuration.

Imported on first use (the names are in `__init__.pyi`): the command line
reads `TransformerConfig` without starting Keras. It imports the layers and
nothing of `keras_transformer.training`; a saved `.keras` file loads with
`keras_transformer.load_model` (`training.load_model`), which registers the
training pieces a compiled file names.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
