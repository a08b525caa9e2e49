"""The `tf.distribute` strategy a training run uses: one device, GPUs, or hosts.

Build and compile the model in the strategy's scope, fix its `fit` for
`tf.distribute`, and call `fit` as usual:

    strategy = make_strategy("mirrored")
    with strategy.scope():
        model = fix_distributed_fit(build_transformer(config))
        model.compile(optimizer=..., loss=LabelSmoothedCrossEntropy(), ...)
    model.fit(batches, ...)

Each batch of the input pipeline is then one global batch that `fit` splits
across all replicas (see `make_dataset`'s `batch_multiple`), and the loss
divides by the global batch's token count (`LabelSmoothedCrossEntropy`), so
the update does not depend on the number of replicas. Keras 3.15's `fit`
fails under "multi_worker", and under any strategy on a first batch split
unevenly over the replicas, unless the model is fixed with
`fix_distributed_fit` (keras-team/keras#20585).

TPUs are not offered by `make_strategy` (nothing here can run them, so it is
untested). On a Cloud TPU VM the same scope works with

    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.TPUStrategy(resolver)

but XLA compiles one program per batch shape, and the token-budget buckets
pad each batch only to its longest pair, so expect a compilation for every
new (batch, length) shape; a TPU run wants batches padded to their bucket's
limit and `drop_remainder`, which `make_dataset` does not do.
"""

import json
import os

STRATEGIES = ("default", "mirrored", "multi_worker")
JIT_COMPILE = ("auto", "on", "off")

TF_CONFIG_EXAMPLE = (
    '{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
    '"task": {"type": "worker", "index": 0}}'
)


def make_strategy(name="default", logical_cpus=0, single_device=False):
    """The `tf.distribute.Strategy` called `name`.

    - "default": `tf.distribute.MirroredStrategy` over all local GPUs when
      there are several (`default_mirrors`), else TensorFlow's default
      strategy, one device (the GPU, else the CPU).
    - "mirrored": `tf.distribute.MirroredStrategy`, one replica per local
      GPU (the CPU when there is none); with `logical_cpus=N`, one replica
      per logical CPU device instead, to run multi-replica training on a
      machine without GPUs.
    - "multi_worker": `tf.distribute.MultiWorkerMirroredStrategy`, one
      replica per GPU (or the CPU) on every host of the cluster that the
      `TF_CONFIG` environment variable describes. Every host runs the same
      program with its own `task`; they start training together.

    Args:
        name: one of `STRATEGIES`.
        logical_cpus: for "mirrored", the number of logical CPU devices to
            split the CPU into (0: use the GPUs); see `configure_logical_cpus`.
        single_device: for "default", one device even with several GPUs
            (gradient accumulation needs it, keras-team/keras#20582).

    Returns:
        A `tf.distribute.Strategy`.

    Raises:
        ValueError: an unknown `name`, `logical_cpus` without "mirrored",
            or, for "multi_worker", a missing or malformed `TF_CONFIG`.
        RuntimeError: `logical_cpus` after TensorFlow initialised its devices.

    Example:

    >>> strategy = make_strategy("default")
    >>> strategy.num_replicas_in_sync
    1
    """
    import tensorflow as tf

    check_strategy(name, logical_cpus)
    if name == "mirrored":
        devices = configure_logical_cpus(logical_cpus) if logical_cpus else None
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker":
        read_tf_config()
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = len(tf.config.list_physical_devices("GPU"))
    if default_mirrors(gpus, single_device):
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def default_mirrors(gpus, single_device=False):
    """Whether strategy "default" mirrors over `gpus` local GPUs: several, and
    not `single_device`.

    Example:

    >>> default_mirrors(0), default_mirrors(1), default_mirrors(8)
    (False, False, True)
    >>> default_mirrors(8, single_device=True)
    False
    """
    return gpus > 1 and not single_device


def resolve_jit_compile(setting, devices):
    """Whether the training step is compiled with XLA (`compile(jit_compile=)`).

    "on" and "off" are as given. "auto" is on when the strategy runs on one
    GPU, as Keras's own "auto" is; off on CPUs, where Keras does not use
    XLA either, and with several replicas, where Keras turns it off
    (keras-team/keras#18716; sparse gradients fail under XLA with
    MirroredStrategy, keras-team/tf-keras#99), so "on" there may fail.
    XLA compiles the step once for each batch shape: the token-budget
    batches have a few dozen (buckets times lengths); "off" saves those
    compilations.

    Args:
        setting: one of `JIT_COMPILE`.
        devices: the names of the strategy's replica devices
            (`strategy_devices`).

    Example:

    >>> resolve_jit_compile("auto", ["/job:localhost/replica:0/task:0/device:GPU:0"])
    True
    >>> resolve_jit_compile("auto", ["/device:CPU:0"])
    False
    >>> resolve_jit_compile("auto", ["/device:GPU:0", "/device:GPU:1"])
    False
    >>> resolve_jit_compile("on", ["/device:CPU:0"])
    True
    """
    check_jit_compile(setting)
    if setting != "auto":
        return setting == "on"
    return len(devices) == 1 and ":GPU:" in devices[0].upper()


def check_jit_compile(setting):
    """Raises `ValueError` unless `setting` is one of `JIT_COMPILE`."""
    if setting not in JIT_COMPILE:
        raise ValueError(f"jit_compile must be one of {JIT_COMPILE}, got {setting!r}.")


def strategy_devices(strategy):
    """The names of the devices `strategy`'s replicas run on, on this host.

    TensorFlow's default strategy names none: it runs on the first GPU, else
    the CPU.

    Example:

    >>> import tensorflow as tf
    >>> strategy_devices(tf.distribute.MirroredStrategy(["/cpu:0"]))
    ['/job:localhost/replica:0/task:0/device:CPU:0']
    """
    import tensorflow as tf

    try:
        return list(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy
        kind = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
        return [f"/device:{kind}:0"]


def check_strategy(name, logical_cpus=0):
    """Raises `ValueError` unless `make_strategy(name, logical_cpus)` may work.

    Checks only the arguments, so it runs before TensorFlow starts.
    """
    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {name!r}.")
    if logical_cpus < 0 or (logical_cpus and name != "mirrored"):
        raise ValueError(
            f"logical_cpus={logical_cpus} needs strategy 'mirrored' and must be "
            f">= 0 (got strategy {name!r})."
        )


def configure_logical_cpus(count):
    """Splits the CPU into `count` logical devices; returns their names.

    TensorFlow fixes its devices the first time it runs an op, so call this
    first in a process (the command line does, for `--logical-cpus`).
    Calling it again with the same count is harmless.

    Args:
        count: the number of logical CPU devices, >= 1.

    Returns:
        The device names, e.g. `["/device:CPU:0", "/device:CPU:1"]`.

    Raises:
        RuntimeError: TensorFlow already initialised a different number of
            CPU devices in this process.
    """
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}.")
    import tensorflow as tf

    (cpu,) = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * count
        )
    except RuntimeError as error:  # the devices are already initialised
        existing = len(tf.config.list_logical_devices("CPU"))
        if existing != count:
            raise RuntimeError(
                f"Cannot split the CPU into {count} logical devices: TensorFlow "
                f"has already initialised {existing} in this process, and "
                "devices are fixed once it runs its first op. Configure them "
                "first, in a fresh process (as `keras-transformer train "
                f"--strategy mirrored --logical-cpus {count}` does)."
            ) from error
    return [device.name for device in tf.config.list_logical_devices("CPU")]


def read_tf_config():
    """This process's `TF_CONFIG`, checked: `{"cluster": ..., "task": ...}`.

    `cluster` maps task types ("worker", optionally "chief") to lists of
    "host:port" addresses, the same on every host; `task` names this host's
    type and index in that list.

    Raises:
        ValueError: `TF_CONFIG` is unset, not JSON, or inconsistent.
    """
    text = os.environ.get("TF_CONFIG", "")
    if not text.strip():
        raise ValueError(
            "Strategy 'multi_worker' reads the cluster from the TF_CONFIG "
            f"environment variable, which is not set. Example: {TF_CONFIG_EXAMPLE}"
            " on the first host, index 1 on the second."
        )
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not JSON ({error}): {text!r}") from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    valid = (
        isinstance(cluster, dict)
        and all(
            isinstance(hosts, list) and hosts and all(":" in h for h in hosts)
            for hosts in cluster.values()
        )
        and isinstance(task, dict)
        and task.get("type") in cluster
        and isinstance(task.get("index"), int)
        and 0 <= task["index"] < len(cluster[task["type"]])
    )
    if not valid:
        raise ValueError(
            'TF_CONFIG must hold "cluster" (task type -> list of "host:port") '
            'and "task" (this host\'s "type" and "index" in that list), e.g. '
            f"{TF_CONFIG_EXAMPLE}; got {text!r}."
        )
    return config


def is_chief(strategy):
    """Whether this process writes the run's files (checkpoints, exports).

    True without a cluster; in a `TF_CONFIG` cluster, the "chief" task, or
    worker 0 when there is no chief.

    Example:

    >>> import tensorflow as tf
    >>> is_chief(tf.distribute.get_strategy())
    True
    """
    resolver = strategy.cluster_resolver
    cluster = resolver.cluster_spec().as_dict() if resolver else {}
    if not cluster:
        return True
    if "chief" in cluster:
        return resolver.task_type == "chief"
    return resolver.task_type == "worker" and resolver.task_id == 0


def worker_directory(strategy, directory):
    """The folder this process writes to in place of `directory`.

    Under `MultiWorkerMirroredStrategy` every worker must save checkpoints
    and models (saving distributed variables can run collective ops that
    all workers join), but only the chief's copy is the run's: the others
    write theirs to `directory/workers/<type>-<index>`, never over the
    chief's. Without a cluster, and on the chief, this is `directory`.

    Example:

    >>> import tensorflow as tf
    >>> worker_directory(tf.distribute.get_strategy(), "runs/ding")
    'runs/ding'
    """
    if is_chief(strategy):
        return directory
    resolver = strategy.cluster_resolver
    return os.path.join(
        directory, "workers", f"{resolver.task_type}-{resolver.task_id}"
    )


def check_gradient_accumulation(steps, strategy, name="gradient_accumulation_steps"):
    """Raises ValueError if `steps` > 1 under a `tf.distribute` strategy.

    Keras applies accumulated gradients inside a conditional, where a
    strategy cannot aggregate them (keras-team/keras#20582), so gradient
    accumulation trains on one device only. The one owner of that rule:
    `transformer_optimizer` checks it in a strategy's scope, the training
    recipe when its config is made.

    Args:
        steps: micro-batches per update.
        strategy: the name of the strategy training runs under, or None
            for none (one device).
        name: the setting `steps` came from, for the message.

    Example:

    >>> check_gradient_accumulation(4, None)
    >>> check_gradient_accumulation(4, "mirrored")
    Traceback (most recent call last):
    ...
    ValueError: gradient_accumulation_steps=4 works on one device only, not with ...
    """
    if steps > 1 and strategy is not None:
        raise ValueError(
            f"{name}={steps} works on one device only, not with strategy "
            f"{strategy!r}: Keras applies the accumulated gradients inside a "
            "conditional, where the strategy cannot aggregate them "
            "(keras-team/keras#20582). Train with larger batches instead."
        )
