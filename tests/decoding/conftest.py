"""A small random model and sources shared by the model-decoding tests."""

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt
from keras_transformer.decoding import decode

VOCAB, START = 50, 1
SOURCES = np.array(
    [[5, 6, 7, 8, 9, 10], [11, 12, 13, 0, 0, 0], [14, 15, 16, 17, 0, 0]], "int32"
)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    config = kt.TransformerConfig.tiny(VOCAB, d_model=32, d_ff=64, dropout=0.0)
    return kt.build_transformer(config)


@pytest.fixture(scope="module")
def end_id(model):
    """A token the random model emits mid-sequence, so that some outputs end
    with it and others run to their limit."""
    ids, _ = decode(model, SOURCES, end_id=-1, beam_size=1, extra_length=3)
    return int(ops.convert_to_numpy(ids)[0, 0, 2])
