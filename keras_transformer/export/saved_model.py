"""Writing a `Translator` in TensorFlow Serving's layout."""

import os
import tempfile

import tensorflow as tf

from keras_transformer.export.staging import staging_folder
from keras_transformer.export.translator import Translator

VOCABULARY_FILE = "tokenizer.model"


def versions(model_dir):
    """The integer version folders in `model_dir`, highest first ([] if
    none, or if `model_dir` is not a folder)."""
    if not os.path.isdir(model_dir):
        return []
    return sorted(
        (int(name) for name in os.listdir(model_dir) if name.isdigit()), reverse=True
    )


def next_version(model_dir):
    """1 + the largest integer version folder in `model_dir` (1 if none)."""
    return max(versions(model_dir), default=0) + 1


def export_translator(
    translator,
    export_dir="saved_models",
    name="translator",
    version=None,
    dtype_policy="float32",
):
    """Saves `translator` as `export_dir/name/version/`, the layout TF Serving reads.

    The SavedModel holds the signatures of `translator.signatures()`
    (`serving_default`, `greedy`, `beam`, `ids`, `attention`, `nbest`,
    `score`, `align`, `sample` and the `controlled` ones), which decode
    and read sources with the translator's `max_length` (saved as
    `max_source_pieces`, `max_length - 1`), and the tokenizer's
    SentencePiece model as the asset `assets/tokenizer.model`; it loads in
    TF2 (`tf.saved_model.load`) and in graph loaders (TF Serving, TF1's
    `tf.compat.v1.saved_model.loader.load`). It is written to a hidden
    folder first and renamed into place, so an interrupted export never
    leaves a half-written version that a model server could pick up (the
    next export on this host deletes the hidden folder of one that was
    killed: `staging.staging_folder`). Only the model's weights are
    exported, not the optimizer state of a model that was trained. The
    exported model computes in `dtype_policy`, float32 unless asked,
    whatever policy the translator's model computes in (a model trained in
    mixed_bfloat16 exports a float32 translator).

    Args:
        translator: a `keras_transformer.export.Translator`.
        export_dir: the base folder, `saved_models` by default.
        name: the model's name (TF Serving's `--model_name`).
        version: an int; by default one more than the newest version.
        dtype_policy: the Keras dtype policy of the exported model, e.g.
            "float32" or "mixed_bfloat16".

    Returns:
        The path of the new version folder.
    """
    model_dir = os.path.join(export_dir, name)
    version = next_version(model_dir) if version is None else int(version)
    path = os.path.join(model_dir, str(version))
    if os.path.exists(path):
        raise FileExistsError(f"{path} exists; pass another version.")
    serving = _serving_copy(translator, dtype_policy)
    with staging_folder(path) as staging, tempfile.TemporaryDirectory() as folder:
        vocabulary = os.path.join(folder, VOCABULARY_FILE)
        serving.tokenizer.save(vocabulary)
        serving.vocabulary = tf.saved_model.Asset(vocabulary)
        # The signatures read the tf.Variables inside Keras 3 variables.
        # Tracked only through their Keras wrappers, these are saved as
        # copies that TF2's loader fixes up but graph loaders (TF1's, TF
        # Serving's) leave uninitialized; tracking them restores them.
        serving.model_variables = [v.value for v in serving.model.variables]
        tf.saved_model.save(serving, staging, signatures=serving.signatures())
    return path


def _serving_copy(translator, dtype_policy):
    """The same translator over an uncompiled copy of the model's weights.

    The copy computes in `dtype_policy`; its weights are the model's.
    """
    model = translator.model
    copy = type(model).from_config({**model.get_config(), "dtype": dtype_policy})
    copy.set_weights(model.get_weights())
    return Translator(
        copy,
        translator.tokenizer,
        beam_size=translator.beam_size,
        alpha=translator.alpha,
        extra_length=translator.extra_length,
        scoring=translator.scoring,
        max_length=translator.max_length,
    )
