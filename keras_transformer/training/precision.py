"""Which Keras dtype policy a training run uses: "auto" picks the measured fast one.

    with global_dtype_policy(resolve_precision("auto")):  # or "float32"
        model = build_transformer(config)  # its layers keep that policy

On a CPU with bfloat16 matmul instructions (AVX512_BF16 or AMX-BF16),
TensorFlow's oneDNN kernels multiply bfloat16 about twice as fast as
float32, and `mixed_bfloat16` trains faster (benchmarks/README.md,
"Training speed"); on CPUs without them bfloat16 is slower than float32.
On GPUs "auto" follows the tensor cores (`gpu_precision`): float16 from
compute capability 7.0 (Volta, Turing), bfloat16 from 8.0 (Ampere and
newer), which needs no loss scaling; float32 below 7.0.
"""

import contextlib

PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
BFLOAT16_MATMUL_FLAGS = ("avx512_bf16", "amx_bf16")


def check_precision(precision):
    """Raises `ValueError` unless `precision` is one of `PRECISIONS`."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}.")


def resolve_precision(precision, cpu_flags=None, gpu_capabilities=None):
    """The Keras dtype policy name that `precision` stands for.

    Args:
        precision: one of `PRECISIONS`; all but "auto" are returned as given.
        cpu_flags: the CPU's instruction-set flags; read from
            `/proc/cpuinfo` when None (none where it does not exist).
        gpu_capabilities: the compute capability `(major, minor)` of each
            GPU TensorFlow sees (empty: none); asked when None.

    Returns:
        For "auto": with GPUs, `gpu_precision(gpu_capabilities)`; without,
        "mixed_bfloat16" on a CPU with one of `BFLOAT16_MATMUL_FLAGS`, else
        "float32".

    Example:

    >>> resolve_precision("auto", cpu_flags=set(), gpu_capabilities=[(9, 0)])
    'mixed_bfloat16'
    """
    check_precision(precision)
    if precision != "auto":
        return precision
    if gpu_capabilities is None:
        gpu_capabilities = visible_gpu_capabilities()
    if gpu_capabilities:
        return gpu_precision(gpu_capabilities)
    if cpu_flags is None:
        cpu_flags = linux_cpu_flags()
    if any(flag in cpu_flags for flag in BFLOAT16_MATMUL_FLAGS):
        return "mixed_bfloat16"
    return "float32"


def gpu_precision(capabilities):
    """The dtype policy "auto" picks on GPUs of these compute capabilities.

    The oldest GPU decides, since a run uses them all: "mixed_bfloat16" from
    8.0, "mixed_float16" from 7.0 (float16 tensor cores, with loss scaling),
    else "float32".

    Example:

    >>> gpu_precision([(8, 6)]), gpu_precision([(7, 5)]), gpu_precision([(6, 0)])
    ('mixed_bfloat16', 'mixed_float16', 'float32')
    >>> gpu_precision([(9, 0), (7, 0)])
    'mixed_float16'
    """
    oldest = min(tuple(capability) for capability in capabilities)
    if oldest >= (8, 0):
        return "mixed_bfloat16"
    if oldest >= (7, 0):
        return "mixed_float16"
    return "float32"


def visible_gpu_capabilities():
    """The compute capability `(major, minor)` of each GPU TensorFlow sees.

    A GPU that does not report one (not CUDA) counts as (0, 0).
    """
    import tensorflow as tf

    details = map(
        tf.config.experimental.get_device_details,
        tf.config.list_physical_devices("GPU"),
    )
    return [tuple(detail.get("compute_capability") or (0, 0)) for detail in details]


@contextlib.contextmanager
def global_dtype_policy(name):
    """Sets Keras's global dtype policy to `name` inside a `with` block.

    Layers built inside take `name` as their policy (and keep it); the
    caller's policy is back after the block, also on an exception.
    """
    import keras

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def linux_cpu_flags():
    """The instruction-set flags of the first CPU in `/proc/cpuinfo` (a set)."""
    return set(linux_cpu_fields().get("flags", "").split())


def linux_cpu_fields():
    """The fields of the first CPU in `/proc/cpuinfo`; {} where it does not exist."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as file:
            for line in file:
                if not line.strip():  # the blank line after the first CPU
                    break
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields
