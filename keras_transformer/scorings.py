"""How beam search scores finished hypotheses and stops, by name.

Here rather than in the decoding package, which needs TensorFlow, so that
a run's settings (which load without it) can name one:
`EvaluationSection.scoring` chooses it for a run, and
`decoding.beam_search(scoring=)` carries it out.

- "gnmt": log p / ((5 + n) / 6) ** alpha; `num_results` finished slots; an
  item is done when no alive beam can beat the worst kept finished one at
  the item's limit (a true bound, so the search is exact in it).
- "transformers": Hugging Face transformers' beam search with
  `length_penalty=alpha` and `early_stopping=False`: log p / n ** alpha; K
  finished slots; an item is done once its K slots are full and its best
  alive beam over the tokens generated so far, `log p / n ** alpha`,
  scores no more than the worst finished one (their heuristic, not a
  bound); a done item takes no more finished hypotheses. The token at an
  item's limit is the end token, as transformers forces it
  (`forced_eos_token_id`, set by Marian's generation configs) at its
  `max_length`. The scoring of imported Marian (OPUS-MT) models.
"""

SCORINGS = ("gnmt", "transformers")


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
