"""The training plan: its length for a corpus size, and its summary."""

import keras

from keras_transformer.recipe.config import RunConfig, TrainingSection
from keras_transformer.recipe.plan import make_plan, training_length
from keras_transformer.recipe.run_directory import RunDirectory
from keras_transformer.recipe.trainer import compiled_model
from keras_transformer.training import global_dtype_policy
from keras_transformer.training.duration import default_length


def test_training_length_follows_the_corpus_size():
    training = TrainingSection()
    lengths = [training_length(training, batches) for batches in (39, 75, 150, 600)]
    assert lengths == [(58, 39), (30, 75), (15, 150), (16, 590)]
    updates = [epochs * steps for epochs, steps in lengths]
    assert abs(updates[0] - 2250) < 39 / 2  # the passes that come closest
    assert updates[1] == updates[2] == 2250 < updates[3]
    assert training_length(TrainingSection(steps_per_epoch=50), 600) == (189, 50)


def test_above_dings_size_the_epochs_make_the_default_length():
    """Epochs of a pass or a little less, so that they make the length."""
    for preset in ("small", "big"):
        for batches in (151, 600, 5_000, 70_000, 3_000_000):
            epochs, steps = training_length(TrainingSection(), batches, preset)
            wanted = default_length(batches, 2048, preset).steps
            assert steps <= batches and abs(epochs * steps - wanted) <= epochs / 2
    # Over the paper's budget, one epoch of the budget, less than a pass.
    assert training_length(TrainingSection(), 3_000_000) == (1, 1_220_703)


def plan_of(config, batches_per_pass=150, precision="float32", replicas=1, xla=False):
    sizes = {"train": 1000, "validation": 10, "test": 20}
    return make_plan(
        config, sizes, 100, batches_per_pass, replicas, precision, jit_compile=xla
    )


def test_the_plan_is_computed_once_and_summarised_from_it():
    plan = plan_of(RunConfig())
    assert (plan.epochs, plan.steps_per_epoch, plan.updates) == (15, 150, 2250)
    assert (plan.warmup_steps, plan.cooldown_steps) == (400, 750)
    assert plan_of(RunConfig(), batches_per_pass=57).warmup_steps == 400
    short = plan_of(RunConfig.from_dict({"training": {"epochs": 1}}))
    assert short.warmup_steps == 30  # a fifth of the run's 150 updates
    given = RunConfig.from_dict({"training": {"warmup_steps": 100}})
    assert plan_of(given).warmup_steps == 100
    accumulated = plan_of(
        RunConfig.from_dict({"training": {"gradient_accumulation": 3}})
    )
    assert accumulated.updates == 750 and accumulated.total_steps == 2250
    summary = plan.summary(parameters=1234, resumed_step=7)
    assert summary.splitlines()[0] == (
        "Data: 1,000 training pairs, 10 validation, 20 test; vocabulary: 100 pieces;"
        " 150 batches of up to 2,048 tokens a pass"
    )
    assert "Model: 1,234 parameters, TransformerConfig(vocab_size=100" in summary
    assert summary.splitlines()[2:] == [
        "Training: 15 epochs of 150 steps, 2,250 updates, warm-up 400, cool-down "
        "over the last 750",
        "Length: 4.61M tokens seen, by default for 150 batches a pass: up to Ding's"
        " size (150 batches), whole passes that make 2,250 batches (the paper's "
        "budget, 2.5B tokens, applies from 135M tokens a pass)",
        "Devices: 1 replica(s), float32, XLA off; a batch of up to 2,048 tokens, "
        "2,048 a replica, resuming at step 7",
    ]


def test_the_summary_names_the_length_rule_the_budget_and_the_batches():
    big = RunConfig.from_dict({"model": {"preset": "big"}})
    between = plan_of(big, batches_per_pass=600).summary(parameters=1)
    assert (
        "Length: 24.9M tokens seen, by default for 600 batches a pass: between "
        "Ding's size and the paper's corpus, a power of the corpus size" in between
    )
    assert "the paper's budget, 7.5B tokens, applies from 135M tokens" in between
    large = plan_of(RunConfig(), batches_per_pass=70_000)
    assert large.length_rule == "budget"
    assert (large.epochs, large.steps_per_epoch) == (18, 67_817)  # < a pass
    assert abs(large.tokens_seen - 2_500_000_000) < 2048 * 18
    assert (
        "Length: 2.5B tokens seen, by default for 70,000 batches a pass: from "
        "the paper's corpus size, the paper's budget" in large.summary(parameters=1)
    )
    given = plan_of(RunConfig.from_dict({"training": {"epochs": 2}}))
    assert given.length_rule is None and not given.length_is_default
    assert "Length: 614k tokens seen, set by the config (the paper's budget" in (
        given.summary(parameters=1)
    )
    mirrored = plan_of(RunConfig(), replicas=4, xla=True)
    assert mirrored.summary(parameters=1).splitlines()[-1] == (
        "Devices: 4 replica(s), float32, XLA on; a batch of up to 2,048 tokens, "
        "512 a replica"
    )
    accumulated = plan_of(
        RunConfig.from_dict({"training": {"gradient_accumulation": 4}})
    )
    assert (
        accumulated.summary(parameters=1)
        .splitlines()[-1]
        .endswith("2,048 a replica, 4 batches (8,192 tokens) an update")
    )


def test_a_mixed_float16_run_writes_its_schedule(tmp_path):
    """`compile` wraps the optimizer in a LossScaleOptimizer under
    mixed_float16, whose config has no learning rate."""
    config = RunConfig.from_dict({"model": {"preset": "tiny", "d_model": 32}})
    plan = plan_of(config, precision="mixed_float16")
    run_dir = RunDirectory(tmp_path)
    with global_dtype_policy("mixed_float16"):
        model = compiled_model(plan, config, run_dir, _default_strategy())
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    schedule = run_dir.read_schedule()
    assert (schedule["warmup_steps"], schedule["total_steps"]) == (400, 2250)
    assert run_dir.read_model_config() == plan.model


def _default_strategy():
    import tensorflow as tf

    return tf.distribute.get_strategy()
