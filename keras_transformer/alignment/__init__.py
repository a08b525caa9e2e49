"""Word alignments: hard links from a model's cross-attention, Pharaoh text,
AER, and markup carried through a translation by them.

`links` reads which source words each target word came from out of one
decoder layer's cross-attention (Keras ops, any backend); `pharaoh`
writes and reads them as Pharaoh lines and scores them against a gold
set (the alignment error rate); `markup` takes tags and protected spans
out of a source and puts them back into its translation where the
alignment says. Imported on first use (the names are in `__init__.pyi`):
the Pharaoh and markup functions need neither Keras nor NumPy.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
