"""Guided alignment: the attention that aligns, trained toward given links."""

import keras
from keras import ops

from keras_transformer.alignment.links import alignment_attention
from keras_transformer.training.losses import global_sum


@keras.saving.register_keras_serializable(package="keras_transformer")
class GuidedAlignmentLoss(keras.losses.Loss):
    """Cross-entropy of the attention that aligns against given alignments.

    Garg et al. (2019), "Jointly Learning to Align and Translate with
    Transformer Models", section 4.1, as Marian's `--guided-alignment`
    ("ce") and fairseq's alignment criterion train it. Each target
    piece's row of the given alignment is made a distribution over the
    source pieces it is linked to; the loss is the cross-entropy of the
    attention (`Transformer(alignment_output=True)`'s "alignment" output)
    against it, averaged over the target pieces that have links in the
    whole global batch (summed over replicas as `LabelSmoothedCrossEntropy`
    does). Rows without links, padding included, add nothing, so pairs
    without alignments (a row of 0s) train the translation alone.

    The attention trained is the average of the first `heads` heads of
    the layer's (all for 0), as `align` reads it: give the model config's
    `alignment_heads`. Compile it beside the translation loss, with a
    weight (`models.config.GUIDED_ALIGNMENT_WEIGHT`, the recipe's default;
    Marian's is 0.1):

        model.compile(
            loss={"logits": LabelSmoothedCrossEntropy(),
                  "alignment": GuidedAlignmentLoss(config.alignment_heads)},
            loss_weights={"logits": 1.0, "alignment": 1.0}, ...)

    Args:
        heads: how many of the first heads to average and train; 0 for all.
        name: name of the loss.
        dtype: dtype of the computation; float32 by default.

    Call arguments:
        y_true: (B, T, S) links, 1 where target piece t is linked to source
            piece s (`data.alignment_targets`), 0 elsewhere.
        y_pred: (B, h, T, S) attention probabilities of each head.

    Example:

    >>> loss = GuidedAlignmentLoss(heads=1)
    >>> links = np.array([[[1, 0], [0, 0]]], "float32")  # only row 0 linked
    >>> attention = np.array([[[[0.25, 0.75], [0.5, 0.5]],   # head 0
    ...                        [[0.9, 0.1], [0.5, 0.5]]]], "float32")
    >>> round(float(loss(links, attention)), 4)  # -log 0.25
    1.3863
    """

    def __init__(self, heads=0, name="guided_alignment", dtype=None):
        super().__init__(name=name, reduction="sum", dtype=dtype)
        if isinstance(heads, bool) or not isinstance(heads, int) or heads < 0:
            raise ValueError(f"heads must be an int >= 0, got {heads!r}.")
        self.heads = heads

    def call(self, y_true, y_pred):
        links = ops.cast(y_true, "float32")  # (B, T, S)
        attention = alignment_attention(
            ops.cast(y_pred, "float32")[:, None], 0, self.heads
        )  # (B, T, S)
        per_row = ops.sum(links, axis=-1)  # (B, T)
        linked = ops.cast(per_row > 0, "float32")  # (B, T)
        target = links / ops.maximum(per_row, 1.0)[..., None]  # rows sum to 1 or 0
        log_attention = ops.log(ops.maximum(attention, 1e-9))  # (B, T, S)
        losses = -ops.sum(target * log_attention, axis=-1)  # (B, T)
        return losses * linked / global_sum(ops.sum(linked))  # summed by Keras

    def get_config(self):
        return {"heads": self.heads, "name": self.name, "dtype": self.dtype}
