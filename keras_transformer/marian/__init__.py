"""Hugging Face Marian (OPUS-MT) checkpoints as this package's models.

`import_marian(hf_dir, output_dir)` writes a run folder that every command
takes (`keras-transformer import-marian`); `vocabulary` says how Marian's
ids become ours, `checkpoint` how its config and weights do. The names
(in `__init__.pyi`) are imported on first use.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
