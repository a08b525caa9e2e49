"""Pictures of the model and its training, drawn with matplotlib.

matplotlib is an optional dependency (`pip install -e ".[plots]"`); this
package imports without it and says so when asked to draw.
"""

import keras_transformer.requires_tensorflow  # noqa: F401 (says if TF is missing)
from keras_transformer.plots.attention import (
    attention_figure,
    sentence_attention,
    text_alignment,
)
from keras_transformer.plots.figures import save_figure
from keras_transformer.plots.tensorboard import AttentionImages
from keras_transformer.plots.training import (
    curves_figure,
    plot_run,
    positional_encoding_figure,
    read_history,
    schedule_figure,
)

__all__ = [
    "AttentionImages",
    "attention_figure",
    "curves_figure",
    "plot_run",
    "positional_encoding_figure",
    "read_history",
    "save_figure",
    "schedule_figure",
    "sentence_attention",
    "text_alignment",
]
