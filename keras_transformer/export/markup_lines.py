"""`translate --markup`: each line's tags and placeholders through its translation."""

from keras_transformer.alignment.markup import (
    protected_spans,
    restore_markup,
    split_markup,
    without_spans,
)
from keras_transformer.export.control_settings import Terms


class MarkupTranslation:
    """A translation function that carries each text's markup through.

    Each text is split into its plain text and markup elements
    (`alignment.markup.split_markup`), the plain texts are translated and
    aligned by `translate`, and the elements are put back into each
    translation by its alignment (`restore_markup`). A text whose markup is
    not well-formed is translated as it is, as plain text, and counted
    (`summary`).

    The protected spans (placeholders, URLs) come back where the markup
    goes, once each, so the model must not write them itself: with
    `ban_spans` each text's spans are banned phrases of its translation
    (`Terms(banned=...)`, joined with the `terms` given), and those it
    wrote anyway (in other pieces than the phrase alone, or by an engine
    that cannot ban phrases) are taken out before the markup goes back
    (`without_spans`), and counted.

    Args:
        translate: a function of a list of str (and of keyword arguments
            it passes on) to a `(translation, alignment)` pair per text,
            e.g. `long_inputs_function(..., aligned=True)`.
        mode: "xml" or "html", `split_markup`'s.
        ban_spans: whether `translate` takes `terms` that ban phrases (a
            SavedModel export's engine; a CTranslate2 export's does not).

    Attributes:
        not_well_formed: how many texts so far were translated as plain
            text.
        spans_removed: how many spans the model wrote itself were taken
            out.
    """

    def __init__(self, translate, mode, ban_spans=True):
        split_markup("", mode)  # checks the mode
        self.translate = translate
        self.mode = mode
        self.ban_spans = ban_spans
        self.not_well_formed = self.spans_removed = 0

    def __call__(self, texts, **given):
        split = []
        for text in texts:
            try:
                split.append(split_markup(text, self.mode))
            except ValueError:
                self.not_well_formed += 1
                split.append((text, None))
        spans = [protected_spans(elements or ()) for _, elements in split]
        if self.ban_spans and any(spans):
            banned = [Terms(banned=dict.fromkeys(line)) for line in spans]
            terms = given.get("terms") or [Terms()] * len(texts)
            given["terms"] = [a | b for a, b in zip(terms, banned, strict=True)]
        pairs = self.translate([plain for plain, _ in split], **given)
        results = []
        for (_, elements), line, (translation, alignment) in zip(
            split, spans, pairs, strict=True
        ):
            if elements is not None:
                translation, alignment, removed = without_spans(
                    translation, alignment, line
                )
                self.spans_removed += removed
                translation = restore_markup(
                    translation, elements, alignment, self.mode
                )
            results.append((translation, alignment))
        return results

    def summary(self):
        """The line that counts the texts translated as plain text and the
        spans taken out, or None."""
        counts = []
        if self.not_well_formed:
            count = self.not_well_formed
            lines = "1 line was" if count == 1 else f"{count} lines were"
            counts.append(
                f"{lines} not well-formed {self.mode} and translated as plain "
                "text, markup and all"
            )
        if self.spans_removed:
            counts.append(
                f"{self.spans_removed} placeholders or URLs that the model wrote "
                "itself were taken out (each comes back where the markup goes)"
            )
        return "; ".join(counts) or None
