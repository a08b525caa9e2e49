"""Strategy construction: names, TF_CONFIG checks, logical CPUs, chief folders.

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
    worker_directory,
)

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
