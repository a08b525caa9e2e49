"""The same tokens on every Keras backend: decoding on JAX and PyTorch
against TensorFlow, for a random tiny model, the trained reversal model and
two imported Marian fixtures, each saved as a `.keras` file and decoded in
a fresh interpreter without TensorFlow (as on a JAX or PyTorch user's
machine)."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.decoding import decode, token_log_probabilities
from tests.fixtures.backends import OTHER_BACKENDS, run_python
from tests.marian.test_import import loaded, reference_limit
from tests.models.test_transformer import SOURCE, tiny_model

# Each search, as `decode`'s arguments; every model decodes with all of them.
SEARCHES = {
    "greedy": dict(beam_size=1),
    "beam": dict(beam_size=4),
    "transformers": dict(beam_size=4, alpha=1.0, scoring="transformers"),
    "nbest": dict(beam_size=4, num_results=4),
}
LIMITS = dict(extra_length=5, max_length=16)
MARIAN = ("shared_swish", "separate_swish")
# Scores are float32 sums of up to max_length log-probabilities: 1e-5, and
# 1e-6 of a long output's (on one Xeon, a Marian fixture's -57.95687 on JAX
# and -57.95689 here).
SCORE_TOLERANCE = dict(atol=1e-5, rtol=1e-6)

DECODE_EVERYWHERE = """
import json
import sys

import keras
import numpy as np
from keras import ops

from keras_transformer.models import Transformer  # noqa: F401 (registers it)
from keras_transformer.decoding import decode, token_log_probabilities

searches, limits_of = json.loads(sys.argv[1]), json.loads(sys.argv[2])
results = {}
for name, sources in np.load("sources.npz").items():
    limits = limits_of[name]
    model = keras.saving.load_model(f"{name}.keras", compile=False)
    for search, arguments in searches.items():
        ids, scores = decode(model, sources, **arguments, **limits)
        results[f"{name}_{search}_ids"] = ops.convert_to_numpy(ids)
        results[f"{name}_{search}_scores"] = ops.convert_to_numpy(scores)
    best = results[f"{name}_beam_ids"][:, 0]
    forced = token_log_probabilities(model, best, *model.encode(sources))
    results[f"{name}_score"] = ops.convert_to_numpy(forced)
    if keras.backend.backend() == "jax":  # fixed shapes, L = max_length
        import jax

        for search in ("greedy", "beam"):
            arguments = {**searches[search], **limits}
            ids, scores = jax.jit(lambda s: decode(model, s, **arguments))(sources)
            results[f"{name}_{search}_jit_ids"] = np.asarray(ids)
            results[f"{name}_{search}_jit_scores"] = np.asarray(scores)
np.savez("decoded.npz", **results)
"""


def decoded_here(models, sources, limits_of):
    """What `DECODE_EVERYWHERE` computes, on TensorFlow in this process."""
    results = {}
    for name, model in models.items():
        for search, arguments in SEARCHES.items():
            ids, scores = decode(model, sources[name], **arguments, **limits_of[name])
            results[f"{name}_{search}_ids"] = ids.numpy()
            results[f"{name}_{search}_scores"] = scores.numpy()
        best = results[f"{name}_beam_ids"][:, 0]
        forced = token_log_probabilities(model, best, *model.encode(sources[name]))
        results[f"{name}_score"] = forced.numpy()
    return results


@pytest.fixture(scope="module")
def models_and_sources(translator, held_out):
    keras.utils.set_random_seed(0)
    trained_sources = translator.source_ids(tf.constant([s for s, _ in held_out[:24]]))
    models = {"tiny": tiny_model(), "trained": translator.model}
    sources = {"tiny": SOURCE.astype("int32"), "trained": trained_sources.numpy()}
    limits_of = dict.fromkeys(models, LIMITS)
    for variant in MARIAN:  # the reference's sources, up to generate()'s limit
        model, tokenizer, _, reference, _ = loaded(variant)
        name = f"marian_{variant}"
        models[name] = model
        sources[name] = tokenizer.tokenize(reference["sources"]).to_tensor().numpy()
        limit = reference_limit(reference)
        limits_of[name] = dict(extra_length=limit, max_length=limit)
    return models, sources, limits_of, decoded_here(models, sources, limits_of)


@pytest.mark.slow
@pytest.mark.longest
@pytest.mark.parametrize("backend", OTHER_BACKENDS)
def test_decoding_gives_the_same_tokens_on_every_backend(
    tmp_path, models_and_sources, backend
):
    models, sources, limits_of, expected = models_and_sources
    for name, model in models.items():
        model.save(tmp_path / f"{name}.keras")
    np.savez(tmp_path / "sources.npz", **sources)
    arguments = [json.dumps(SEARCHES), json.dumps(limits_of)]
    run_python(tmp_path, DECODE_EVERYWHERE, backend, tensorflow=False, args=arguments)
    there = dict(np.load(tmp_path / "decoded.npz"))
    for key, value in expected.items():
        if key.endswith("_ids"):
            np.testing.assert_array_equal(there[key], value, err_msg=key)
        else:
            np.testing.assert_allclose(
                there[key], value, **SCORE_TOLERANCE, err_msg=key
            )
    ended = expected["trained_greedy_ids"] == 2
    assert ended.any(axis=-1).all()  # the trained model ends every output
    for key in [key for key in there if "_jit_" in key]:
        eager = there[key.replace("_jit", "")]
        length = eager.shape[-1]
        if key.endswith("_ids"):  # the buffers of max_length, then padding
            np.testing.assert_array_equal(there[key][..., :length], eager, key)
            assert not there[key][..., length:].any()
        else:
            np.testing.assert_allclose(
                there[key], eager, **SCORE_TOLERANCE, err_msg=key
            )
