"""The encoder-decoder model and its configuration.

Imported on first use (the names are in `__init__.pyi`): the command line
reads `TransformerConfig` without starting Keras.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
