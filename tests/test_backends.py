"""The layers, the model and decoding on other Keras backends, each in a
subprocess.

The suite runs under the TensorFlow backend; these tests start Python under
JAX (`KERAS_BACKEND=jax`) and PyTorch and check that the layers and the
model train and decode without TensorFlow importable at all, that a
`.keras` file gives the same logits on both backends, either way (JAX
there without TensorFlow too), and that the layer, model and decoding
tests pass under JAX. tests/export/test_decoding_backends.py checks that
decoding gives TensorFlow's tokens."""

import re
import subprocess
import sys

import keras
import numpy as np
import pytest

from tests.fixtures.backends import OTHER_BACKENDS, ROOT, python_environment, run_python
from tests.models.test_transformer import SOURCE, TARGET, logits, tiny_model

OTHER = "jax" if keras.backend.backend() != "jax" else "tensorflow"
SUBPROCESS_TIMEOUT = 1800  # a few minutes on two idle cores; more under load


WITHOUT_TENSORFLOW = """
import sys

import keras
import keras_hub  # keras-hub's layers import without TensorFlow too
import numpy as np

import keras_transformer
from keras_transformer.layers import MultiHeadAttention
from keras_transformer.models import TransformerConfig, build_transformer

model = build_transformer(TransformerConfig.tiny(50, d_model=16, d_ff=32))
source = np.array([[5, 6, 7, 2], [8, 9, 0, 0]])
target = np.array([[1, 4, 5], [1, 6, 0]])
model.compile(
    optimizer="adam",
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
)
model.fit({"encoder_inputs": source, "decoder_inputs": target}, target, verbose=0)
encoder_outputs, encoder_mask = model.encode(source)
context = model.compute_cross_attention_cache(encoder_outputs), encoder_mask
step_logits, cache = model.decode_step(target[:, :1], model.init_cache(2), 0, *context)
attention = MultiHeadAttention(2, 8)(np.ones((1, 1, 16), "float32"))
ids, _ = keras_transformer.decode(model, source, beam_size=2, max_length=4)
try:
    keras_transformer.export
except ModuleNotFoundError as error:
    message = str(error)
loaded = [name for name, m in sys.modules.items() if name[:10] == "tensorflow" and m]
print(keras.backend.backend(), tuple(step_logits.shape), tuple(ids.shape), loaded)
print(message)
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", OTHER_BACKENDS)
def test_layers_and_model_train_and_decode_without_tensorflow(tmp_path, backend):
    output = run_python(tmp_path, WITHOUT_TENSORFLOW, backend, tensorflow=False)
    first, message = output.strip().splitlines()[-2:]
    assert first == f"{backend} (2, 1, 50) (2, 1, 4) []"
    assert "needs TensorFlow (pip install tensorflow)" in message


CROSS = """
import keras
import numpy as np

from keras_transformer.models import TransformerConfig, build_transformer

arrays = np.load("inputs.npz")
feed = {"encoder_inputs": arrays["source"], "decoder_inputs": arrays["target"]}
loaded = keras.saving.load_model("here.keras")
keras.utils.set_random_seed(1)
config = TransformerConfig.tiny(
    50, d_model=32, d_ff=64, dropout=0.0, norm_first=True, shared_embeddings=False
)
built = build_transformer(config)
built.save("there.keras")
np.savez("there.npz", loaded=np.array(loaded(feed)), built=np.array(built(feed)))
"""


@pytest.mark.slow
def test_keras_files_give_the_same_logits_on_both_backends(tmp_path):
    """A `.keras` file saved here loads there and the reverse, within 1e-5;
    JAX there runs without TensorFlow, as on a JAX user's machine."""
    model = tiny_model()
    model.save(tmp_path / "here.keras")
    np.savez(tmp_path / "inputs.npz", source=SOURCE, target=TARGET)
    run_python(tmp_path, CROSS, OTHER, tensorflow=OTHER == "tensorflow")
    there = np.load(tmp_path / "there.npz")
    np.testing.assert_allclose(
        there["loaded"], logits(model, SOURCE, TARGET), atol=1e-5
    )
    reloaded = keras.saving.load_model(tmp_path / "there.keras")
    assert reloaded.config.norm_first and not reloaded.config.shared_embeddings
    np.testing.assert_allclose(
        logits(reloaded, SOURCE, TARGET), there["built"], atol=1e-5
    )


# The tests that run again under JAX, in two passes that two workers share:
# the layers and the model, and decoding and alignment, each with their
# doctests.
JAX_TESTS = {
    "layers_and_models": (
        "tests/layers",
        "tests/models",
        "keras_transformer/layers",
        "keras_transformer/models",
    ),
    "decoding": (
        "tests/decoding",
        "keras_transformer/decoding",
        "tests/alignment",
        "keras_transformer/alignment",
    ),
}


@pytest.mark.slow
@pytest.mark.longest
@pytest.mark.skipif(OTHER != "jax", reason="this is the run under JAX")
@pytest.mark.parametrize("group", JAX_TESTS)
def test_the_tests_pass_under_jax(tmp_path, group):
    """One pytest pass with KERAS_BACKEND=jax; tests marked `tensorflow` skip."""
    process = subprocess.run(
        # One process: this test already holds one of the outer run's workers.
        [sys.executable, "-m", "pytest", "-q", "-n", "0", *JAX_TESTS[group]],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        cwd=ROOT,
        env=python_environment("jax", tmp_path),
    )
    summary = process.stdout.strip().splitlines()[-1]
    assert process.returncode == 0, process.stdout[-6000:]
    assert " passed" in summary and not re.search(r"\d+ (failed|error)", summary)
