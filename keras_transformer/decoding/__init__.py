"""Decoding: greedy and beam search over a step function, and for the model.

`greedy_decode` and `beam_search` are pure TensorFlow loops over
`next_fn(ids, cache, index) -> (logits, cache)` and a cache they never look
inside; `decode` runs them with a `keras_transformer.Transformer`, or lets
a keras-hub sampler choose the tokens (`hub_sampling`).
"""

import keras_transformer.requires_tensorflow  # noqa: F401 (says if TF is missing)
from keras_transformer.decoding.beam_search import beam_search
from keras_transformer.decoding.greedy import greedy_decode
from keras_transformer.decoding.model_decoding import decode, make_next_fn
from keras_transformer.scorings import length_penalty

__all__ = [
    "beam_search",
    "decode",
    "greedy_decode",
    "length_penalty",
    "make_next_fn",
]
