"""Which Keras dtype policy a training run uses: "auto" picks the measured fast one.

    with global_dtype_policy(resolve_precision("auto")):  # or "float32"
        model = build_transformer(config)  # its layers keep that policy

On a CPU with bfloat16 matmul instructions (AVX512_BF16 or AMX-BF16),
TensorFlow's oneDNN kernels multiply bfloat16 about twice as fast as
float32, and `mixed_bfloat16` trains faster (benchmarks/README.md,
"Training speed"); on CPUs without them bfloat16 is slower than float32.
On GPUs "auto" keeps float32: nothing here could measure them.
"""

import contextlib

PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
BFLOAT16_MATMUL_FLAGS = ("avx512_bf16", "amx_bf16")


def check_precision(precision):
    """Raises `ValueError` unless `precision` is one of `PRECISIONS`."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}.")


def resolve_precision(precision, cpu_flags=None, has_gpu=None):
    """The Keras dtype policy name that `precision` stands for.

    Args:
        precision: one of `PRECISIONS`; all but "auto" are returned as given.
        cpu_flags: the CPU's instruction-set flags; read from
            `/proc/cpuinfo` when None (none where it does not exist).
        has_gpu: whether TensorFlow sees a GPU; asked when None.

    Returns:
        "mixed_bfloat16" for "auto" on a machine without GPUs whose CPU
        has one of `BFLOAT16_MATMUL_FLAGS`, else "float32" for "auto".
    """
    check_precision(precision)
    if precision != "auto":
        return precision
    if has_gpu is None:
        import tensorflow as tf

        has_gpu = bool(tf.config.list_physical_devices("GPU"))
    if cpu_flags is None:
        cpu_flags = linux_cpu_flags()
    if not has_gpu and any(flag in cpu_flags for flag in BFLOAT16_MATMUL_FLAGS):
        return "mixed_bfloat16"
    return "float32"


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
