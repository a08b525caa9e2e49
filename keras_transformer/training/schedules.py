"""The learning-rate schedule and optimizer of section 5.3."""

import keras
from keras import ops

from keras_transformer.training.distribution import check_gradient_accumulation


@keras.saving.register_keras_serializable(package="keras_transformer")
class TransformerSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """lr = scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5).

    Rises linearly for `warmup_steps` steps, then decays with the inverse
    square root of the step (section 5.3). Step 0, the optimizer's first
    iteration, is evaluated as step 1 so that no update has a zero or
    infinite rate.

    With `cooldown_steps` and `total_steps`, the rate is also multiplied by
    a factor that falls linearly from 1 to 0 over the last `cooldown_steps`
    of `total_steps` updates (a cool-down for a run of known length; the
    last update gets 1 / `cooldown_steps` of the paper's rate).

    With gradient accumulation Keras calls the schedule with the number of
    micro-batches; `steps_per_update` turns that back into the number of
    updates, so warm-up and decay count updates as in the paper.

    Args:
        d_model: the model width.
        warmup_steps: length of the linear warm-up (4000 in the paper).
        scale: a factor on the whole schedule (1.0 in the paper).
        steps_per_update: micro-batches accumulated per update (the
            optimizer's `gradient_accumulation_steps`, or 1).
        cooldown_steps: updates at the end of the run over which the rate
            falls to 0; 0 for none.
        total_steps: updates in the run; needed with `cooldown_steps`.

    Example:

    >>> schedule = TransformerSchedule(d_model=512, warmup_steps=4000)
    >>> round(float(schedule(4000)), 7)
    0.0006988
    >>> cooled = TransformerSchedule(512, 4000, cooldown_steps=100, total_steps=6000)
    >>> round(float(cooled(5950) / schedule(5950)), 2)
    0.5
    """

    def __init__(
        self,
        d_model,
        warmup_steps=4000,
        scale=1.0,
        steps_per_update=1,
        cooldown_steps=0,
        total_steps=None,
    ):
        if int(d_model) < 1:
            raise ValueError(f"d_model must be >= 1, got {d_model}.")
        if int(warmup_steps) < 1:
            raise ValueError(f"warmup_steps must be >= 1, got {warmup_steps}.")
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}.")
        if int(steps_per_update) < 1:
            raise ValueError(f"steps_per_update must be >= 1, got {steps_per_update}.")
        if int(cooldown_steps) < 0:
            raise ValueError(f"cooldown_steps must be >= 0, got {cooldown_steps}.")
        if cooldown_steps and (total_steps is None or total_steps < cooldown_steps):
            raise ValueError(
                f"cooldown_steps={cooldown_steps} needs total_steps >= it, "
                f"got {total_steps}."
            )
        self.d_model = int(d_model)
        self.warmup_steps = int(warmup_steps)
        self.scale = float(scale)
        self.steps_per_update = int(steps_per_update)
        self.cooldown_steps = int(cooldown_steps)
        self.total_steps = None if total_steps is None else int(total_steps)

    def __call__(self, step):
        update = ops.floor_divide(step, self.steps_per_update)
        update = ops.cast(update, "float32")  # 0 for the first update
        step = ops.maximum(update, 1.0)
        decay = ops.rsqrt(step)
        warmup = step * self.warmup_steps**-1.5
        rate = self.scale * self.d_model**-0.5 * ops.minimum(decay, warmup)
        if not self.cooldown_steps:
            return rate
        remaining = (self.total_steps - update) / self.cooldown_steps
        return rate * ops.clip(remaining, 0.0, 1.0)

    def get_config(self):
        return {
            "d_model": self.d_model,
            "warmup_steps": self.warmup_steps,
            "scale": self.scale,
            "steps_per_update": self.steps_per_update,
            "cooldown_steps": self.cooldown_steps,
            "total_steps": self.total_steps,
        }


def transformer_optimizer(
    d_model,
    warmup_steps=4000,
    scale=1.0,
    gradient_accumulation_steps=None,
    cooldown_steps=0,
    total_steps=None,
    **kwargs,
):
    """Adam (0.9, 0.98, 1e-9) with the warm-up schedule.

    On TensorFlow the optimizer is `FusedAdam`, on the other backends
    `keras.optimizers.Adam`: the same updates, without the fused kernel.

    Gradient accumulation is Keras's own (`gradient_accumulation_steps` of
    every Keras optimizer): the mean gradient of k micro-batches makes one
    update, so k batches of B tokens update the model like one batch of kB
    tokens when the micro-batches hold equal numbers of target tokens (the
    loss is a per-batch token mean). The schedule counts updates. Keras's
    accumulation fails under a `tf.distribute` strategy, so it raises
    ValueError in a strategy's scope (`check_gradient_accumulation`).

    Args:
        d_model: the model width.
        warmup_steps: warm-up of `TransformerSchedule`, in updates.
        scale: factor on the learning rate.
        gradient_accumulation_steps: micro-batches per update; `None` or 1
            updates after every batch.
        cooldown_steps: updates of the schedule's linear cool-down to 0, at
            the end of `total_steps`.
        total_steps: the run's updates (with `cooldown_steps`).
        **kwargs: more `keras.optimizers.Adam` arguments (e.g. `clipnorm`);
            they may also override the paper's `beta_1`, `beta_2`, `epsilon`.
            `weight_decay` is decoupled (AdamW: each step subtracts
            learning rate x weight_decay x the weight) and applies to the
            kernels and embeddings only, not to biases and layer-norm
            scales and offsets.

    Example:

    >>> optimizer = transformer_optimizer(d_model=512, gradient_accumulation_steps=4)
    >>> optimizer.beta_2, optimizer.gradient_accumulation_steps
    (0.98, 4)
    """
    accumulation = gradient_accumulation_steps or 1
    if accumulation < 1:
        raise ValueError(
            "gradient_accumulation_steps must be >= 1, got "
            f"{gradient_accumulation_steps}."
        )
    adam = keras.optimizers.Adam
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        from keras_transformer.training.keras_internals import FusedAdam

        if tf.distribute.has_strategy():
            strategy = type(tf.distribute.get_strategy()).__name__
            check_gradient_accumulation(accumulation, strategy)
        adam = FusedAdam
    settings = {"beta_1": 0.9, "beta_2": 0.98, "epsilon": 1e-9, **kwargs}
    schedule = TransformerSchedule(
        d_model, warmup_steps, scale, accumulation, cooldown_steps, total_steps
    )
    optimizer = adam(
        learning_rate=schedule,
        gradient_accumulation_steps=accumulation if accumulation > 1 else None,
        **settings,
    )
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer
