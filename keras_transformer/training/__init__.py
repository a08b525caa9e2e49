"""The paper's training recipe (schedule, optimizer, loss, metric) and how it runs.

Also `load_model`, for `.keras` files of compiled models: it registers the
recipe's classes that such a file names, so it lives here, above the
model's package (`keras_transformer.models` imports nothing of training).
The names (in `__init__.pyi`) are imported on first use.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
