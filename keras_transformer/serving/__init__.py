"""`keras-transformer serve`: TF Serving's REST API over an export, here.

`rest` reads and writes TF Serving's predict JSON; `batching` merges
concurrent requests into batches run on worker threads; `model` loads the
export (or exports a run first); `app` is the Starlette application of
them all; `settings` holds the batching parameters and request limits.
Needs the `serve` extra (Starlette, uvicorn). Imported on first use (the
names are in `__init__.pyi`).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
