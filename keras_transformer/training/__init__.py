"""The paper's training recipe (schedule, optimizer, loss, metric) and how it runs."""

from keras_transformer.lazy import lazy_attributes

_EXPORTS = {
    "JIT_COMPILE": "keras_transformer.training.distribution",
    "STRATEGIES": "keras_transformer.training.distribution",
    "check_jit_compile": "keras_transformer.training.distribution",
    "check_strategy": "keras_transformer.training.distribution",
    "configure_logical_cpus": "keras_transformer.training.distribution",
    "is_chief": "keras_transformer.training.distribution",
    "make_strategy": "keras_transformer.training.distribution",
    "read_tf_config": "keras_transformer.training.distribution",
    "resolve_jit_compile": "keras_transformer.training.distribution",
    "strategy_devices": "keras_transformer.training.distribution",
    "worker_directory": "keras_transformer.training.distribution",
    "FusedAdam": "keras_transformer.training.keras_internals",
    "fix_distributed_fit": "keras_transformer.training.keras_internals",
    "LabelSmoothedCrossEntropy": "keras_transformer.training.losses",
    "MaskedAccuracy": "keras_transformer.training.metrics",
    "PRECISIONS": "keras_transformer.training.precision",
    "check_precision": "keras_transformer.training.precision",
    "global_dtype_policy": "keras_transformer.training.precision",
    "resolve_precision": "keras_transformer.training.precision",
    "TransformerSchedule": "keras_transformer.training.schedules",
    "transformer_optimizer": "keras_transformer.training.schedules",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
