"""The learning-rate schedule and optimizer of section 5.3."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_transformer")
class TransformerSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """lr = scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5).

    Rises linearly for `warmup_steps` steps, then decays with the inverse
    square root of the step (section 5.3). Step 0, the optimizer's first
    iteration, is evaluated as step 1 so that no update has a zero or
    infinite rate.

    Args:
        d_model: the model width.
        warmup_steps: length of the linear warm-up (4000 in the paper).
        scale: a factor on the whole schedule (1.0 in the paper).

    Example:

    >>> schedule = TransformerSchedule(d_model=512, warmup_steps=4000)
    >>> round(float(schedule(4000)), 7)
    0.0006988
    """

    def __init__(self, d_model, warmup_steps=4000, scale=1.0):
        if int(d_model) < 1:
            raise ValueError(f"d_model must be >= 1, got {d_model}.")
        if int(warmup_steps) < 1:
            raise ValueError(f"warmup_steps must be >= 1, got {warmup_steps}.")
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}.")
        self.d_model = int(d_model)
        self.warmup_steps = int(warmup_steps)
        self.scale = float(scale)

    def __call__(self, step):
        step = ops.maximum(ops.cast(step, "float32"), 1.0)
        decay = ops.rsqrt(step)
        warmup = step * self.warmup_steps**-1.5
        return self.scale * self.d_model**-0.5 * ops.minimum(decay, warmup)

    def get_config(self):
        return {
            "d_model": self.d_model,
            "warmup_steps": self.warmup_steps,
            "scale": self.scale,
        }


def transformer_optimizer(d_model, warmup_steps=4000, scale=1.0, **kwargs):
    """Adam with beta_1=0.9, beta_2=0.98, epsilon=1e-9 and the warm-up schedule.

    Args:
        d_model: the model width.
        warmup_steps: warm-up of `TransformerSchedule`.
        scale: factor on the learning rate.
        **kwargs: more `keras.optimizers.Adam` arguments (e.g. `clipnorm`);
            they may also override the paper's `beta_1`, `beta_2`, `epsilon`.

    Example:

    >>> optimizer = transformer_optimizer(d_model=512)
    >>> optimizer.beta_2
    0.98
    """
    settings = {"beta_1": 0.9, "beta_2": 0.98, "epsilon": 1e-9, **kwargs}
    return keras.optimizers.Adam(
        learning_rate=TransformerSchedule(d_model, warmup_steps, scale), **settings
    )
