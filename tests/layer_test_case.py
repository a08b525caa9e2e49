"""The check every public layer goes through.

`run_layer_test` builds the layer from keyword arguments and checks the
things every Keras layer owes its users: a config round trip, eager and
symbolic calls that agree (`check_output_shapes`), a `.keras` save/load
round trip without `custom_objects` that reproduces the outputs, a `fit`
step that moves every trainable weight, and the expected number of weights.
"""

import inspect

import keras
import numpy as np


def run_layer_test(
    layer_class,
    init_kwargs,
    input_data,
    call_kwargs=None,
    expected_output_shape=None,
    expected_num_trainable_weights=None,
    tmp_path=None,
):
    """Runs the shared checks on `layer_class(**init_kwargs)`.

    Args:
        layer_class: the layer to test.
        init_kwargs: keyword arguments of the constructor.
        input_data: dict of call-argument name to NumPy array (the tensors).
        call_kwargs: dict of non-tensor call arguments.
        expected_output_shape: shape of the (first) output.
        expected_num_trainable_weights: number of trainable weights.
        tmp_path: folder for the `.keras` file.

    Returns:
        The layer after the checks.
    """
    call_kwargs = call_kwargs or {}

    layer = layer_class(**init_kwargs)
    config = layer.get_config()
    assert layer_class.from_config(config).get_config() == config

    eager = _first(check_output_shapes(layer, input_data, call_kwargs))
    if expected_output_shape is not None:
        assert tuple(eager.shape) == tuple(expected_output_shape)
    if expected_num_trainable_weights is not None:
        assert len(layer.trainable_weights) == expected_num_trainable_weights

    inputs = {
        name: keras.Input(array.shape[1:], dtype=str(array.dtype), name=name)
        for name, array in input_data.items()
    }
    symbolic_layer = layer_class.from_config(config)
    symbolic = _first(symbolic_layer(**inputs, **call_kwargs))
    assert tuple(symbolic.shape[1:]) == tuple(eager.shape[1:])
    model = keras.Model(inputs, symbolic)
    outputs = model(input_data)

    path = tmp_path / f"{layer.name}.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert isinstance(reloaded.get_layer(symbolic_layer.name), layer_class)
    np.testing.assert_allclose(reloaded(input_data), outputs, atol=1e-6)

    before = [np.array(w) for w in model.trainable_weights]
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    target = np.random.default_rng(0).normal(size=outputs.shape).astype("float32")
    model.fit(input_data, target, batch_size=len(target), epochs=1, verbose=0)
    unchanged = [
        weight.path
        for weight, old in zip(model.trainable_weights, before, strict=True)
        if np.array_equal(np.array(weight), old)
    ]
    assert not unchanged, f"fit did not update {unchanged}"
    return layer


def check_output_shapes(layer, input_data, call_kwargs=None):
    """Checks `layer`'s shapes against an eager call's outputs.

    `layer.compute_output_shape` gets each tensor (or nested tensors) of
    `input_data` as `name_shape` and each of `call_kwargs` by its name,
    where it takes them (Keras aligns `build` and `compute_output_shape`
    with `call` by these names), and must give the shapes of the outputs
    in their structure. A symbolic call on `keras.KerasTensor`s of the same
    shapes must give outputs of the same structure, shapes and dtypes.

    Returns:
        The eager call's outputs.
    """
    call_kwargs = call_kwargs or {}
    outputs = layer(**input_data, **call_kwargs)
    shapes = keras.tree.map_structure(lambda x: tuple(x.shape), outputs)

    names = inspect.signature(layer.compute_output_shape).parameters
    arguments = {
        f"{name}_shape": keras.tree.map_structure(lambda x: tuple(x.shape), value)
        for name, value in input_data.items()
    }
    arguments = {
        name: value
        for name, value in {**arguments, **call_kwargs}.items()
        if name in names
    }
    expected = layer.compute_output_shape(**arguments)
    assert keras.tree.map_shape_structure(tuple, expected) == shapes

    symbolic = layer(
        **keras.tree.map_structure(
            lambda x: keras.KerasTensor(x.shape, dtype=_dtype(x)), input_data
        ),
        **call_kwargs,
    )
    assert keras.tree.map_structure(_spec, symbolic) == keras.tree.map_structure(
        _spec, outputs
    )
    return outputs


def _spec(x):
    return tuple(x.shape), _dtype(x)


def _dtype(x):
    return keras.backend.standardize_dtype(x.dtype)


def _first(outputs):
    return outputs[0] if isinstance(outputs, tuple | list) else outputs
