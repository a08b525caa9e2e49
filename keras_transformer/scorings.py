"""How beam search scores finished hypotheses and stops: one object a scoring.

`beam_search(scoring=...)` takes a `Scoring` or looks one up here by name
(`get_scoring`) and asks it four things: what a finished hypothesis's log-probability is
divided by (`normalizer`), how many finished hypotheses an item keeps
(`finished_slots`), when an item takes no more (`is_done`) and whether the
end token is forced at an item's limit (`forces_end_at_limit`). A run's
settings name one (`EvaluationSection.scoring`), so the methods are plain
arithmetic on numbers, NumPy arrays or float tensors alike: this module
imports without TensorFlow.

- "gnmt" (`GNMTScoring`): the paper's, as in tensor2tensor and GNMT (Wu et
  al., 2016).
- "transformers" (`TransformersScoring`): Hugging Face transformers'
  `generate(num_beams=K, length_penalty=alpha, early_stopping=False)`; the
  scoring of imported Marian (OPUS-MT) models.
"""

NO_HYPOTHESIS = -float("inf")
"""The score of an empty finished slot and the log-probability of a dead beam."""


def length_penalty(length, alpha):
    """The GNMT length penalty ((5 + length) / 6) ** alpha.

    Args:
        length: float (a number, NumPy array or float tensor), the number
            of generated tokens.
        alpha: float >= 0; 0 disables the penalty.

    Returns:
        `length`'s type and shape.

    Example:

    >>> length_penalty(7.0, 1.0)
    2.0
    """
    return ((5.0 + length) / 6.0) ** alpha


class Scoring:
    """How beam search scores finished hypotheses and when an item stops.

    One stateless instance a scoring, looked up by `name` (`get_scoring`).
    Lengths are floats, the number of generated tokens (end token
    included); scores and log-probabilities are float, `NO_HYPOTHESIS`
    where there is none.

    Attributes:
        name: the scoring's name in `SCORINGS`.
        forces_end_at_limit: whether the end token is the only one an item
            may take at its limit (otherwise the hypothesis ends there
            without it).
    """

    name = None
    forces_end_at_limit = False

    def normalizer(self, length, alpha):
        """What a finished hypothesis of `length` tokens divides its log p by."""
        raise NotImplementedError

    def finished_slots(self, num_results, beam_size):
        """How many finished hypotheses an item keeps while searching."""
        raise NotImplementedError

    def is_done(self, best_alive, worst_finished, length, limit, alpha):
        """Whether an item that still has an alive beam takes no more
        finished hypotheses.

        Args:
            best_alive: float (B,), the log-probability of the best alive
                beam.
            worst_finished: float (B,), the score of the worst kept
                finished hypothesis, `NO_HYPOTHESIS` while a slot is empty.
            length: float, the tokens generated so far.
            limit: float (B,), the most tokens the item may generate.
            alpha: the length-penalty exponent.

        Returns:
            bool (B,).
        """
        raise NotImplementedError

    def __repr__(self):
        return f"<Scoring {self.name!r}>"


class GNMTScoring(Scoring):
    """log p / `length_penalty`, `num_results` finished slots, an exact stop.

    An item is done when no alive beam can beat its worst kept finished
    hypothesis: the best an alive beam can still score is its
    log-probability, which only falls, over the largest length penalty,
    that of the item's limit. The stop is a true bound, so the search is
    exact in it.

    Example:

    >>> gnmt = get_scoring("gnmt")
    >>> gnmt.normalizer(7.0, 1.0), gnmt.finished_slots(1, 4)
    (2.0, 1)
    >>> # an alive beam of log p -1.0 scores at best -1.0 / 2.0 (at limit 7)
    >>> bool(gnmt.is_done(-1.0, -0.45, length=3.0, limit=7.0, alpha=1.0))
    True
    """

    name = "gnmt"

    def normalizer(self, length, alpha):
        return length_penalty(length, alpha)

    def finished_slots(self, num_results, beam_size):
        return num_results

    def is_done(self, best_alive, worst_finished, length, limit, alpha):
        return worst_finished > best_alive / length_penalty(limit, alpha)


class TransformersScoring(Scoring):
    """Hugging Face transformers' beam scoring with `early_stopping=False`.

    log p / n ** alpha; K finished slots (the best `num_results` are
    returned); an item is done once its K slots are full and its best alive
    beam, scored over the tokens generated so far, scores no more than the
    worst finished one (their heuristic, not a bound). The token at an
    item's limit is the end token, as transformers forces it
    (`forced_eos_token_id`, set by Marian's generation configs) at its
    `max_length`.

    Example:

    >>> transformers = get_scoring("transformers")
    >>> transformers.normalizer(4.0, 1.0), transformers.finished_slots(1, 4)
    (4.0, 4)
    >>> # the best alive beam scores -1.0 / 3 > -0.45 at the current length
    >>> bool(transformers.is_done(-1.0, -0.45, length=3.0, limit=7.0, alpha=1.0))
    False
    """

    name = "transformers"
    forces_end_at_limit = True

    def normalizer(self, length, alpha):
        return length**alpha

    def finished_slots(self, num_results, beam_size):
        return beam_size

    def is_done(self, best_alive, worst_finished, length, limit, alpha):
        full = worst_finished > NO_HYPOTHESIS
        return full & (best_alive / self.normalizer(length, alpha) <= worst_finished)


_SCORINGS = {
    scoring.name: scoring for scoring in (GNMTScoring(), TransformersScoring())
}

SCORINGS = tuple(_SCORINGS)
"""The names of the scorings, the values `scoring=` takes."""


def check_scoring(scoring):
    """Raises ValueError unless `scoring` is one of `SCORINGS`.

    Example:

    >>> check_scoring("beam")
    Traceback (most recent call last):
    ...
    ValueError: scoring must be one of ('gnmt', 'transformers'), got 'beam'.
    """
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}.")


def get_scoring(scoring):
    """The `Scoring` called `scoring` (one of `SCORINGS`), or `scoring`
    itself if it is a `Scoring`.

    Example:

    >>> get_scoring("transformers")
    <Scoring 'transformers'>
    >>> get_scoring(GNMTScoring())
    <Scoring 'gnmt'>
    """
    if isinstance(scoring, Scoring):
        return scoring
    check_scoring(scoring)
    return _SCORINGS[scoring]
