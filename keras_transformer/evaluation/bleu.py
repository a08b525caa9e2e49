"""A Keras callback that logs BLEU and chrF (see `scores` for the scoring)."""

import keras_transformer.requires_tensorflow  # noqa: F401 (says if TF is missing)

# isort: split
import keras
import tensorflow as tf

from keras_transformer.evaluation.scores import corpus_scores


class BleuCallback(keras.callbacks.Callback):
    """Translates a validation sample after each epoch and logs BLEU and chrF.

    The scores are added to the epoch's logs as `val_bleu` and `val_chrf`,
    so they appear in the progress bar, in the `History` and in callbacks
    that run after this one (put it before `keras.callbacks.TensorBoard`);
    with `log_dir` they are also written as TensorBoard scalars.

    Args:
        translate: a callable from a list of source `str` to a list of
            translations.
        sources: validation source sentences.
        references: their reference translations.
        every: score every `every` epochs.
        log_dir: optional TensorBoard folder for the scalars.
        target_language: the language code of the references, if known
            (see `corpus_scores`).
    """

    def __init__(
        self,
        translate,
        sources,
        references,
        every=1,
        log_dir=None,
        target_language=None,
    ):
        super().__init__()
        if len(sources) != len(references):
            raise ValueError(
                f"Got {len(sources)} sources but {len(references)} references."
            )
        self.translate = translate
        self.sources = list(sources)
        self.references = list(references)
        self.every = every
        self.target_language = target_language
        self.writer = tf.summary.create_file_writer(log_dir) if log_dir else None

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.every or self.model.stop_training:  # or stopping
            return
        scores = corpus_scores(
            self.translate(self.sources), self.references, self.target_language
        )
        if logs is not None:
            logs["val_bleu"] = scores["bleu"]
            logs["val_chrf"] = scores["chrf"]
        if self.writer is not None:
            with self.writer.as_default():
                tf.summary.scalar("val_bleu", scores["bleu"], step=epoch)
                tf.summary.scalar("val_chrf", scores["chrf"], step=epoch)
            self.writer.flush()
