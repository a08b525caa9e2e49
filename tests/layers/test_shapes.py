import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.layers.shapes import swap_axes_1_and_2, unflatten_rows
from tests.layer_test_case import traced_op_types


def test_known_inner_axes_need_no_shape_op():
    def restore(flat, like):
        return unflatten_rows(flat, like, (2, 4))

    specs = (tf.TensorSpec([None, 8]), tf.TensorSpec([None, 1, 16]))
    assert "Shape" not in traced_op_types(restore, *specs)
    outputs = restore(tf.zeros((3, 8)), tf.zeros((3, 1, 16)))
    assert tuple(outputs.shape) == (3, 1, 2, 4)


def test_unknown_inner_axes_are_read_at_run_time():
    def restore(flat, like):
        return unflatten_rows(flat, like)

    specs = (tf.TensorSpec([None, 5]), tf.TensorSpec([None, None, 16]))
    assert "Shape" in traced_op_types(restore, *specs)
    flat = np.arange(30, dtype="float32").reshape(6, 5)
    outputs = tf.function(restore)(flat, tf.zeros((2, 3, 16)))
    np.testing.assert_array_equal(outputs, flat.reshape(2, 3, 5))


@pytest.mark.parametrize("like_shape", [(0, 1, 16), (0, 0, 16), (2, 0, 16)])
def test_empty_tensors(like_shape):
    outputs = unflatten_rows(tf.zeros((0, 8)), tf.zeros(like_shape))
    assert tuple(outputs.shape) == (*like_shape[:-1], 8)


@pytest.mark.parametrize(
    "spec, moves_data",
    [
        ([None, 3, 1, 5], False),  # a reshape
        ([None, 1, 3, None], False),  # the last axis unknown: squeeze, expand
        ([None, 3, None, 5], True),  # maybe not of size 1: a transpose
        ([None, 3, 2, 5], True),
    ],
)
def test_swap_axes_1_and_2_transposes_only_where_an_axis_may_not_be_1(spec, moves_data):
    assert ("Transpose" in traced_op_types(swap_axes_1_and_2, tf.TensorSpec(spec))) == (
        moves_data
    )
    shape = [2 if size is None else size for size in spec]
    x = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    traced = tf.function(swap_axes_1_and_2, input_signature=[tf.TensorSpec(spec)])
    np.testing.assert_array_equal(traced(x), x.transpose(0, 2, 1, 3))
