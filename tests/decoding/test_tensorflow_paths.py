"""The TensorFlow-only paths give what their `keras.ops` references give (the
caches that grow: test_model_decoding's `test_caches_that_grow_...`)."""

import numpy as np
import pytest
from keras import ops

from keras_transformer.decoding import tensorflow_paths
from keras_transformer.decoding.loops import ops_take_per_row

pytestmark = pytest.mark.tensorflow


def test_take_per_row_equals_the_flat_take():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5, 4, 2)).astype("float32")
    indices = rng.integers(0, 5, size=(3, 7)).astype("int32")
    expected = ops.convert_to_numpy(ops_take_per_row(x, indices))
    np.testing.assert_array_equal(tensorflow_paths.take_per_row(x, indices), expected)
    assert expected.shape == (3, 7, 4, 2)


def test_take_rows_equals_ops_take():
    x = np.arange(24, dtype="int32").reshape(6, 4)
    rows = np.array([5, 0, 0, 3], "int32")
    np.testing.assert_array_equal(
        tensorflow_paths.take_rows(x, rows), ops.take(x, rows, axis=0)
    )
