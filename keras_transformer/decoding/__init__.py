"""Decoding: greedy and beam search over a step function, and for the model.

`greedy_decode` and `beam_search` are `keras.ops` loops over
`next_fn(ids, cache, index) -> (logits, cache)` and a cache they never look
inside; `decode` runs them with a `keras_transformer.Transformer`, or lets
a keras-hub sampler choose the tokens (`hub_sampling`). They run on every
Keras backend (TensorFlow, JAX, PyTorch); `growing_cache` is the one
TensorFlow-only piece, the caches that `decode` grows there (measured
faster than the fixed buffers it is tested against). `controls` adjust each
step's logits (a repetition penalty, banned n-grams, a minimum length,
suppressed sequences) for every loop; `decode(prefix=...)` makes each
output begin with given tokens (`prefix`), and `decode(constraints=...)`
makes it contain given phrases (`constraints`, dynamic beam allocation).
`forced` scores given targets.
"""

from keras_transformer.decoding.beam_search import beam_search
from keras_transformer.decoding.controls import (
    MinLength,
    NoRepeatNgram,
    RepetitionPenalty,
    StepControl,
)
from keras_transformer.decoding.forced import token_log_probabilities
from keras_transformer.decoding.greedy import greedy_decode
from keras_transformer.decoding.model_decoding import decode, make_next_fn
from keras_transformer.decoding.spellings import SuppressSpellings, spelling_table
from keras_transformer.decoding.token_masks import AllowOnly, SuppressSequences
from keras_transformer.scorings import length_penalty

__all__ = [
    "AllowOnly",
    "MinLength",
    "NoRepeatNgram",
    "RepetitionPenalty",
    "StepControl",
    "SuppressSequences",
    "SuppressSpellings",
    "beam_search",
    "decode",
    "greedy_decode",
    "length_penalty",
    "make_next_fn",
    "spelling_table",
    "token_log_probabilities",
]
