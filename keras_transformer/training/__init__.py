"""The paper's training recipe: schedule, optimizer, loss and metric."""

from keras_transformer.training.losses import LabelSmoothedCrossEntropy
from keras_transformer.training.metrics import MaskedAccuracy
from keras_transformer.training.schedules import (
    TransformerSchedule,
    transformer_optimizer,
)

__all__ = [
    "LabelSmoothedCrossEntropy",
    "MaskedAccuracy",
    "TransformerSchedule",
    "transformer_optimizer",
]
