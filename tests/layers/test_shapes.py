import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.layers.shapes import swap_axes_1_and_2, unflatten_rows

pytestmark = pytest.mark.tensorflow  # traced with tf.function signatures


@pytest.mark.parametrize(
    "like_spec", [[None, 1, 16], [None, None, 16], [None, 3, None]]
)
def test_unflatten_rows_restores_the_leading_axes(like_spec):
    """Traced with the batch (and maybe more) unknown, as behind a signature."""

    def restore(flat, like):
        return unflatten_rows(flat, like, (2, 4))

    traced = tf.function(
        restore, input_signature=[tf.TensorSpec([None, 8]), tf.TensorSpec(like_spec)]
    )
    like = tf.zeros([2 if size is None else size for size in like_spec])
    rows = int(np.prod(like.shape[:-1]))
    flat = np.arange(rows * 8, dtype="float32").reshape(rows, 8)
    np.testing.assert_array_equal(
        traced(flat, like), flat.reshape(*like.shape[:-1], 2, 4)
    )


@pytest.mark.parametrize("like_shape", [(0, 1, 16), (0, 0, 16), (2, 0, 16)])
def test_empty_tensors(like_shape):
    outputs = unflatten_rows(tf.zeros((0, 8)), tf.zeros(like_shape))
    assert tuple(outputs.shape) == (*like_shape[:-1], 8)


@pytest.mark.parametrize(
    "spec", [[None, 3, 1, 5], [None, 1, 3, None], [None, 3, None, 5], [None, 3, 2, 5]]
)
def test_swap_axes_1_and_2_equals_a_transpose(spec):
    shape = [2 if size is None else size for size in spec]
    x = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    traced = tf.function(swap_axes_1_and_2, input_signature=[tf.TensorSpec(spec)])
    np.testing.assert_array_equal(traced(x), x.transpose(0, 2, 1, 3))
