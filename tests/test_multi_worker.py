"""`fit` under MultiWorkerMirroredStrategy on two processes equals one device.

Two worker processes on 127.0.0.1 (ports picked free, a `TF_CONFIG` each)
train the same model on the same `make_dataset` stream: its token-budget
buckets give batches of different sizes and lengths, its `DATA` auto-shard
policy hands each worker half of every global batch, and the loss divides
by the global token count. After `STEPS` steps both workers must hold the
same weights as each other (exactly: they apply the same all-reduced
gradients) and as one process trained on the same global batches (to
`WEIGHT_ATOL`, float32 sums in another order). Keras 3.15's `fit` needs
`fix_distributed_fit` for this (keras-team/keras#20585).
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.data import make_dataset
from tests import test_distribution as single_device

WORKERS = 2
STEPS = 6
MAX_LENGTH = 16
TOKENS_PER_BATCH = 64  # buckets of 8 pairs (length <= 8) and 4 (<= 16)
WEIGHT_ATOL = single_device.WEIGHT_ATOL
WORKER_TIMEOUT_S = 300
REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# One worker: its strategy from TF_CONFIG, the model, `fit`, its weights.
WORKER_SCRIPT = textwrap.dedent(
    """
    import sys

    import numpy as np
    import tensorflow as tf

    sys.path.insert(0, sys.argv[2])
    from tests import test_multi_worker as t
    from keras_transformer.training import fix_distributed_fit
    from keras_transformer.training.distribution import make_strategy

    workdir, index = sys.argv[1], sys.argv[3]
    strategy = make_strategy("multi_worker")
    assert strategy.num_replicas_in_sync == t.WORKERS
    with strategy.scope():
        model = t.single_device.build_model(workdir + "/initial.weights.h5")
        fix_distributed_fit(model)
    history = model.fit(t.batches(), steps_per_epoch=t.STEPS, verbose=0)
    assert np.isfinite(history.history["loss"][-1])
    np.savez(
        f"{workdir}/worker{index}.npz",
        *[np.asarray(w) for w in model.get_weights()],
    )
    """
)


class NumberTokenizer:
    """Text "5 9 12" -> ids [5, 9, 12]: a stand-in for the SentencePiece one."""

    def tokenize(self, texts):
        return tf.strings.to_number(tf.strings.split(texts), tf.int32)

    tokenize_target = tokenize


def batches():
    """The training stream: pairs of 1-14 ids and their reversal, repeated."""
    rng = np.random.default_rng(3)
    pairs = []
    for length in rng.integers(1, MAX_LENGTH - 1, size=64):
        ids = rng.integers(3, single_device.VOCAB_SIZE, size=length)
        pairs.append((" ".join(map(str, ids)), " ".join(map(str, ids[::-1]))))
    sources, targets = zip(*pairs, strict=True)
    return make_dataset(
        tf.data.Dataset.from_tensor_slices((list(sources), list(targets))),
        NumberTokenizer(),
        max_length=MAX_LENGTH,
        tokens_per_batch=TOKENS_PER_BATCH,
        shuffle_buffer=0,
        repeat=True,
        batch_multiple=WORKERS,
    )


def free_ports(count):
    """Ports free now (a worker binds them a moment later; a clash is rare)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tf_config(ports, index):
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})


def run_workers(workdir, worker_script=WORKER_SCRIPT):
    """Runs the workers of `worker_script` (argv: workdir, repo, index) to
    the end; returns {index: (return code, log)}.

    All are killed at the deadline, or as soon as one fails (the others
    would wait for it).
    """
    script = workdir / "worker.py"
    script.write_text(worker_script)
    ports = free_ports(WORKERS)
    workers, logs = [], []
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    try:
        for index in range(WORKERS):
            log = open(workdir / f"worker{index}.log", "w")
            logs.append(log)
            env = {**os.environ, "TF_CONFIG": tf_config(ports, index)}
            workers.append(
                subprocess.Popen(
                    [sys.executable, str(script), str(workdir), REPO_DIR, str(index)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            )
        while time.monotonic() < deadline and not all(
            worker.poll() == 0 for worker in workers
        ):
            if any(worker.poll() not in (None, 0) for worker in workers):
                break
            time.sleep(0.5)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        for log in logs:
            log.close()
    return {
        index: (worker.returncode, (workdir / f"worker{index}.log").read_text())
        for index, worker in enumerate(workers)
    }


def load_weights(path):
    with np.load(path) as stored:
        return [stored[f"arr_{i}"] for i in range(len(stored.files))]


@pytest.mark.slow
def test_two_workers_fit_like_one_device(tmp_path):
    first = [labels.shape[0] for _, labels in batches().take(STEPS)]
    assert len(set(first)) > 1, first  # the buckets give different batch sizes
    keras.utils.set_random_seed(0)
    initial = kt.build_transformer(kt.TransformerConfig.tiny(**single_device.CONFIG))
    initial.save_weights(tmp_path / "initial.weights.h5")

    results = run_workers(tmp_path)
    for index, (returncode, log) in results.items():
        assert returncode == 0, f"worker {index} failed:\n{log[-5000:]}"

    single = single_device.build_model(tmp_path / "initial.weights.h5")
    single.fit(batches(), steps_per_epoch=STEPS, verbose=0)
    workers = [load_weights(tmp_path / f"worker{i}.npz") for i in range(WORKERS)]
    moved = 0.0
    for initial_weight, single_weight, *worker_weights in zip(
        initial.get_weights(), single.get_weights(), *workers, strict=True
    ):
        np.testing.assert_array_equal(worker_weights[0], worker_weights[1])
        np.testing.assert_allclose(worker_weights[0], single_weight, atol=WEIGHT_ATOL)
        moved = max(moved, np.abs(single_weight - initial_weight).max())
    assert moved > 1000 * WEIGHT_ATOL  # training moved far beyond the tolerance
