"""Attention maps of fixed sentences in TensorBoard, after each validation."""

import keras
import tensorflow as tf

from keras_transformer.plots.attention import attention_figure, sentence_attention
from keras_transformer.plots.figures import png_bytes


class AttentionImages(keras.callbacks.Callback):
    """Logs the cross-attention maps of a few sentences as TensorBoard images.

    After every `every` epochs (after validation), translates `sources`
    with `attention` and writes one image per sentence, the grid of
    `attention_figure` (every decoder layer and head), under
    `cross_attention/<i>` at step `epoch`, so the alignments can be watched
    forming. Needs matplotlib.

    Args:
        attention: the `attention` method of a `Translator` (strings (B,)
            in, its outputs dict out).
        sources: the source sentences, a few short ones.
        log_dir: the TensorBoard folder to write to.
        every: draw every `every` epochs.
    """

    def __init__(self, attention, sources, log_dir, every=1):
        super().__init__()
        self.attention = attention
        self.sources = list(sources)
        self.every = every
        self.writer = tf.summary.create_file_writer(log_dir)

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.every or self.model.stop_training or not self.sources:
            return
        outputs = self.attention(tf.constant(self.sources))
        with self.writer.as_default():
            for row, source in enumerate(self.sources):
                figure = attention_figure(*sentence_attention(outputs, row))
                image = tf.io.decode_png(png_bytes(figure), channels=3)  # (H, W, 3)
                tf.summary.image(
                    f"cross_attention/{row}",
                    image[None],
                    step=epoch,
                    description=source,
                )
        self.writer.flush()
