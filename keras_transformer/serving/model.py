"""The export a server answers for: its signatures, run on NumPy arrays.

`ServedModel` loads a SavedModel of `export_translator` the way the
command line does (`export.engines.SavedModelEngine`) and describes each
signature in `rest.Signature` terms. A training run's folder is exported
first, into a temporary folder, exactly as `keras-transformer export`
would export it, so that the server always answers what TF Serving would
answer for the same export.
"""

import os
import tempfile

import numpy as np
import tensorflow as tf

from keras_transformer.decoding_defaults import ALPHA, BEAM_SIZE, decoding_settings
from keras_transformer.export.saved_model import versions
from keras_transformer.serving.rest import RequestError, Signature, TensorInfo


class ServedModel:
    """An export's signatures, by name, and the function that runs them.

    `decoding` holds the beam size and alpha the export records (those of
    `decoding_defaults` for an export too old to record them).

    Args:
        path: a SavedModel version folder, a model folder of versions (the
            highest is served, as TF Serving serves it), or a training
            run's folder (exported first).
        name: the model's name in the URLs; None: the model folder's name
            (`saved_models/translator/1`: "translator"), or the run's
            export name.
        threads: TensorFlow's CPU threads (`engines.set_threads`).
    """

    def __init__(self, path, name=None, threads=None):
        from keras_transformer.export.engines import SavedModelEngine

        self._temporary = None
        if _is_run_folder(path):
            path, default_name = self._export_run(path)
        else:
            path = _version_folder(path)
            default_name = os.path.basename(os.path.dirname(os.path.abspath(path)))
        self.path = path
        self.name = name or default_name
        version = os.path.basename(os.path.normpath(path))
        self.version = int(version) if version.isdigit() else 1
        engine = SavedModelEngine(path, threads)
        self._export = engine.export
        recorded = engine.saved or {"beam_size": BEAM_SIZE, "alpha": ALPHA}
        beam_size, alpha = decoding_settings(None, None, recorded)
        self.decoding = {"beam_size": beam_size, "alpha": alpha}
        self.signatures = {
            key: _signature(key, function)
            for key, function in self._export.signatures.items()
        }

    def run(self, name, inputs):
        """Signature `name` on `inputs` (arrays by name) -> arrays by name."""
        function = self._export.signatures[name]
        specs = self.signatures[name].inputs
        tensors = {
            key: tf.constant(value, tf.as_dtype(_tf_dtype(specs[key])))
            for key, value in inputs.items()
        }
        try:
            outputs = function(**tensors)
        except tf.errors.InvalidArgumentError as error:  # e.g. ids out of range
            raise RequestError(error.message) from None
        return {key: value.numpy() for key, value in outputs.items()}

    def close(self):
        """Removes the temporary export of a run folder."""
        if self._temporary is not None:
            self._temporary.cleanup()
            self._temporary = None

    def _export_run(self, folder):
        """Exports the run in `folder` to a temporary folder: (its version
        folder, the run's export name)."""
        from keras_transformer.cli.models import run_translator
        from keras_transformer.export import export_translator
        from keras_transformer.recipe.run_directory import model_and_run
        from keras_transformer.training import load_model

        model_path, run = model_and_run(folder)
        translator = run_translator(
            load_model(model_path, compile=False), run.tokenizer, run
        )
        name = run.read_config().output.export_name
        self._temporary = tempfile.TemporaryDirectory(prefix="keras-transformer-serve-")
        return export_translator(translator, self._temporary.name, name), name


def _is_run_folder(path):
    from keras_transformer.recipe.run_directory import RunDirectory

    return os.path.isdir(path) and RunDirectory(path).exists()


def _version_folder(path):
    """`path`, or its highest version folder where it holds versions (a
    path that holds neither is refused by `load_export`)."""
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        return path
    held = versions(path)
    return os.path.join(path, str(held[0])) if held else path


def _signature(name, function):
    """The `rest.Signature` of a loaded signature function."""
    _, inputs = function.structured_input_signature
    return Signature(
        name,
        {key: _info(spec) for key, spec in sorted(inputs.items())},
        {key: _info(spec) for key, spec in sorted(function.structured_outputs.items())},
    )


def _info(spec):
    dtype = np.dtype(object) if spec.dtype == tf.string else spec.dtype.as_numpy_dtype
    return TensorInfo(np.dtype(dtype), tuple(spec.shape.as_list()))


def _tf_dtype(info):
    return tf.string if info.dtype == object else info.dtype
