"""The ids every vocabulary of the package reserves, in one place.

Token id 0 pads, 1 starts a target, 2 ends a sequence and 3 stands for an
unknown piece: the tokenizers make their vocabularies so, and the layers'
padding masks, the decoders' defaults and the exports read them here.
TensorFlow-free, so that settings and the command line can read them too.
The pieces of every vocabulary (SentencePiece's) mark the start of a word
with `WORD_START`.
"""

PAD_ID = 0
START_ID = 1
END_ID = 2
UNKNOWN_ID = 3
WORD_START = "\u2581"  # SentencePiece's mark of a piece that starts a word
