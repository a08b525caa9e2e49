"""`translate --markup`: each line's tags and placeholders through its translation."""

from keras_transformer.alignment.markup import restore_markup, split_markup


class MarkupTranslation:
    """A translation function that carries each text's markup through.

    Each text is split into its plain text and markup elements
    (`alignment.markup.split_markup`), the plain texts are translated and
    aligned by `translate`, and the elements are put back into each
    translation by its alignment (`restore_markup`). A text whose markup is
    not well-formed is translated as it is, as plain text, and counted
    (`summary`).

    Args:
        translate: a function of a list of str (and of keyword arguments
            it passes on) to a `(translation, alignment)` pair per text,
            e.g. `long_inputs_function(..., aligned=True)`.
        mode: "xml" or "html", `split_markup`'s.

    Attributes:
        not_well_formed: how many texts so far were translated as plain
            text.
    """

    def __init__(self, translate, mode):
        split_markup("", mode)  # checks the mode
        self.translate = translate
        self.mode = mode
        self.not_well_formed = 0

    def __call__(self, texts, **given):
        split = []
        for text in texts:
            try:
                split.append(split_markup(text, self.mode))
            except ValueError:
                self.not_well_formed += 1
                split.append((text, None))
        pairs = self.translate([plain for plain, _ in split], **given)
        return [
            (
                translation
                if elements is None
                else restore_markup(translation, elements, alignment, self.mode),
                alignment,
            )
            for (_, elements), (translation, alignment) in zip(
                split, pairs, strict=True
            )
        ]

    def summary(self):
        """The line that counts the texts translated as plain text, or None."""
        if not self.not_well_formed:
            return None
        count = self.not_well_formed
        lines = "1 line was" if count == 1 else f"{count} lines were"
        return (
            f"{lines} not well-formed {self.mode} and translated as plain text, "
            "markup and all"
        )
