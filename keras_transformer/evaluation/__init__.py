"""Translation quality: sacreBLEU corpus BLEU, chrF and TER, and a Keras callback.

Imported on first use (the names are in `__init__.pyi`): the scores need
sacreBLEU only, so the run config checks a BLEU language without starting
TensorFlow; `BleuCallback` is a TensorFlow program.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
