import numpy as np
import pytest

from keras_transformer.layers import masks


def test_causal_mask_with_offset():
    mask = np.array(masks.causal_mask(2, 5, query_offset=2))
    np.testing.assert_array_equal(
        mask, [[True, True, True, False, False], [True, True, True, True, False]]
    )


def test_merge_masks_combines_every_kind():
    padding = np.array([[1, 1, 0]])
    attention = np.ones((1, 3, 3), bool)
    attention[0, 2, 0] = False
    merged = np.array(
        masks.merge_masks(3, 3, padding, attention, use_causal_mask=True)
    )[0, 0]
    expected = np.tril(np.ones((3, 3), bool)) & padding.astype(bool) & attention[0]
    np.testing.assert_array_equal(merged, expected)
    assert masks.merge_masks(3, 3) is None


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_fill_value_is_finite_and_large(dtype):
    import ml_dtypes

    value = masks.mask_fill_value(dtype)
    numpy_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    as_dtype = np.array(value, dtype=numpy_dtype)
    assert np.isfinite(as_dtype)
    assert float(as_dtype) < -1e4
    assert np.isfinite(np.array(value - 1000.0, dtype=numpy_dtype))
