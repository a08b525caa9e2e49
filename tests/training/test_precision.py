"""`resolve_precision`: "auto" picks bfloat16 only where the CPU multiplies it
natively, and mixed precision on GPUs with tensor cores."""

import keras
import pytest

from keras_transformer.training import global_dtype_policy, resolve_precision
from keras_transformer.training.precision import (
    linux_cpu_flags,
    visible_gpu_capabilities,
)

ZEN4_FLAGS = {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"}
SAPPHIRE_RAPIDS_FLAGS = {"avx2", "avx512f", "amx_tile", "amx_bf16"}
ZEN3_FLAGS = {"avx2", "fma", "sse4_2"}


@pytest.mark.parametrize(
    "flags, expected",
    [
        (ZEN4_FLAGS, "mixed_bfloat16"),
        (SAPPHIRE_RAPIDS_FLAGS, "mixed_bfloat16"),
        (ZEN3_FLAGS, "float32"),
        (set(), "float32"),
    ],
)
def test_without_gpus_auto_follows_the_bfloat16_matmul_instructions(flags, expected):
    assert resolve_precision("auto", cpu_flags=flags, gpu_capabilities=[]) == expected


P100, V100, T4, A100, RTX_3090, L4, H100 = (
    (6, 0),
    (7, 0),
    (7, 5),
    (8, 0),
    (8, 6),
    (8, 9),
    (9, 0),
)


@pytest.mark.parametrize(
    "capabilities, expected",
    [
        ([P100], "float32"),  # no tensor cores
        ([(5, 2)], "float32"),
        ([V100], "mixed_float16"),
        ([T4, T4], "mixed_float16"),
        ([A100], "mixed_bfloat16"),
        ([RTX_3090], "mixed_bfloat16"),
        ([L4], "mixed_bfloat16"),
        ([H100] * 8, "mixed_bfloat16"),
        ([H100, V100], "mixed_float16"),  # the oldest GPU decides
        ([A100, P100], "float32"),
        ([(0, 0)], "float32"),  # a GPU without a CUDA capability
    ],
)
def test_on_gpus_auto_follows_the_compute_capability(capabilities, expected):
    for flags in (ZEN3_FLAGS, ZEN4_FLAGS):  # the CPU does not matter then
        assert (
            resolve_precision("auto", cpu_flags=flags, gpu_capabilities=capabilities)
            == expected
        )


def test_the_capabilities_are_read_from_tensorflow(monkeypatch):
    import tensorflow as tf

    gpus = ["GPU:0", "GPU:1"]
    details = {"GPU:0": {"compute_capability": (8, 0)}, "GPU:1": {}}
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind: gpus)
    monkeypatch.setattr(tf.config.experimental, "get_device_details", details.get)
    assert visible_gpu_capabilities() == [(8, 0), (0, 0)]
    assert resolve_precision("auto", cpu_flags=ZEN4_FLAGS) == "float32"


@pytest.mark.parametrize("name", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_named_precisions_pass_through(name):
    for capabilities in ([], [P100], [H100]):
        assert (
            resolve_precision(name, cpu_flags=ZEN4_FLAGS, gpu_capabilities=capabilities)
            == name
        )


def test_an_unknown_precision_is_a_value_error():
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_precision("bfloat16")


def test_auto_on_this_machine_reads_its_cpu_flags():
    flags = linux_cpu_flags()
    native = bool({"avx512_bf16", "amx_bf16"} & flags)
    assert resolve_precision("auto", gpu_capabilities=[]) == (
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
