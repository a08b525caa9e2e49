"""The decoding controls a user sets for all texts of a call: what the
engines (`export.engines`) hand to the SavedModel's controlled signatures
or to CTranslate2's options of the same meaning. TensorFlow-free, so that
the command line checks them before it loads anything.
"""

import dataclasses
import numbers

MAX_NO_REPEAT_NGRAM = 8  # the largest no_repeat_ngram_size a text may ask for


@dataclasses.dataclass(frozen=True)
class ControlSettings:
    """Repetition and length controls; the defaults change nothing.

    Args:
        repetition_penalty: CTRL's (Keskar et al., 2019), as CTranslate2's
            and Hugging Face's: the logit of a piece already generated is
            divided by it where positive, multiplied where negative; > 0.
        no_repeat_ngram_size: no n-gram of this many pieces repeats; 0
            (none) to `MAX_NO_REPEAT_NGRAM`.
        min_length: pieces generated (a prefix's included) before the end
            may come, >= 0; the length limit wins.
        disable_unk: never generate the unknown piece.

    Example:

    >>> ControlSettings(min_length=3).neutral, ControlSettings().neutral
    (False, True)
    >>> ControlSettings(repetition_penalty=0)
    Traceback (most recent call last):
    ...
    ValueError: repetition_penalty must be > 0, got 0.
    """

    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    min_length: int = 0
    disable_unk: bool = False

    def __post_init__(self):
        if not self.repetition_penalty > 0:
            raise ValueError(
                f"repetition_penalty must be > 0, got {self.repetition_penalty}."
            )
        size = self.no_repeat_ngram_size
        if not _is_int(size) or not 0 <= size <= MAX_NO_REPEAT_NGRAM:
            raise ValueError(
                f"no_repeat_ngram_size must be 0 to {MAX_NO_REPEAT_NGRAM}, got {size}."
            )
        if not _is_int(self.min_length) or self.min_length < 0:
            raise ValueError(f"min_length must be >= 0, got {self.min_length}.")

    @property
    def neutral(self):
        """Whether these settings change no translation."""
        return self == ControlSettings()


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class Terms:
    """The phrases of one text's translation that a glossary sets: those
    that must appear and those that must not (target-language text, each
    cut into pieces as a phrase alone).

    Args:
        required: phrases the translation must contain.
        banned: phrases it must not contain.

    Example:

    >>> Terms(required=["Vertrag"], banned=["Kontrakt"]).required
    ('Vertrag',)
    >>> Terms(required=["Vertrag"], banned=[" Vertrag"])
    Traceback (most recent call last):
    ...
    ValueError: 'Vertrag' is both required and banned.
    """

    required: tuple = ()
    banned: tuple = ()

    def __post_init__(self):
        for name in ("required", "banned"):
            phrases = tuple(str(phrase).strip() for phrase in getattr(self, name))
            if "" in phrases:
                raise ValueError(f"A {name} phrase is empty.")
            object.__setattr__(self, name, phrases)
        for phrase in self.required:
            if phrase in self.banned:
                raise ValueError(f"{phrase!r} is both required and banned.")

    def __bool__(self):
        return bool(self.required or self.banned)

    def __or__(self, other):
        """The phrases of both, each once (a ValueError where one is
        required by one and banned by the other)."""
        return Terms(
            required=dict.fromkeys(self.required + other.required),
            banned=dict.fromkeys(self.banned + other.banned),
        )
