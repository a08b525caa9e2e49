"""Controls that every decoding step consults between the logits and the choice.

A control is a small object, in the spirit of `keras_transformer.scorings`.
`initial_state(batch_size)` gives its per-item state: a nest of tensors
with the batch on axis 0 (its per-row settings, and whatever it tracks).
`adjust(logits, ids, index, state)` changes a step's float32 logits
(B', V) before greedy decoding, beam search or a sampler chooses from
them, and returns the state for the next step. This module holds the
contract and the repetition and length controls; `token_masks` the
controls that say which tokens a step may choose.

`with_controls` wraps a step function so that the states ride in its
cache: beam search tiles and reorders them with the beams as it does the
cache, a keras-hub `BeamSampler` likewise, and greedy decoding carries
them. Controls compose, applied in order. With none, the step function is
returned unchanged: nothing extra is traced. A step skips a control whose
`is_active` is false for every row (a neutral setting, or a step it does
not concern), so a signature that always carries every control pays
little for the ones a batch leaves at rest. They never act on a token
given in a prefix: those steps keep the model's logits.

Like CTranslate2's and Hugging Face's logits processors, they act on the
logits before the log-softmax; a token a control rules out gets the logit
-inf. Written in `keras.ops`: they run on every Keras backend, and under
`tf.function`, XLA and `jax.jit` (fixed shapes, no Python state per
hypothesis).
"""

import numpy as np
from keras import ops

from keras_transformer.decoding.loops import given_tokens
from keras_transformer.special_ids import END_ID, PAD_ID

BANNED = -float("inf")  # the logit of a token a control rules out


class StepControl:
    """A control of each decoding step's logits; see the module docstring.

    Subclasses define `adjust`, and `initial_state` when they keep state.
    """

    def initial_state(self, batch_size):
        """The per-item state: a nest of tensors, each (B, ...)."""
        return ()

    def is_active(self, index, state):
        """None (the default: `adjust` runs every step), or a scalar bool:
        whether `adjust` may change a row's logits at this step; where it
        is false the step skips it. For controls whose `adjust` returns
        `state` unchanged."""
        return None

    def adjust(self, logits, ids, index, state):
        """`(logits, state)` for the step that feeds `ids[:, index]`.

        Args:
            logits: float32 (B', V), the scores of the token after `index`.
            ids: int32 (B', L + 1), each row's tokens: the start token in
                column 0 and the generated ones in columns 1..`index`
                (later columns hold padding, or the rest of a prefix).
            index: scalar int32, the position just fed; the token chosen
                from these logits is generated token number `index + 1`.
            state: this control's state, each leaf (B', ...) (B' = B * K
                under beam search, the rows of beam k of item b at
                b * K + k).
        """
        raise NotImplementedError


def with_controls(next_fn, controls):
    """`next_fn` whose logits the `controls` adjust, in order.

    The wrapped step function's cache is `(cache, states)`, `states` one
    per control (`initial_states`).

    Args:
        next_fn: `next_fn(ids, cache, index) -> (logits, cache)`.
        controls: a sequence of `StepControl`s; empty returns `next_fn`.

    Example:

    >>> def next_fn(ids, cache, index):
    ...     return ops.zeros((ops.shape(ids)[0], 4)), cache
    >>> controlled = with_controls(next_fn, [MinLength(1)])
    >>> states = initial_states([MinLength(1)], 1)
    >>> ids = np.array([[1, 0, 0]], "int32")  # the start token, then none given
    >>> logits, _ = controlled(ids, ((), states), 0)
    >>> ops.convert_to_numpy(logits)  # no end token (2) before 1 token
    array([[  0.,   0., -inf,   0.]], dtype=float32)
    """
    controls = tuple(controls)
    if not controls:
        return next_fn

    def controlled(ids, cache, index):
        cache, states = cache
        logits, cache = next_fn(ids, cache, index)  # (B', V)
        model_logits = ops.cast(logits, "float32")
        logits, new_states = model_logits, []
        for control, state in zip(controls, states, strict=True):
            active = control.is_active(index, state)
            if active is None:
                logits, state = control.adjust(logits, ids, index, state)
            else:
                logits = ops.cond(
                    active,
                    lambda c=control, x=logits, s=state: c.adjust(x, ids, index, s)[0],
                    lambda x=logits: x,
                )
            new_states.append(state)
        is_given = given_tokens(ids, index) != PAD_ID  # (B',): a prefix's token
        logits = ops.cond(
            ops.any(is_given),
            lambda x=logits: ops.where(is_given[:, None], model_logits, x),
            lambda x=logits: x,
        )
        return logits, (cache, tuple(new_states))

    return controlled


def initial_states(controls, batch_size):
    """The states of `controls` for a batch of `batch_size` items, a tuple."""
    return tuple(control.initial_state(batch_size) for control in controls)


def per_item(value, batch_size, dtype):
    """`value`, one number for all items or one per item, as (B,) `dtype`."""
    return ops.broadcast_to(ops.cast(value, dtype), (batch_size,))


def marked(logits, rows_tokens, flags):
    """bool like `logits` (B', V): true at each (row, token) of `rows_tokens`
    (N, 2) whose flag in `flags` (N,) is true (duplicates allowed)."""
    hits = ops.scatter(rows_tokens, ops.cast(flags, "float32"), ops.shape(logits))
    return hits > 0


def ban(logits, rows_tokens, banned):
    """`logits` (B', V) with -inf at each (row, token) of `rows_tokens`
    (N, 2) where `banned` (N,) is true."""
    return ops.where(marked(logits, rows_tokens, banned), BANNED, logits)


def row_token_pairs(tokens):
    """The (row, token) index pairs of int32 `tokens` (B', N): (B' * N, 2)."""
    rows, count = ops.shape(tokens)[0], ops.shape(tokens)[1]
    row_ids = ops.repeat(ops.arange(rows, dtype="int32"), count)  # (B' * N,)
    return ops.stack([row_ids, ops.reshape(tokens, (-1,))], axis=1)


def generated_columns(ids, index):
    """bool (L + 1,): the buffer columns of generated tokens, 1..`index`."""
    columns = ops.arange(ops.shape(ids)[1], dtype="int32")
    return (columns >= 1) & (columns <= index)


class RepetitionPenalty(StepControl):
    """CTRL's repetition penalty (Keskar et al., 2019), as CTranslate2 and
    Hugging Face define it: the logit of every token already generated is
    divided by `penalty` where positive, multiplied where negative.

    Args:
        penalty: > 0, one for all items or one per item (B,); 1 changes
            nothing, > 1 discourages repeats.

    Example:

    >>> ids = np.array([[1, 5, 0]], "int32")  # start, then 5
    >>> logits = np.array([[0., 0., 0., 0., 0., 2., -2.]], "float32")
    >>> control = RepetitionPenalty(2.0)
    >>> adjusted, _ = control.adjust(logits, ids, 1, control.initial_state(1))
    >>> ops.convert_to_numpy(adjusted)[0, 5:]
    array([ 1., -2.], dtype=float32)
    """

    def __init__(self, penalty):
        if not ops.is_tensor(penalty) and not (ops.convert_to_numpy(penalty) > 0).all():
            raise ValueError(f"penalty must be > 0, got {penalty!r}.")
        self.penalty = penalty

    def initial_state(self, batch_size):
        return per_item(self.penalty, batch_size, "float32")  # (B,)

    def is_active(self, index, state):
        return ops.any(state != 1.0) & (index >= 1)

    def adjust(self, logits, ids, index, state):
        generated = ops.broadcast_to(generated_columns(ids, index), ops.shape(ids))
        seen = marked(
            logits, row_token_pairs(ids), ops.reshape(generated, (-1,))
        )  # (B', V)
        penalty = state[:, None]  # (B', 1)
        penalized = ops.where(
            logits < 0, ops.multiply(logits, penalty), ops.divide(logits, penalty)
        )
        return ops.where(seen, penalized, logits), state


class NoRepeatNgram(StepControl):
    """No n-gram of `size` tokens occurs twice among the generated tokens.

    A token is ruled out when, with the last `size - 1` generated tokens
    before it, it would repeat an n-gram already generated.

    Args:
        size: n, a positive int (1 rules out every token already
            generated); or one per item (B,), each from 0 (none) to
            `max_size`.
        max_size: the largest n of per-item sizes, a static int (each
            step compares `max_size - 1` columns); with an int `size`,
            `size`.

    Example:

    >>> ids = np.array([[1, 5, 6, 5, 0]], "int32")  # 5 6 5: 6 would repeat 5 6
    >>> control = NoRepeatNgram(2)
    >>> logits, _ = control.adjust(np.zeros((1, 8)), ids, 3, control.initial_state(1))
    >>> np.flatnonzero(ops.convert_to_numpy(logits)[0] == -np.inf)
    array([6])
    """

    def __init__(self, size, max_size=None):
        if isinstance(size, bool) or not (
            isinstance(size, int) or ops.is_tensor(size) or hasattr(size, "ndim")
        ):
            raise ValueError(f"size must be a positive int, got {size!r}.")
        if isinstance(size, int):
            if size < 1:
                raise ValueError(f"size must be a positive int, got {size!r}.")
            max_size = size if max_size is None else max_size
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise ValueError(
                "max_size must be a positive int with per-item sizes, got "
                f"{max_size!r}."
            )
        if (
            not ops.is_tensor(size)
            and not ((0 <= np.asarray(size)) & (np.asarray(size) <= max_size)).all()
        ):
            raise ValueError(
                f"Each size must be 0 to max_size={max_size}, got {size!r}."
            )
        self.size = size
        self.max_size = max_size

    def initial_state(self, batch_size):
        return per_item(self.size, batch_size, "int32")  # (B,)

    def is_active(self, index, state):
        return ops.any((state >= 1) & (state - 1 <= index))

    def adjust(self, logits, ids, index, state):
        length = ops.shape(ids)[1]
        shape = ops.shape(ids)  # (B', L + 1)
        starts = ops.arange(length, dtype="int32")[None]  # (1, L + 1): j
        n = state[:, None]  # (B', 1), 0 for none

        def column(offsets):  # the tokens at per-row columns (B', C)
            offsets = ops.clip(offsets, 0, length - 1)
            return ops.take_along_axis(ids, ops.broadcast_to(offsets, shape), axis=1)

        # The n-gram at j is ids[j : j + n]; it counts when generated whole
        # (1 <= j, j + n - 1 <= index) and its first n - 1 tokens are the last
        # n - 1 generated, ids[index - n + 2 : index + 1].
        matches = (starts >= 1) & (starts + n - 1 <= index) & (n >= 1)  # (B', L + 1)
        for offset in range(self.max_size - 1):
            last = ops.take_along_axis(
                ids, ops.clip(index - n + 2 + offset, 0, length - 1), axis=1
            )  # (B', 1)
            same = column(starts + offset) == last
            matches = matches & ((offset >= n - 1) | same)
        followers = column(starts + n - 1)  # (B', L + 1)
        logits = ban(logits, row_token_pairs(followers), ops.reshape(matches, (-1,)))
        return logits, state


class MinLength(StepControl):
    """The end token is ruled out until `length` tokens have been generated.

    A length limit wins: a row that reaches its limit ends there (beam
    search with the "transformers" scoring forces the end token at it).

    Args:
        length: tokens before the end token, >= 0; one for all items or one
            per item (B,).
        end_id: the end-of-sequence token.

    Example:

    >>> control = MinLength(2)
    >>> logits, _ = control.adjust(np.zeros((1, 4), "float32"),
    ...     np.ones((1, 5), "int32"), 1, control.initial_state(1))
    >>> ops.convert_to_numpy(logits)  # 1 token so far: no end (2) yet
    array([[  0.,   0., -inf,   0.]], dtype=float32)
    """

    def __init__(self, length, end_id=END_ID):
        if not ops.is_tensor(length) and (ops.convert_to_numpy(length) < 0).any():
            raise ValueError(f"length must be >= 0, got {length!r}.")
        self.length = length
        self.end_id = end_id

    def initial_state(self, batch_size):
        return per_item(self.length, batch_size, "int32")  # (B,)

    def is_active(self, index, state):
        return ops.any(index < state)

    def adjust(self, logits, ids, index, state):
        vocab = ops.arange(ops.shape(logits)[-1], dtype="int32")  # (V,)
        too_short = (index < state)[:, None] & (vocab == self.end_id)[None]
        return ops.where(too_short, BANNED, logits), state
