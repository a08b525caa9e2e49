"""What relies on Keras's private internals, and nothing else.

The one module of the package that imports `keras.src` or reads an
optimizer's private state, so that a Keras upgrade breaks here or nowhere.
`tests/training/test_keras_internals.py` checks each part against stock
Keras:

- `fix_distributed_fit` works around keras-team/keras#20585; its tests run
  stock Keras and expect the bug, so they fail once Keras fixes it and the
  workaround can go.
- `FusedAdam` is Keras's Adam with one TensorFlow kernel per variable
  update; its test checks that it follows `keras.optimizers.Adam` step for
  step. It is the training speed trick that earned its place
  (benchmarks/README.md, "Plain Keras").
- `batches_applied` reads an optimizer's private batch counter; its tests
  check that the counter counts batches, not updates, is what the
  learning-rate schedule is called with, and is checkpointed.
"""

import keras
import tensorflow as tf
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


def batches_applied(optimizer):
    """How many batches `optimizer` has been applied to.

    Keras 3.15 counts every `apply` call in the private variable
    `optimizer._iterations`: every batch, each micro-batch of gradient
    accumulation included. It is the step the learning-rate schedule is
    called with, and a checkpoint of the optimizer saves it. The public
    `optimizer.iterations` divides it by `gradient_accumulation_steps`: it
    counts updates.

    Args:
        optimizer: a `keras.optimizers.Optimizer` (for a
            `LossScaleOptimizer`, its `inner_optimizer` counts).

    Returns:
        An int.

    Example:

    >>> optimizer = keras.optimizers.SGD(gradient_accumulation_steps=2)
    >>> weight = keras.Variable([1.0])
    >>> for _ in range(3):
    ...     optimizer.apply([np.array([1.0], "float32")], [weight])
    >>> batches_applied(optimizer), int(optimizer.iterations)
    (3, 1)
    """
    return int(optimizer._iterations.numpy())


@keras.saving.register_keras_serializable(package="keras_transformer")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` updating each variable with one fused kernel.

    Keras's Adam updates a variable with about a dozen elementwise ops,
    each a pass over the variable and its two moments; this one calls
    TensorFlow's `ResourceApplyAdam`, which makes one. The arithmetic is
    Keras's (epsilon is added to sqrt(v), the bias corrections fold into the
    step size), so the two optimizers follow the same trajectory, and
    everything else (schedules, gradient accumulation, clipping, loss
    scaling, `tf.distribute`) is Keras's machinery. `amsgrad=True` uses
    Keras's update. It takes the arguments of `keras.optimizers.Adam`.

    Example:

    >>> optimizer = FusedAdam(learning_rate=0.1)
    >>> weight = keras.Variable([1.0, 2.0])
    >>> optimizer.apply([np.array([1.0, -1.0], "float32")], [weight])
    >>> np.round(np.array(weight), 3)
    array([0.9, 2.1], dtype=float32)
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].handle,
            v=self._velocities[index].handle,
            beta1_power=beta_1**step,
            beta2_power=beta_2**step,
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype),
        )
