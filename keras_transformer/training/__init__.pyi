from .distribution import (
    JIT_COMPILE,
    STRATEGIES,
    check_jit_compile,
    check_strategy,
    configure_logical_cpus,
    is_chief,
    make_strategy,
    read_tf_config,
    resolve_jit_compile,
    strategy_devices,
    worker_directory,
)
from .guided_alignment import GuidedAlignmentLoss
from .keras_internals import FusedAdam, fix_distributed_fit
from .losses import LabelSmoothedCrossEntropy
from .metrics import MaskedAccuracy
from .precision import (
    PRECISIONS,
    check_precision,
    global_dtype_policy,
    resolve_precision,
)
from .saved_layout import load_model
from .schedules import TransformerSchedule, transformer_optimizer

__all__ = [
    "FusedAdam",
    "GuidedAlignmentLoss",
    "JIT_COMPILE",
    "LabelSmoothedCrossEntropy",
    "MaskedAccuracy",
    "PRECISIONS",
    "STRATEGIES",
    "TransformerSchedule",
    "check_jit_compile",
    "check_precision",
    "check_strategy",
    "configure_logical_cpus",
    "fix_distributed_fit",
    "global_dtype_policy",
    "is_chief",
    "load_model",
    "make_strategy",
    "read_tf_config",
    "resolve_jit_compile",
    "resolve_precision",
    "strategy_devices",
    "transformer_optimizer",
    "worker_directory",
]
