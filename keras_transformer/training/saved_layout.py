"""Loading models, weights and checkpoints saved in the layers' old layout.

Files written before commit bb144df (e.g. by 393643e) have the layers'
old layout: `PositionalEmbedding` held the embedding matrix (and the
output bias) itself, and the blocks showed their attention layers and
first layer norm to Keras through the dicts `attention_layers` and
`layer_norms` and made their sub-layers feed-forward first, attention
last. Now the matrix is the `token_embedding` sub-layer's and the blocks
make their sub-layers in the order `call()` uses them. That moves weights
in two ways:

- Keras's `.keras` and `.weights.h5` files name weights by attribute path:
  `<block>/attention_layers/multi_head_attention[_1]/` is now
  `<block>/self_attention/` (`cross_attention/`),
  `<block>/layer_norms/layer_normalization/` is
  `<block>/self_attention_layer_norm/`, and `positional_embedding/vars/0`
  (and `/1`, the bias) is `positional_embedding/token_embedding/vars/0`
  (and `positional_embedding/vars/0`).
- The optimizer keeps its slots by the index of each weight in
  `model.trainable_variables`, in `.keras` files and TensorFlow checkpoints
  alike, and a `TrainingCheckpoints` checkpoint reaches most of the model's
  weights through that list too. `_old_trainable_variables` gives the
  weights in the old order, so that the old indices find their weights.

This module alone knows the old layout. `load_model` and `load_weights`
convert an old file in a temporary copy and let Keras load it;
`restore_checkpoint` reads an old checkpoint through an optimizer built on
the weights in the old order. Files and checkpoints of the current layout
pass straight to Keras and TensorFlow.
"""

import json
import os
import re
import tempfile
import zipfile

import h5py
import keras
import tensorflow as tf

from keras_transformer.layers.decoder_block import DecoderBlock
from keras_transformer.layers.encoder_block import EncoderBlock
from keras_transformer.layers.positional_embedding import PositionalEmbedding

# Keras finds a file's classes among the registered ones (it imports the
# modules of its own packages only), so these imports register what a file
# of this package names: the model, and the loss, metric, schedule and
# optimizer of a compiled one. `load_model` then works in a fresh process.
# They are why this module is training's: the model's package imports
# nothing of training.
from keras_transformer.models.transformer import Transformer  # noqa: F401
from keras_transformer.training.keras_internals import FusedAdam  # noqa: F401
from keras_transformer.training.losses import LabelSmoothedCrossEntropy  # noqa: F401
from keras_transformer.training.metrics import MaskedAccuracy  # noqa: F401
from keras_transformer.training.schedules import TransformerSchedule  # noqa: F401

_WEIGHTS_FILE = "model.weights.h5"  # inside a .keras archive
_OPTIMIZER_VARS = "optimizer/vars/"

# How each weight path of the old layout reads now (regular expressions on
# "/" + path).
_RENAMED = (
    ("/attention_layers/multi_head_attention/", "/self_attention/"),
    ("/attention_layers/multi_head_attention_1/", "/cross_attention/"),
    ("/layer_norms/layer_normalization/", "/self_attention_layer_norm/"),
    (r"(/positional_embedding(?:_\d+)?)/vars/0$", r"\1/token_embedding/vars/0"),
    (r"(/positional_embedding(?:_\d+)?)/vars/1$", r"\1/vars/0"),
)
# The sub-layers of the blocks in the order the old blocks made them.
_OLD_SUBLAYERS = {
    EncoderBlock: (
        "feed_forward",
        "self_attention_layer_norm",
        "feed_forward_layer_norm",
        "self_attention",
    ),
    DecoderBlock: (
        "feed_forward",
        "self_attention_layer_norm",
        "cross_attention_layer_norm",
        "feed_forward_layer_norm",
        "self_attention",
        "cross_attention",
    ),
}
# A TrainingCheckpoints checkpoint of the old layout holds this key: the
# matrix was a weight of the embedding layer itself.
_OLD_CHECKPOINT_KEY = "model/source_embedding/embeddings/.ATTRIBUTES/VARIABLE_VALUE"


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """`keras.saving.load_model` for `.keras` files of either layout.

    Works in a fresh process: the classes that a file of this package
    names (the model, and a compiled one's loss, metric, schedule and
    optimizer) are registered by importing this module. A file of the old
    layout is converted in a temporary copy (the file itself is left as it
    is) and loaded from it, with its optimizer's state if it has one and
    `compile` is true.

    Args:
        filepath: a `.keras` file.
        custom_objects: as for `keras.saving.load_model`.
        compile: as for `keras.saving.load_model`.
        safe_mode: as for `keras.saving.load_model`.

    Returns:
        The model.

    Example:

    >>> from keras_transformer import TransformerConfig, build_transformer
    >>> model = build_transformer(TransformerConfig.tiny(vocab_size=50))
    >>> path = os.path.join(tempfile.mkdtemp(), "model.keras")
    >>> model.save(path)
    >>> type(load_model(path)).__name__
    'Transformer'
    """
    arguments = dict(custom_objects=custom_objects, safe_mode=safe_mode)
    with zipfile.ZipFile(filepath) as archive:
        config = json.loads(archive.read("config.json"))
        with h5py.File(archive.open(_WEIGHTS_FILE)) as weights:
            if not _is_old_layout(weights):
                return keras.saving.load_model(filepath, compile=compile, **arguments)
            model_weights, optimizer_weights = _renamed_weights(weights)
        with tempfile.TemporaryDirectory() as folder:
            converted = os.path.join(folder, "model.keras")
            _write_weights(os.path.join(folder, _WEIGHTS_FILE), model_weights)
            with zipfile.ZipFile(converted, "w") as copy:
                for name in archive.namelist():
                    if name != _WEIGHTS_FILE:
                        copy.writestr(name, archive.read(name))
                copy.write(os.path.join(folder, _WEIGHTS_FILE), _WEIGHTS_FILE)
            model = keras.saving.load_model(converted, compile=False, **arguments)
    if compile and config.get("compile_config"):
        with keras.saving.custom_object_scope(custom_objects or {}):
            model.compile_from_config(config["compile_config"])
        if optimizer_weights:
            state = _in_current_order(optimizer_weights, model)
            model.optimizer.load_own_variables(
                {str(i): array for i, array in enumerate(state)}
            )
    return model


def load_weights(model, filepath):
    """`model.load_weights(filepath)` for `.keras` and `.weights.h5` files
    of either layout.

    The optimizer's state of an old file is read as Keras reads it: into
    an optimizer already built, or skipped with Keras's warning.

    Args:
        model: a built model with the architecture of the file's.
        filepath: a `.keras` or `.weights.h5` file.
    """
    filepath = os.fspath(filepath)
    if filepath.endswith(".keras"):
        with zipfile.ZipFile(filepath) as archive:
            return _load_weights(model, filepath, archive.open(_WEIGHTS_FILE))
    return _load_weights(model, filepath, filepath)


def restore_checkpoint(path, model, optimizer=None):
    """Restores a `TrainingCheckpoints` checkpoint of either layout.

    A checkpoint of the old layout is read through an optimizer made like
    `optimizer` and built on `_old_trainable_variables(model)`, whose
    indices are the checkpoint's; its state is then copied into
    `optimizer`.

    Args:
        path: the checkpoint's prefix.
        model: the model whose weights are restored (built).
        optimizer: the model's built optimizer, restored too; None to read
            the weights only.

    Raises:
        AssertionError, ValueError, tf.errors.OpError: the checkpoint does
            not hold the model's (and the optimizer's) variables.
    """
    if _OLD_CHECKPOINT_KEY not in dict(tf.train.list_variables(path)):
        checkpoint = tf.train.Checkpoint(model=model)
        if optimizer is not None:
            checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        status = checkpoint.restore(path)
    elif optimizer is None:  # the weights in the old order are all to read
        weights = tf.Module()
        weights._trainable_variables = _old_trainable_variables(model)
        status = tf.train.Checkpoint(optimizer=weights).restore(path)
    else:
        old_optimizer = _optimizer_of_the_old_order(model, optimizer)
        status = tf.train.Checkpoint(optimizer=old_optimizer).restore(path)
        status.assert_existing_objects_matched()
        _copy_by_path(old_optimizer.variables, optimizer.variables)
    if optimizer is None:
        status.expect_partial()
    status.assert_existing_objects_matched()


def _old_trainable_variables(model):
    """`model.trainable_variables` in the order of the old layout.

    The model's layers keep their order; within a layer, the blocks' weights
    follow their old sub-layer order (`_OLD_SUBLAYERS`) and an embedding's
    matrix comes before its output bias.

    Args:
        model: a built `Transformer`.

    Returns:
        A list of the same variables.
    """
    current = model.trainable_variables
    position = {id(variable): i for i, variable in enumerate(current)}
    layers = [layer for layer in model.layers if layer.trainable_variables]
    layers.sort(key=lambda layer: position[id(layer.trainable_variables[0])])
    old = [variable for layer in layers for variable in _old_weights(layer)]
    if sorted(map(id, old)) != sorted(position):
        raise ValueError(
            f"The model {model.name!r} has weights outside its layers' old "
            "layout; it is not a Transformer of the old layout."
        )
    return old


def _old_weights(layer):
    """`layer`'s trainable weights in the order of the old layout."""
    if isinstance(layer, PositionalEmbedding):
        bias = [] if layer.bias is None else [layer.bias]
        return [layer.token_embedding.embeddings, *bias]
    names = _OLD_SUBLAYERS.get(type(layer))
    if names is None:
        return layer.trainable_variables
    return [w for name in names for w in getattr(layer, name).trainable_variables]


def _is_old_layout(weights):
    """Whether the open weights file `weights` holds the blocks' old dicts."""
    return weights.visit(lambda name: name.endswith("/attention_layers") or None)


def _renamed_weights(weights):
    """The arrays of the open old-layout weights file `weights`: the model's
    by their current path, and the optimizer's in a list by index."""
    arrays = {}

    def read(name, item):
        if isinstance(item, h5py.Dataset):
            arrays[name] = item[()]

    weights.visititems(read)
    model, optimizer = {}, {}
    for name, array in arrays.items():
        if name.startswith(_OPTIMIZER_VARS):
            optimizer[int(name.removeprefix(_OPTIMIZER_VARS))] = array
            continue
        path = "/" + name
        for old, new in _RENAMED:
            path = re.sub(old, new, path)
        model[path[1:]] = array
    return model, [optimizer[i] for i in range(len(optimizer))]


def _write_weights(path, arrays):
    with h5py.File(path, "w") as weights:
        for name, array in arrays.items():
            weights.create_dataset(name, data=array)


def _load_weights(model, filepath, weights_file):
    with h5py.File(weights_file) as weights:
        if not _is_old_layout(weights):
            return model.load_weights(filepath)
        model_weights, optimizer_weights = _renamed_weights(weights)
    state = _in_current_order(optimizer_weights, model)
    with tempfile.TemporaryDirectory() as folder:
        converted = os.path.join(folder, "converted.weights.h5")
        paths = {f"{_OPTIMIZER_VARS}{i}": array for i, array in enumerate(state)}
        _write_weights(converted, model_weights | paths)
        model.load_weights(converted)


def _in_current_order(arrays, model):
    """The old optimizer state `arrays` (by old index) in the order of the
    variables of `model.optimizer`; as it is where they differ in number or
    the optimizer is not built (Keras then skips it, with a warning)."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or len(arrays) != len(optimizer.variables):
        return arrays
    old_optimizer = _optimizer_of_the_old_order(model, optimizer)
    saved = dict(zip(_unique_paths(old_optimizer.variables), arrays, strict=True))
    return [saved[variable.path] for variable in optimizer.variables]


def _optimizer_of_the_old_order(model, optimizer):
    """A new optimizer like `optimizer`, built on the model's weights in the
    old order: its variables are those of an old file, index for index."""
    old_optimizer = optimizer.__class__.from_config(optimizer.get_config())
    old_optimizer.build(_old_trainable_variables(model))
    return old_optimizer


def _copy_by_path(sources, targets):
    values = dict(zip(_unique_paths(sources), sources, strict=True))
    for target in targets:
        target.assign(values[target.path])


def _unique_paths(variables):
    paths = [variable.path for variable in variables]
    if len(set(paths)) != len(paths):
        raise ValueError(f"The optimizer's variables share paths: {paths}.")
    return paths
