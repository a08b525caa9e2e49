"""A Transformer trained to reverse sequences decodes held-out inputs exactly."""

import numpy as np
import pytest
import tensorflow as tf

from examples.train_reverse import VOCAB_SIZE, reversal_data, train_reverser
from keras_transformer.decoding import decode

MAX_LENGTH = 8


@pytest.mark.slow
@pytest.mark.tensorflow
def test_greedy_and_beam_search_reverse_held_out_sequences():
    model = train_reverser(10000, epochs=8, max_length=MAX_LENGTH, verbose=0)
    sources, _, expected = reversal_data(300, VOCAB_SIZE, MAX_LENGTH, seed=1)  # labels
    for beam_size in (1, 4):
        translate = tf.function(
            lambda x, k=beam_size: decode(model, x, beam_size=k, extra_length=5),
            input_signature=[tf.TensorSpec([None, None], tf.int32)],
        )
        ids = translate(sources)[0].numpy()[:, 0]  # (N, MAX_LENGTH + 5)
        padded_expected = np.pad(
            expected, [(0, 0), (0, ids.shape[1] - expected.shape[1])]
        )
        exact = np.all(ids == padded_expected, axis=1)
        assert exact.mean() >= 0.95, (beam_size, exact.mean())
