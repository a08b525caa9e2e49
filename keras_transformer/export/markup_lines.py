"""`translate --markup`: each line's tags and placeholders through its translation."""

from keras_transformer.alignment.markup import restore_markup, split_markup
from keras_transformer.alignment.spans import protected_spans, without_spans
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
    goes, once each, so the model must not write them itself. With
    `ban_spans`, a text whose translation holds one of its spans is
    translated again with its spans banned (`Terms(banned=...)`, joined
    with the `terms` given): only those texts, since banned phrases take
    the slower constrained decoding. The spans written anyway (in other
    pieces than the phrase alone, or by an engine that cannot ban
    phrases) are taken out before the markup goes back (`without_spans`),
    and counted.

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
        pairs = list(self.translate([plain for plain, _ in split], **given))
        if self.ban_spans:
            self._ban_written_spans(split, spans, pairs, given)
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

    def _ban_written_spans(self, split, spans, pairs, given):
        """Translates again, with its spans banned, each text whose
        translation in `pairs` holds one; in place."""
        again = [
            index
            for index, ((translation, _), line) in enumerate(
                zip(pairs, spans, strict=True)
            )
            if any(span in translation for span in line)
        ]
        if not again:
            return
        subset = {
            name: [values[i] for i in again]
            for name, values in given.items()
            if values is not None
        }
        terms = subset.get("terms") or [Terms()] * len(again)
        subset["terms"] = [
            given_terms | Terms(banned=dict.fromkeys(spans[i]))
            for given_terms, i in zip(terms, again, strict=True)
        ]
        retranslated = self.translate([split[i][0] for i in again], **subset)
        for index, pair in zip(again, retranslated, strict=True):
            pairs[index] = pair

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
            spans = (
                "1 placeholder or URL that the model wrote itself was"
                if self.spans_removed == 1
                else f"{self.spans_removed} placeholders or URLs that the model "
                "wrote itself were"
            )
            counts.append(f"{spans} taken out (each comes back where the markup goes)")
        return "; ".join(counts) or None
