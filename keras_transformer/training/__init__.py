"""The paper's training recipe (schedule, optimizer, loss, metric) and how it runs."""

from keras_transformer.training.distribution import (
    STRATEGIES,
    check_strategy,
    configure_logical_cpus,
    is_chief,
    make_strategy,
    read_tf_config,
    worker_directory,
)
from keras_transformer.training.keras_internals import FusedAdam, fix_distributed_fit
from keras_transformer.training.losses import LabelSmoothedCrossEntropy
from keras_transformer.training.metrics import MaskedAccuracy
from keras_transformer.training.precision import (
    PRECISIONS,
    check_precision,
    global_dtype_policy,
    resolve_precision,
)
from keras_transformer.training.schedules import (
    TransformerSchedule,
    transformer_optimizer,
)

__all__ = [
    "PRECISIONS",
    "STRATEGIES",
    "FusedAdam",
    "LabelSmoothedCrossEntropy",
    "MaskedAccuracy",
    "TransformerSchedule",
    "check_precision",
    "check_strategy",
    "configure_logical_cpus",
    "fix_distributed_fit",
    "global_dtype_policy",
    "is_chief",
    "make_strategy",
    "read_tf_config",
    "resolve_precision",
    "transformer_optimizer",
    "worker_directory",
]
