"""Smoke runs of the speed benchmarks: they run and print the JSON they promise.

Each script runs in a subprocess with `--quick` and its smallest subset; the
numbers are only checked to be positive (timings are never asserted).
"""

import json
import math
import subprocess
import sys

import pytest

from tests.fixtures.backends import python_environment
from tests.fixtures.benchmark_scripts import BENCHMARKS


def run_benchmark(script, *arguments, env=None, timeout=300):
    process = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
    assert process.returncode == 0, process.stderr[-4000:]
    return json.loads(process.stdout)


def assert_positive(value):
    assert isinstance(value, int | float) and math.isfinite(value) and value > 0


@pytest.mark.slow
def test_decode_speed_quick_run():
    result = run_benchmark(
        "decode_speed.py",
        *("--quick", "--batch-size", "1", "--search", "greedy", "--prefix"),
    )
    assert result["benchmark"] == "decode_speed"
    variants = result["results"]["greedy"]["batch_1"]
    expected = {
        "ours_tf_function",
        "ours_xla",
        "ours_signature",
        "keras_hub",
        "keras_hub_xla",
        "tutorial_no_cache",
        "ours_prefix_half",
        "ours_prefix_half_xla",
    }
    assert set(variants) == expected
    for timing in variants.values():
        for key in ("tokens_per_second", "median_seconds", "first_call_seconds"):
            assert_positive(timing[key])
    for count in result["ops_per_step"]["greedy"].values():
        assert_positive(count)
    ratios = result["ratios"]["greedy"]["batch_1"]
    for key in (
        "ours_xla/keras_hub_xla",
        "ours_signature/keras_hub",
        "ours_prefix_half/ours_tf_function",
        "ours_prefix_half_xla/ours_xla",
    ):
        assert_positive(ratios[key])
    assert {target["name"] for target in result["targets"]} == {
        "greedy batch_1: ours_xla/keras_hub_xla",
        "greedy batch_1: ours_signature/keras_hub",
    }
    assert result["environment"]["tensorflow"]


@pytest.mark.slow
def test_train_speed_quick_run():
    result = run_benchmark(
        "train_speed.py",
        "--quick",
        "--config",
        "tiny",
        "--precision",
        "float32",
        "--jit",
        "off",
    )
    assert result["benchmark"] == "train_speed"
    assert "6 *" in result["flops_formula"]
    assert_positive(result["matmul_flops_per_step"]["tiny"])
    for dtype in ("float32", "bfloat16"):
        assert_positive(result["matmul_peak"]["flops_per_second"][dtype]["peak"])
    (run,) = result["runs"]
    assert (run["config"], run["precision"], run["jit_compile"]) == (
        "tiny",
        "float32",
        False,
    )
    assert set(run["models"]) == {"ours", "keras_hub", "tf_tutorial"}
    for model in run["models"].values():
        for key in (
            "parameters",
            "time_to_first_batch_seconds",
            "tokens_per_second",
            "model_flops_per_second",
            "mfu",
        ):
            assert_positive(model[key])
        assert math.isfinite(model["first_loss"])
    for key in ("ours/keras_hub", "ours/tf_tutorial"):
        assert_positive(run["ratios"][key])


@pytest.mark.slow
@pytest.mark.longest
def test_translate_file_quick_run():
    """This tree stands as its own baseline: the outputs must agree."""
    result = run_benchmark(
        "translate_file.py",
        "--quick",
        "--baseline-src",
        str(BENCHMARKS.parent),
        timeout=900,  # one export (a tree given twice), 3 `translate`s, a timer
    )
    assert result["benchmark"] == "translate_file"
    assert result["sentences"] == 40
    assert set(result["translate"]) == {"baseline", "new"}  # no CTranslate2
    for row in result["translate"].values():
        for key in ("wall_seconds", "cpu_seconds"):
            assert_positive(row[key])
    assert_positive(result["translate"]["new"]["one_line_seconds"])
    assert set(result["signature_beam"]) == {"baseline", "new"}
    for row in result["signature_beam"].values():
        assert_positive(row["seconds"])
    assert result["baseline_vs_new"]["identical_line_share"] == 1.0
    assert result["baseline_vs_new"]["bleu_new_minus_baseline"] == 0


@pytest.mark.slow
def test_train_speed_jax_quick_run_without_tensorflow(tmp_path):
    result = run_benchmark(
        "train_speed_jax.py",
        "--quick",
        "--config",
        "small",
        "--precision",
        "float32",
        env=python_environment("jax", tmp_path, tensorflow=False),
        timeout=600,
    )
    assert result["benchmark"] == "train_speed_jax"
    assert result["environment"]["keras_backend"] == "jax"
    assert "tensorflow" not in result["environment"]
    (run,) = result["runs"]
    assert (run["config"], run["precision"]) == ("small", "float32")
    assert set(run["models"]) == {"ours", "keras_hub"}
    for model in run["models"].values():
        for key in ("parameters", "tokens_per_second", "mfu"):
            assert_positive(model[key])
        assert math.isfinite(model["first_loss"])
    assert_positive(run["ratios"]["ours/keras_hub"])


@pytest.mark.slow
def test_decode_speed_jax_quick_run_without_tensorflow(tmp_path):
    result = run_benchmark(
        "decode_speed_jax.py",
        "--quick",
        "--batch-size",
        "1",
        "--repeats",
        "2",
        env=python_environment("jax", tmp_path, tensorflow=False),
    )
    assert result["benchmark"] == "decode_speed_jax"
    assert result["environment"]["keras_backend"] == "jax"
    assert "tensorflow" not in result["environment"]
    (run,) = result["runs"]
    assert run["config"] == "small"
    assert_positive(run["model"]["parameters"])
    assert set(run["results"]) == {"greedy", "beam_4"}
    for by_batch in run["results"].values():
        assert set(by_batch) == {"batch_1"}
        timing = by_batch["batch_1"]["jax_jit"]
        for key in ("tokens_per_second", "median_seconds", "first_call_seconds"):
            assert_positive(timing[key])
