"""Strategy construction: names, TF_CONFIG checks, logical CPUs, chief folders,
what "default" and XLA's "auto" choose over faked device lists.

Training under the strategies is tested in `tests/test_distribution.py`
(MirroredStrategy), `tests/test_multi_worker.py` and `tests/recipe/test_run.py`.
"""

import json
import types

import pytest
import tensorflow as tf

from keras_transformer.training import (
    configure_logical_cpus,
    is_chief,
    make_strategy,
    read_tf_config,
    resolve_jit_compile,
    strategy_devices,
    worker_directory,
)
from keras_transformer.training.distribution import default_mirrors

CLUSTER = {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}


def test_unknown_strategies_and_misplaced_logical_cpus_are_rejected():
    with pytest.raises(ValueError, match="strategy must be one of"):
        make_strategy("tpu")
    with pytest.raises(ValueError, match="logical_cpus=2 needs strategy 'mirrored'"):
        make_strategy("default", logical_cpus=2)
    with pytest.raises(ValueError, match="logical_cpus=-1"):
        make_strategy("mirrored", logical_cpus=-1)


@pytest.mark.parametrize(
    "value, message",
    [
        (None, "TF_CONFIG environment variable, which is not set"),
        ("{cluster", "TF_CONFIG is not JSON"),
        (json.dumps({"cluster": CLUSTER}), 'TF_CONFIG must hold "cluster"'),
        (
            json.dumps({"cluster": CLUSTER, "task": {"type": "worker", "index": 2}}),
            'TF_CONFIG must hold "cluster"',
        ),
        (
            json.dumps({"cluster": {"worker": ["host"]}, "task": {"type": "worker"}}),
            'TF_CONFIG must hold "cluster"',
        ),
    ],
)
def test_multi_worker_needs_a_valid_tf_config(monkeypatch, value, message):
    if value is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", value)
    with pytest.raises(ValueError, match=message):
        make_strategy("multi_worker")


def test_a_valid_tf_config_is_returned(monkeypatch):
    config = {"cluster": CLUSTER, "task": {"type": "worker", "index": 1}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    assert read_tf_config() == config


def test_logical_cpus_after_tensorflow_started_is_a_clear_error():
    count = len(tf.config.list_logical_devices("CPU"))  # starts TensorFlow
    assert len(configure_logical_cpus(count)) == count  # what it has: fine
    with pytest.raises(RuntimeError, match="already initialised"):
        configure_logical_cpus(count + 1)


def strategy_of(cluster, task_type, task_id):
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id
    )
    return types.SimpleNamespace(cluster_resolver=resolver)


def test_only_the_chief_writes_the_run_directory():
    assert worker_directory(strategy_of(CLUSTER, "worker", 0), "run") == "run"
    assert worker_directory(strategy_of(CLUSTER, "worker", 1), "run") == (
        "run/workers/worker-1"
    )
    with_chief = {"chief": ["127.0.0.1:2221"], **CLUSTER}
    assert is_chief(strategy_of(with_chief, "chief", 0))
    assert not is_chief(strategy_of(with_chief, "worker", 0))
    assert is_chief(tf.distribute.get_strategy())


@pytest.mark.parametrize(
    "gpus, single_device, mirrored",
    [(0, False, False), (1, False, False), (2, False, True), (8, False, True)]
    + [(8, True, False)],  # gradient accumulation: one device
)
def test_default_mirrors_over_several_gpus(monkeypatch, gpus, single_device, mirrored):
    assert default_mirrors(gpus, single_device) is mirrored
    devices = [f"/physical_device:GPU:{index}" for index in range(gpus)]
    listed = {"GPU": devices, "CPU": ["/physical_device:CPU:0"]}
    monkeypatch.setattr(tf.config, "list_physical_devices", listed.get)
    monkeypatch.setattr(tf.distribute, "MirroredStrategy", lambda: "mirrored")
    strategy = make_strategy("default", single_device=single_device)
    assert (strategy == "mirrored") is mirrored
    if not mirrored:
        assert strategy is tf.distribute.get_strategy()


ONE_GPU = ["/job:localhost/replica:0/task:0/device:GPU:0"]
TWO_GPUS = ONE_GPU + ["/job:localhost/replica:0/task:0/device:GPU:1"]
TWO_CPUS = ["/device:CPU:0", "/device:CPU:1"]


@pytest.mark.parametrize(
    "setting, devices, expected",
    [
        ("auto", ONE_GPU, True),
        ("auto", ["/device:CPU:0"], False),
        ("auto", TWO_GPUS, False),  # Keras turns XLA off under tf.distribute
        ("auto", TWO_CPUS, False),
        ("on", ["/device:CPU:0"], True),
        ("on", TWO_GPUS, True),
        ("off", ONE_GPU, False),
    ],
)
def test_xla_is_on_for_one_gpu_unless_switched(setting, devices, expected):
    assert resolve_jit_compile(setting, devices) is expected


def test_an_unknown_jit_compile_setting_is_a_value_error():
    with pytest.raises(ValueError, match="jit_compile must be one of"):
        resolve_jit_compile("yes", ONE_GPU)


def test_the_default_strategy_runs_on_the_first_gpu_else_the_cpu(monkeypatch):
    default = tf.distribute.get_strategy()
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind: [])
    assert strategy_devices(default) == ["/device:CPU:0"]
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind: ["gpu"])
    assert strategy_devices(default) == ["/device:GPU:0"]
    assert resolve_jit_compile("auto", strategy_devices(default))
    mirrored = types.SimpleNamespace(
        extended=types.SimpleNamespace(worker_devices=tuple(TWO_GPUS))
    )
    assert strategy_devices(mirrored) == TWO_GPUS
