"""`MarkupTranslation` around a stand-in translation function."""

import pytest

from keras_transformer.export.control_settings import Terms
from keras_transformer.export.markup_lines import MarkupTranslation


def stand_in(outputs):
    """A translate function that returns `outputs[plain text]`, a
    (translation, alignment) pair, and records the keyword arguments it
    got."""
    calls = []

    def translate(texts, **given):
        calls.append(given)
        return [outputs[" ".join(text.split())] for text in texts]

    return translate, calls


@pytest.mark.parametrize("ban_spans", [True, False])
def test_a_line_that_writes_its_spans_is_translated_again_with_them_banned(
    ban_spans,
):
    translate, calls = stand_in(
        {
            "Save to": ("Enregistrer %s dans", "0-0 1-2"),
            "Open": ("Ouvrir", "0-0"),
            "plain text": ("texte", "0-0 1-0"),
        }
    )
    markup = MarkupTranslation(translate, "xml", ban_spans=ban_spans)
    given = [Terms(banned=["fichier"]), Terms(), Terms()]
    results = markup(["Save to %s", "Open <b>{name}</b>", "plain text"], terms=given)
    assert [translation for translation, _ in results] == [
        "Enregistrer dans %s",
        "Ouvrir <b>{name}</b>",
        "texte",
    ]
    assert results[0][1] == "0-0 1-1"  # the alignment of the text left
    assert calls[0]["terms"] == given
    if ban_spans:  # the line whose translation holds its span, again
        assert len(calls) == 2
        assert calls[1]["terms"] == [Terms(banned=["fichier", "%s"])]
    else:
        assert len(calls) == 1
    assert markup.spans_removed == 1
    assert "1 placeholder or URL that the model wrote itself was taken out" in (
        markup.summary()
    )
