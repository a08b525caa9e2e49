"""Self-attention caches that grow a position a step: TensorFlow only.

Without XLA nothing forces fixed shapes, so `decode` on TensorFlow starts
the caches empty and each step appends its token's keys and values: a step
then copies and attends over the positions written so far, not a whole
buffer, and beam search reorders t positions instead of L
(benchmarks/README.md, "Caches that grow": about 1.5x the words per second
of the fixed buffers). `ops.while_loop` keeps every loop variable's shape,
so this loop is `tf.while_loop` with shape invariants. The fixed buffers of
`decoding.loops` are the reference it is tested against.
"""

import tensorflow as tf


def growing_cache_shapes(cache):
    """The shape invariants of caches `(keys, values)` per layer, each
    (B, h, L, d), whose rows (B) and length (L) change.

    Example:

    >>> growing_cache_shapes(((tf.zeros([2, 4, 0, 8]),) * 2,))
    ((TensorShape([None, 4, None, 8]), TensorShape([None, 4, None, 8])),)
    """
    return tf.nest.map_structure(
        lambda x: tf.TensorShape([None, x.shape[1], None, x.shape[3]]), cache
    )


def while_loop(cond, body, loop_vars, maximum_iterations, cache_position, cache_shapes):
    """`tf.while_loop` whose cache (`loop_vars[cache_position]`) may change
    the sizes that `cache_shapes` leaves None; see `loops.while_loop`."""
    shapes = tf.nest.map_structure(lambda x: x.shape, loop_vars)
    cache = tf.nest.map_structure(
        lambda x, shape: x.shape[:1].concatenate(tf.TensorShape(shape)[1:]),
        loop_vars[cache_position],
        cache_shapes,
    )  # the rows stay the loop's own
    shapes = (*shapes[:cache_position], cache, *shapes[cache_position + 1 :])

    def step(*state):
        return tf.nest.map_structure(tf.ensure_shape, body(*state), shapes)

    return tf.while_loop(
        cond,
        step,
        loop_vars,
        shape_invariants=shapes,
        maximum_iterations=maximum_iterations,
    )
