"""The paper's training recipe (schedule, optimizer, loss, metric) and how it runs.

The names (in `__init__.pyi`) are imported on first use.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
