import keras
import numpy as np
import pytest

from keras_transformer import TransformerSchedule, transformer_optimizer


@pytest.mark.parametrize("step", [1, 10, 1000, 3999, 4000, 4001, 100000])
def test_values_follow_section_5_3(step):
    schedule = TransformerSchedule(d_model=512, warmup_steps=4000)
    expected = 512**-0.5 * min(step**-0.5, step * 4000**-1.5)
    np.testing.assert_allclose(float(schedule(step)), expected, rtol=1e-6)


def test_peak_is_at_the_end_of_warmup_and_step_zero_is_usable():
    schedule = TransformerSchedule(d_model=256, warmup_steps=100, scale=2.0)
    values = [float(schedule(step)) for step in range(0, 300)]
    assert int(np.argmax(values)) == 100
    assert 0 < values[0] == values[1]


def test_serializes():
    schedule = TransformerSchedule(d_model=128, warmup_steps=50, scale=0.5)
    restored = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule)
    )
    assert float(restored(70)) == float(schedule(70))


def test_optimizer_uses_the_papers_adam_settings():
    optimizer = transformer_optimizer(d_model=512)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.98, 1e-9)
    schedule = optimizer.get_config()["learning_rate"]
    assert schedule["class_name"] == "TransformerSchedule"
    assert schedule["config"] == {
        "d_model": 512,
        "warmup_steps": 4000,
        "scale": 1.0,
        "steps_per_update": 1,
        "cooldown_steps": 0,
        "total_steps": None,
    }


def test_with_accumulation_the_schedule_counts_updates():
    schedule = TransformerSchedule(d_model=64, warmup_steps=10, steps_per_update=3)
    per_update = TransformerSchedule(d_model=64, warmup_steps=10)
    # Keras evaluates the schedule at micro-batch m; update u ends at 3u + 2.
    for micro_batch in range(60):
        assert float(schedule(micro_batch)) == float(per_update(micro_batch // 3))


def test_cooldown_falls_linearly_to_zero_over_the_last_updates():
    paper = TransformerSchedule(d_model=64, warmup_steps=10)
    cooled = TransformerSchedule(
        d_model=64, warmup_steps=10, cooldown_steps=40, total_steps=100
    )
    for update in range(100):
        factor = min(1.0, (100 - update) / 40)
        np.testing.assert_allclose(
            float(cooled(update)), factor * float(paper(update)), rtol=1e-6
        )
    assert float(cooled(100)) == float(cooled(150)) == 0.0


def test_cooldown_counts_updates_under_accumulation():
    schedule = TransformerSchedule(
        d_model=64,
        warmup_steps=10,
        steps_per_update=2,
        cooldown_steps=5,
        total_steps=10,
    )
    paper = TransformerSchedule(d_model=64, warmup_steps=10)
    # Micro-batches 18 and 19 make the last update, at 1/5 of the paper's rate.
    np.testing.assert_allclose(float(schedule(19)), float(paper(9)) / 5, rtol=1e-6)


def test_optimizer_settings_can_be_overridden():
    optimizer = transformer_optimizer(d_model=64, beta_2=0.999, clipnorm=1.0)
    assert (optimizer.beta_2, optimizer.clipnorm) == (0.999, 1.0)


def test_weight_decay_shrinks_kernels_only():
    dense, norm = keras.layers.Dense(3), keras.layers.LayerNormalization()
    norm(dense(np.ones((1, 2), "float32")))
    weights = dense.trainable_weights + norm.trainable_weights
    for weight in weights:
        weight.assign(np.full(weight.shape, 2.0, "float32"))
    optimizer = transformer_optimizer(d_model=64, warmup_steps=10, weight_decay=0.5)
    learning_rate = float(optimizer.learning_rate)  # at step 0
    optimizer.apply([np.zeros(weight.shape, "float32") for weight in weights], weights)
    # A zero gradient leaves Adam's step at 0: only the decay moves weights.
    np.testing.assert_allclose(dense.kernel, 2.0 * (1 - 0.5 * learning_rate))
    for weight in (dense.bias, norm.gamma, norm.beta):
        np.testing.assert_array_equal(weight, 2.0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"d_model": 0}, "d_model"),
        ({"d_model": 8, "warmup_steps": 0}, "warmup_steps"),
        ({"d_model": 8, "scale": 0}, "scale"),
        ({"d_model": 8, "steps_per_update": 0}, "steps_per_update"),
        ({"d_model": 8, "cooldown_steps": -1}, "cooldown_steps"),
        ({"d_model": 8, "cooldown_steps": 10}, "total_steps"),
        ({"d_model": 8, "cooldown_steps": 10, "total_steps": 5}, "total_steps"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TransformerSchedule(**kwargs)
