"""Workarounds for Keras bugs, the one module that uses Keras's internals.

Each workaround names its upstream issue, and
`tests/training/test_keras_workarounds.py` holds a test per bug that runs
stock Keras and expects it to fail: once Keras fixes the bug, that test
fails and the workaround can go.
"""

from keras import ops, tree

# The test Keras 3.15's `fit` uses to pick its multi-worker reduction.
from keras.src.backend.tensorflow.trainer import _collective_all_reduce_multi_worker


def fix_distributed_fit(model):
    """Makes `model.fit` and `evaluate` work under `tf.distribute` strategies.

    Keras 3.15's `fit` and `evaluate` fail under `MultiWorkerMirroredStrategy`,
    and under any strategy when the first batch splits unevenly over the
    replicas (keras-team/keras#20585). This overrides three of `model`'s
    methods on the instance, so it serves any `keras.Model`, functional or
    subclassed, built from this package's layers or not:

    - `_maybe_symbolic_build`: Keras averages the first distributed batch
      over all replicas with `strategy.reduce` only to learn its dtypes and
      shapes. That fails on replicas' batches of different sizes, and under
      `MultiWorkerMirroredStrategy` on a dict of inputs ("Attempt to
      convert a value (PerReplica ...)"). One replica's batch has the same
      dtypes and ranks, so it is passed on instead.
    - `train_step` and `test_step`: in multi-worker mode Keras averages each
      replica's scalar logs with `strategy.reduce("MEAN", value, axis=0)`,
      which fails on a scalar ("Invalid reduction dimension 0 for input
      with 0 dimensions"). The logs get a leading axis of 1 there, which
      gives the mean over all replicas, what `MirroredStrategy` reports.
      Gradients are all-reduced by the optimizer and are not affected.

    Args:
        model: a `keras.Model`.

    Returns:
        `model`, fixed in place.

    Example:

    >>> import keras
    >>> inputs = keras.Input((2,))
    >>> model = fix_distributed_fit(keras.Model(inputs, keras.layers.Dense(1)(inputs)))
    >>> model.compile("sgd", "mse")
    >>> model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0).history["loss"][0] > 0
    True
    """
    symbolic_build = model._maybe_symbolic_build
    train_step, test_step = model.train_step, model.test_step

    def maybe_symbolic_build(iterator=None, data_batch=None):
        strategy = model._distribute_strategy
        if iterator is not None and strategy is not None:
            for _, _, batches in iterator:
                data_batch = tree.map_structure(
                    lambda value: strategy.experimental_local_results(value)[0],
                    next(batches),
                )
                break
        symbolic_build(data_batch=data_batch)

    def per_replica_logs(logs):
        if not _collective_all_reduce_multi_worker(model.distribute_strategy):
            return logs
        return tree.map_structure(lambda value: ops.expand_dims(value, 0), logs)

    model._maybe_symbolic_build = maybe_symbolic_build
    model.train_step = lambda data: per_replica_logs(train_step(data))
    model.test_step = lambda data: per_replica_logs(test_step(data))
    return model
