"""Terminology constraints: phrases that must appear in beam search's output.

Dynamic beam allocation (Post & Vilar, NAACL 2018) in the vectorized form
of Hu et al. (NAACL 2019), on fixed shapes: no Python state per
hypothesis, one trace, XLA and `jax.jit` alike.

Each hypothesis carries, per phrase, whether it has been generated whole
(`met`) and how many of its first pieces the hypothesis ends with
(`progress`). A step considers, besides the usual 2K best extensions, each
beam's best token and, for each phrase a beam has not met, its next
piece; the K beams that go on are picked round-robin over banks (the
constraint pieces a hypothesis has, met phrases counting whole): the best
of each bank first, fullest bank first, then the second best of each, and
so on. A hypothesis may end only once it has every phrase. At its length
limit it ends anyway, and is ranked after every finished hypothesis that
has them all: a row whose phrases do not fit its limit still gets its
best translation, and `phrases_found` tells which phrases it lacks.

Phrases are int (B, C, P): C phrases per item, each P piece ids
left-aligned and padded with -1 (a row of -1 only is no phrase).
Written in `keras.ops`: it runs on every Keras backend.
"""

from keras import ops

from keras_transformer.decoding.loops import take_per_row, write_column
from keras_transformer.scorings import NO_HYPOTHESIS

_NO_TOKEN = -2  # what a column before the first generated token holds


def phrase_lengths(phrases):
    """The pieces of each phrase of `phrases` (B, C, P): int32 (B, C)."""
    return ops.sum(ops.cast(phrases >= 0, "int32"), axis=-1)


def phrases_found(tokens, phrases):
    """Which phrases occur in which sequences.

    Args:
        tokens: int (B, N, T), N sequences per item (padding and columns
            set to a negative id match no phrase).
        phrases: int (B, C, P), as in the module docstring.

    Returns:
        bool (B, N, C); an empty phrase is always found.

    Example:

    >>> tokens = np.array([[[5, 6, 7, 0]]], "int32")
    >>> phrases = np.array([[[6, 7], [7, 5], [-1, -1]]], "int32")
    >>> ops.convert_to_numpy(phrases_found(tokens, phrases))
    array([[[ True, False,  True]]])
    """
    tokens = ops.cast(tokens, "int32")
    phrases = ops.cast(phrases, "int32")
    lengths = phrase_lengths(phrases)[:, None, :, None]  # (B, 1, C, 1)
    width = ops.shape(tokens)[-1]
    starts = ops.arange(width, dtype="int32")  # (T,): where a match begins
    found = starts + lengths <= width  # (B, 1, C, T)
    for offset in range(phrases.shape[-1]):
        token = ops.take(tokens, ops.minimum(starts + offset, width - 1), axis=-1)
        piece = phrases[:, None, :, offset, None]  # (B, 1, C, 1)
        found = found & ((offset >= lengths) | (token[:, :, None, :] == piece))
    return ops.any(found, axis=-1) | (lengths[..., 0] == 0)  # (B, N, C)


def _tails(ids, last, width):
    """The `width` tokens of `ids` (B, N, L + 1) up to column `last`
    (B, N, width), `_NO_TOKEN` for columns before the first generated one."""
    columns = last - width + 1 + ops.arange(width, dtype="int32")  # (width,)
    tokens = ops.take(ids, ops.maximum(columns, 0), axis=-1)
    return ops.where(columns >= 1, tokens, _NO_TOKEN)


def _progress(tails, phrases, lengths):
    """How many first pieces of each phrase each sequence ends with (the
    longest such start): int32 (B, N, C) from `tails` (B, N, P), the last
    P tokens, `phrases` (B, C, P) and `lengths` (B, C)."""
    width = phrases.shape[-1]
    sizes = ops.arange(1, width + 1, dtype="int32")[:, None]  # (P, 1): s
    pieces = ops.arange(width, dtype="int32")[None, :]  # (1, P): i
    # Ending with the first s pieces: tails[P - s + i] == phrases[i], i < s.
    columns = ops.take(tails, ops.clip(width - sizes + pieces, 0, width - 1), axis=-1)
    same = columns[:, :, None] == phrases[:, None, :, None, :]  # (B, N, C, P, P)
    ends_with = ops.all(same | (pieces >= sizes), axis=-1)  # (B, N, C, P)
    fits = sizes[:, 0] <= lengths[:, None, :, None]  # (B, 1, C, P)
    return ops.max(ops.where(ends_with & fits, sizes[:, 0], 0), axis=-1)


class PhraseConstraints:
    """The phrases each item's output must contain, for `beam_search`.

    The state is `(met, progress)`, bool and int32 (B, K, C) per beam.

    Args:
        phrases: int (B, C, P), as in the module docstring.
    """

    def __init__(self, phrases):
        self.phrases = ops.cast(phrases, "int32")  # (B, C, P)
        self.lengths = phrase_lengths(self.phrases)  # (B, C)

    def initial_state(self, alive_ids, index):
        """The state of beams `alive_ids` (B, K, L + 1) whose columns
        1..`index` are generated (a prefix's tokens)."""
        columns = ops.arange(ops.shape(alive_ids)[-1], dtype="int32")
        generated = ops.where(columns <= index, alive_ids, _NO_TOKEN)
        met = phrases_found(generated[:, :, 1:], self.phrases)  # (B, K, C)
        tails = _tails(alive_ids, index, self.phrases.shape[-1])
        return met, _progress(tails, self.phrases, self.lengths)

    def rule_out_end(self, log_probs, state, end_id):
        """`log_probs` (B, K, V) without the end token for beams that lack
        a phrase."""
        met, _ = state
        vocab = ops.arange(ops.shape(log_probs)[-1], dtype="int32")  # (V,)
        lacking = ~ops.all(met, axis=-1)  # (B, K)
        ruled_out = lacking[:, :, None] & (vocab == end_id)  # (B, K, V)
        return ops.where(ruled_out, NO_HYPOTHESIS, log_probs)

    def candidates(self, alive_ids, alive_log_probs, log_probs, index, state):
        """The one-token extensions a step ranks: the 2K best, each beam's
        best, and each beam's next piece of every phrase it lacks.

        Args:
            alive_ids: int32 (B, K, L + 1).
            alive_log_probs: float32 (B, K).
            log_probs: float32 (B, K, V), next-token log-probabilities.
            index: scalar int32, the position just fed.
            state: the beams' `(met, progress)`.

        Returns:
            `(ids (B, M, L + 1), tokens (B, M), log_probs (B, M),
            beams (B, M), state, banks (B, M))`, M = K (3 + C): the
            extended sequences, their new tokens, log-probabilities
            (`NO_HYPOTHESIS` for a repeat or an impossible one), the beams
            they extend, their states and banks.
        """
        met, progress = state
        beam_size = ops.shape(log_probs)[1]
        vocab_size = ops.shape(log_probs)[2]
        total = alive_log_probs[:, :, None] + log_probs  # (B, K, V)
        flat = ops.reshape(total, (ops.shape(total)[0], -1))  # (B, K * V)
        _, top = ops.top_k(flat, k=2 * beam_size)  # (B, 2K)
        offsets = ops.arange(beam_size, dtype="int32") * vocab_size  # (K,)
        best = ops.cast(ops.argmax(log_probs, axis=-1), "int32") + offsets  # (B, K)
        phrases = ops.broadcast_to(
            self.phrases[:, None], ops.shape(met) + (self.phrases.shape[-1],)
        )  # (B, K, C, P)
        last_piece = ops.shape(phrases)[-1] - 1
        wanted = ops.take_along_axis(
            phrases, ops.minimum(progress, last_piece)[..., None], axis=-1
        )[..., 0]  # (B, K, C)
        lacking = ~met & (self.lengths[:, None] > 0)  # (B, K, C)
        proposals = ops.where(lacking, wanted + offsets[:, None], -1)  # (B, K, C)
        choices = ops.concatenate(
            [
                ops.cast(top, "int32"),
                best,
                ops.reshape(proposals, (ops.shape(best)[0], -1)),
            ],
            axis=1,
        )  # (B, M), indices into `flat`, -1 for none
        repeat = ops.any(
            (choices[:, :, None] == choices[:, None, :]) & _earlier(choices), axis=-1
        )  # (B, M): the same extension is an earlier candidate
        unused = repeat | (choices < 0)
        choices = ops.maximum(choices, 0)
        log_p = ops.take_along_axis(flat, choices, axis=1)  # (B, M)
        log_p = ops.where(unused, NO_HYPOTHESIS, log_p)
        beams, tokens = choices // vocab_size, choices % vocab_size
        ids = write_column(take_per_row(alive_ids, beams), index + 1, tokens)
        width = self.phrases.shape[-1]
        progress = _progress(_tails(ids, index + 1, width), self.phrases, self.lengths)
        met = take_per_row(met, beams) | (progress == self.lengths[:, None])
        met = met | (self.lengths[:, None] == 0)  # (B, M, C)
        banks = ops.sum(
            ops.where(met, self.lengths[:, None], progress), axis=-1
        )  # (B, M)
        return ids, tokens, log_p, beams, (met, progress), banks


def _earlier(candidates):
    """bool (M, M) of candidates (B, M): whether candidate m' (the last
    axis) comes before candidate m."""
    count = ops.shape(candidates)[1]
    return ops.arange(count)[None, :] < ops.arange(count)[:, None]


def _ranks(log_p, groups):
    """Each candidate's place in its group, best first (0), ties to the
    earlier: int32 (B, M), distinct within a group, from float32 `log_p`
    and int32 `groups` (B, M)."""
    log_p, groups = ops.convert_to_tensor(log_p), ops.convert_to_tensor(groups)
    better = (log_p[:, None, :] > log_p[:, :, None]) | (
        (log_p[:, None, :] == log_p[:, :, None]) & _earlier(log_p)
    )  # (B, M, M): candidate m' (last axis) goes before m
    same_group = groups[:, None, :] == groups[:, :, None]
    return ops.sum(ops.cast(same_group & better, "int32"), axis=-1)


def allocation_priority(log_p, banks):
    """Dynamic beam allocation's order of candidates, higher first.

    Round-robin over banks (Hu et al.'s vectorized allocation): the best
    candidate of every bank, fullest bank first, then the second best of
    every bank, and so on; a bank with fewer candidates leaves its turns to
    the others.

    Args:
        log_p: float32 (B, M), `NO_HYPOTHESIS` for no candidate.
        banks: int32 (B, M).

    Returns:
        float32 (B, M), distinct within an item, `NO_HYPOTHESIS` for no
        candidate.

    Example:

    >>> log_p = np.array([[-1., -2., -3., -4.]], "float32")
    >>> banks = np.array([[0, 0, 1, 1]], "int32")
    >>> priority = allocation_priority(log_p, banks)
    >>> np.argsort(-ops.convert_to_numpy(priority)[0])  # bank 1's best first
    array([2, 0, 3, 1])
    """
    log_p, banks = ops.convert_to_tensor(log_p), ops.convert_to_tensor(banks)
    fullest = ops.max(banks, axis=1, keepdims=True)  # (B, 1)
    turn = _ranks(log_p, banks) * (fullest + 1) + (fullest - banks)  # 0 first
    return ops.where(log_p > NO_HYPOTHESIS, -ops.cast(turn, "float32"), NO_HYPOTHESIS)


def finished_priority(scores, met):
    """The order of finished hypotheses, higher first: those with every
    phrase (`met`, bool (B, N)) before the others, each by `scores`
    (float32 (B, N), `NO_HYPOTHESIS` for an empty slot, last, the earlier
    first); float32 (B, N), distinct within an item."""
    place = _ranks(scores, ops.zeros_like(ops.cast(met, "int32")))  # (B, N)
    first = met & (scores > NO_HYPOTHESIS)
    place = place + ops.where(first, 0, ops.shape(scores)[1])
    return -ops.cast(place, "float32")
