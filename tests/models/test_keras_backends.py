"""The model through backend-neutral APIs only (Keras, keras-hub's samplers).

Run by the TensorFlow pass and again by the JAX pass
(`tests/test_backends.py`): training with `fit` and sampling with cached
decoding steps work the same on every backend.
"""

import keras
import keras_hub
import numpy as np
import pytest
from keras import ops

from tests.models.test_transformer import SOURCE, VOCAB, tiny_model

START = 1


def copy_task(rows=16, length=6, seed=0):
    """Sources of random ids, and as targets the same ids after a start token."""
    source = np.random.default_rng(seed).integers(2, VOCAB, (rows, length))
    decoder_inputs = np.concatenate([np.full((rows, 1), START), source[:, :-1]], 1)
    return {"encoder_inputs": source, "decoder_inputs": decoder_inputs}, source


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_a_few_fit_steps_lower_the_loss(policy):
    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = tiny_model()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=0
        ),
    )
    inputs, labels = copy_task()
    losses = model.fit(inputs, labels, batch_size=8, epochs=4, verbose=0).history
    assert losses["loss"][-1] < 0.9 * losses["loss"][0], losses
    assert np.all(np.diff(losses["loss"]) < 0), losses


def test_greedy_sampler_over_cached_steps_picks_the_full_pass_argmax():
    """keras-hub's `GreedySampler` feeds `decode_step` one token at a time;
    each token it picks is the argmax of one teacher-forced pass over them."""
    model = tiny_model()
    source = SOURCE.copy()
    source[1, 4:] = 0
    batch, steps = len(source), 5
    encoder_outputs, mask = model.encode(source)
    cross_attention_cache = model.compute_cross_attention_cache(encoder_outputs)
    cache = model.init_cache(batch, max_length=steps)
    prompt = np.concatenate(
        [np.full((batch, 1), START), np.zeros((batch, steps), int)], 1
    )  # (B, 1 + steps)
    not_padding = ops.arange(VOCAB) != 0  # 0 is padding, never picked

    def next_fn(prompt, cache, index):
        tokens = ops.slice(prompt, (0, index - 1), (batch, 1))  # (B, 1)
        step_logits, cache = model.decode_step(
            tokens, cache, index - 1, cross_attention_cache, mask, "write"
        )
        return ops.where(not_padding, step_logits[:, 0], -1e9), None, cache

    ids = keras_hub.samplers.GreedySampler()(
        next_fn, prompt, cache=cache, index=1, mask=prompt != 0
    )  # (B, 1 + steps)
    ids = np.asarray(ids)
    full = np.asarray(model.decode(ids[:, :-1], encoder_outputs, mask))
    np.testing.assert_array_equal(np.argmax(full[..., 1:], -1) + 1, ids[:, 1:])
