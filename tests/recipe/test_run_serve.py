"""`keras-transformer serve RUN_FOLDER`: the run exported first, then served."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.serving import ServedModel

pytestmark = pytest.mark.slow


def test_a_run_folder_is_served_as_its_export_answers(finished_run):
    config, results, _, _ = finished_run
    model = ServedModel(config.output.output_dir)
    temporary = model.path
    try:
        assert (model.name, model.version) == (config.output.export_name, 1)
        assert not temporary.startswith(config.output.output_dir)  # nothing written
        texts = np.array([b"Guten Morgen!", b"Das Haus ist alt."], object)
        served = model.run("serving_default", {"text": texts})
        export = tf.saved_model.load(results["export_path"])
        direct = export.signatures["serving_default"](text=tf.constant(texts))
        assert served["translation"].tolist() == direct["translation"].numpy().tolist()
        assert model.decoding == {
            "beam_size": config.evaluation.beam_size,
            "alpha": config.evaluation.alpha,
        }
    finally:
        model.close()
    assert not os.path.exists(temporary)
