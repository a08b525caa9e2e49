"""Checks of data settings, readable without TensorFlow.

The run config makes them before TensorFlow starts (its `extra_train_fraction`
and `sampling_alpha`); `mix_pairs` and `SubwordTokenizer` make the same ones.
"""


def check_fraction(name, value):
    """Raises `ValueError` unless `value` is in the open interval (0, 1)."""
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value}.")


def check_sampling_alpha(alpha):
    """Raises `ValueError` unless `alpha` is None or a number > 0."""
    if alpha is not None and not alpha > 0:
        raise ValueError(f"sampling_alpha must be > 0, got {alpha}.")
