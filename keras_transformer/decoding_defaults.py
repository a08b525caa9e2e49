"""How the package decodes unless told otherwise, in one place.

The library (`decoding.beam_search`, `decoding.decode`, the exported
`Translator`) decodes as the paper does (section 6.1): beam 4, length
penalty alpha 0.6, up to the source length + 50 tokens, and never more
than `MAX_LENGTH` tokens in a source or a translation. The training
recipe (`recipe.settings.EvaluationSection`, so `keras-transformer train`
and the commands that use its runs) searches with alpha `RECIPE_ALPHA`
1.0 instead, on purpose: over the 8 recipe runs scored both ways on the
Ding validation split, 1.0 moved BLEU by -0.13 to +0.37 (+0.09 on
average) and raised chrF in each (docs/history.md, "The recipe
search"). The paper's WMT models keep 0.6 (`--alpha 0.6`).

TensorFlow-free, so that settings and the command line read them too.
"""

import numbers

BEAM_SIZE = 4
ALPHA = 0.6  # the paper's length-penalty exponent
RECIPE_ALPHA = 1.0  # the training recipe's: measured better on its runs
SCORING = "gnmt"
# A translation may have up to its source's length + EXTRA_LENGTH tokens.
EXTRA_LENGTH = 50
# The most tokens in a source (its end id included) and in a translation. A
# run's limit is its `model.max_length` (the recipe's: 64), which the recipe
# and the commands hand to the Translator.
MAX_LENGTH = 256


def decoding_settings(beam_size, alpha, saved):
    """The beam size and alpha to decode with: each given value, else the
    `saved` one (a run's evaluation section, an export's recorded settings).

    The one place the commands settle their beam size and alpha.

    Args:
        beam_size, alpha: what the user asked for, or None.
        saved: a mapping with "beam_size" and "alpha".

    Returns:
        `(beam_size, alpha)`, an int and a float.

    Example:

    >>> decoding_settings(None, 0.6, {"beam_size": 5, "alpha": 1.2})
    (5, 0.6)
    """
    return (
        int(saved["beam_size"] if beam_size is None else beam_size),
        float(saved["alpha"] if alpha is None else alpha),
    )


def is_greedy(beam_size):
    """Whether `beam_size` means greedy decoding: the int 1.

    A tensor always means beam search, whatever its value: inside a
    `tf.function` or `jax.jit` its value is not known when the loop is
    chosen.

    Example:

    >>> is_greedy(1), is_greedy(4), is_greedy(np.array(1))
    (True, False, False)
    """
    return (
        isinstance(beam_size, numbers.Integral)
        and not isinstance(beam_size, bool)
        and beam_size == 1
    )
