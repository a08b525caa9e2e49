"""`resolve_precision` picks bfloat16 only where the CPU multiplies it natively."""

import keras
import pytest

from keras_transformer.training import global_dtype_policy, resolve_precision
from keras_transformer.training.precision import linux_cpu_flags

ZEN4_FLAGS = {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"}
SAPPHIRE_RAPIDS_FLAGS = {"avx2", "avx512f", "amx_tile", "amx_bf16"}
ZEN3_FLAGS = {"avx2", "fma", "sse4_2"}


@pytest.mark.parametrize(
    "flags, has_gpu, expected",
    [
        (ZEN4_FLAGS, False, "mixed_bfloat16"),
        (SAPPHIRE_RAPIDS_FLAGS, False, "mixed_bfloat16"),
        (ZEN3_FLAGS, False, "float32"),
        (set(), False, "float32"),
        (ZEN4_FLAGS, True, "float32"),  # GPUs: not measured, so float32
    ],
)
def test_auto_follows_the_bfloat16_matmul_instructions(flags, has_gpu, expected):
    assert resolve_precision("auto", cpu_flags=flags, has_gpu=has_gpu) == expected


@pytest.mark.parametrize("name", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_named_precisions_pass_through(name):
    assert resolve_precision(name, cpu_flags=ZEN4_FLAGS, has_gpu=False) == name


def test_an_unknown_precision_is_a_value_error():
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_precision("bfloat16")


def test_auto_on_this_machine_reads_its_cpu_flags():
    flags = linux_cpu_flags()
    native = bool({"avx512_bf16", "amx_bf16"} & flags)
    assert resolve_precision("auto", has_gpu=False) == (
        "mixed_bfloat16" if native else "float32"
    )


def test_the_policy_applies_inside_the_block_and_is_restored_after():
    assert keras.mixed_precision.global_policy().name == "float32"
    with pytest.raises(RuntimeError):
        with global_dtype_policy("mixed_bfloat16"):
            layer = keras.layers.Dense(2)
            raise RuntimeError("inside")
    assert layer.dtype_policy.name == "mixed_bfloat16"
    assert keras.mixed_precision.global_policy().name == "float32"
