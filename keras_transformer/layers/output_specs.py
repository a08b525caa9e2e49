"""Symbolic outputs of the layers whose `call` returns nests (caches, scores)."""

import keras


def symbolic_outputs(shapes, dtype):
    """A `keras.KerasTensor` of `dtype` for each shape in the nest `shapes`
    (what a layer's `compute_output_shape` returns): its `compute_output_spec`.

    Example:

    >>> outputs = symbolic_outputs(((2, 3), ((2, 4), (2, 4))), "float32")
    >>> outputs[0].shape, outputs[1][1].dtype
    ((2, 3), 'float32')
    """
    return keras.tree.map_shape_structure(
        lambda shape: keras.KerasTensor(shape, dtype=dtype), shapes
    )
