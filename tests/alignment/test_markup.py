"""Markup through a translation: well-formed, verbatim, where the words went."""

import collections
import random
import re
import xml.etree.ElementTree as ElementTree

import pytest

from keras_transformer.alignment.markup import (
    PROTECTED,
    restore_markup,
    split_markup,
)

TAGS = ["<b>", '<i class="x">', '<a href="/f?a=1&amp;b=2">', "<span>"]
VOIDS = ["<br/>", '<img src="a.png"/>', "<!-- c -->"]
PLACEHOLDERS = ["%s", "%1$d", "{name}", "{{count}}", "https://x.org/a", "me@x.org"]
WORDS = ["the", "file", "was", "saved.", "AT&amp;T", "to", "(disk)", "«now»!"]


def random_markup(rng, depth=0):
    """A well-formed fragment of words, nested tags, voids and placeholders."""
    parts = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.25 and depth < 3:
            tag = rng.choice(TAGS)
            name = re.match(r"<(\w+)", tag)[1]
            parts.append(f"{tag}{random_markup(rng, depth + 1)}</{name}>")
        elif kind < 0.35:
            parts.append(rng.choice(VOIDS))
        elif kind < 0.45:  # alone, or inside a word: 'name' or (name)
            quotes = rng.choice(["", "", "''", "()"])
            placeholder = rng.choice(PLACEHOLDERS)
            parts.append(f"{quotes[:1]}{placeholder}{quotes[1:]}")
        else:
            parts.append(" ".join(rng.choices(WORDS, k=rng.randint(1, 3))))
    return " ".join(parts)


def markup_counts(text):
    tags = re.findall(r"<[^>]+>", text)
    return collections.Counter(tags), collections.Counter(PROTECTED.findall(text))


@pytest.mark.parametrize("seeds", [range(start, start + 250) for start in (0, 250)])
def test_output_is_well_formed_and_keeps_every_tag_and_placeholder(seeds):
    """Random markup, a translation that shuffles the words, random links:
    the output is well-formed, with every tag and placeholder, and its text
    is the translation's words (no markup glued to one)."""
    for seed in seeds:
        rng = random.Random(seed)
        source = random_markup(rng)
        plain, elements = split_markup(source)
        words = plain.split()
        translation = rng.sample(words, len(words)) + ["extra"] * rng.randint(0, 2)
        links = {
            (i, j)
            for i in range(len(words))
            for j in range(len(translation))
            if rng.random() < 0.3
        }
        output = restore_markup(" ".join(translation), elements, links)
        ElementTree.fromstring(f"<root>{output}</root>")  # well-formed
        assert markup_counts(output) == markup_counts(source), (source, output)
        text = PROTECTED.sub("", re.sub(r"<[^>]+>", "", output))
        expected = [word.replace("&", "&amp;") for word in translation]
        assert text.split() == expected, (source, output)


def test_a_tag_goes_around_the_words_its_words_are_linked_to():
    plain, elements = split_markup('Open <a href="f">the file</a> <b>now</b>.')
    assert plain == "Open the file now."
    # "Öffne jetzt die Datei." : Open-Öffne, the-die, file-Datei, now.-jetzt
    output = restore_markup("Öffne jetzt die Datei.", elements, "0-0 1-2 2-3 3-1")
    assert output == 'Öffne <b>jetzt</b> <a href="f">die Datei</a>.'


@pytest.mark.parametrize(
    "source, translation, links, expected",
    [
        ("Alles <b>Gute</b>!", "All the best!", "0-0 1-2", "All the <b>best</b>!"),
        ('"<b>Datei</b>"', '"file"', "0-0", '"<b>file</b>"'),
        ("<b>Halt!</b>", "Stop!", "0-0", "<b>Stop!</b>"),  # the source's own
        ("<b>(Datei)</b>", "(file)", "0-0", "<b>(file)</b>"),
        ("<b><i>Halt!</i> jetzt</b>", "Stop!", "0-0 1-0", "<b><i>Stop!</i></b>"),
        ("<b><i>Halt</i> jetzt!</b>", "Stop!", "0-0 1-0", "<b><i>Stop</i>!</b>"),
    ],
)
def test_a_tag_leaves_out_the_punctuation_the_source_left_out(
    source, translation, links, expected
):
    """Punctuation glued to a target word stays outside a tag whose source
    text did not start or end with punctuation; tags stay nested."""
    plain, elements = split_markup(source)
    assert restore_markup(translation, elements, links) == expected


def test_protected_spans_and_untranslated_elements_come_back_verbatim():
    source = (
        'Run <code>rm -rf &lt;dir&gt;</code> or <span translate="no">keep '
        "<b>this</b></span> for %1$s at https://x.org/a?b=1."
    )
    plain, elements = split_markup(source)
    assert "rm" not in plain and "keep" not in plain and "%1$s" not in plain
    words = plain.split()
    output = restore_markup(plain, elements, {(i, i) for i in range(len(words))})
    for span in (
        "<code>rm -rf &lt;dir&gt;</code>",
        '<span translate="no">keep <b>this</b></span>',
        "%1$s",
        "https://x.org/a?b=1",
    ):
        assert output.count(span) == 1, span


def test_html_void_elements_need_no_end_tag_and_part_words():
    plain, elements = split_markup("one<br>two <img src=a.png> three", "html")
    assert plain.split() == ["one", "two", "three"]
    output = restore_markup("un deux trois", elements, "0-0 1-1 2-2", "html")
    assert output == "un<br> deux <img src=a.png> trois"


def test_a_placeholder_inside_a_word_goes_inside_its_copy():
    plain, elements = split_markup("Saved '%s' (%d bytes)")
    assert plain.split() == ["Saved", "''", "(", "bytes)"]
    output = restore_markup("Enregistré '' ( octets)", elements, "0-0 1-1 2-2 3-3")
    assert output == "Enregistré '%s' (%d octets)"
    # A word translated otherwise: the placeholder goes before it, a word
    # of its own.
    output = restore_markup("Enregistré « » ( octets)", elements, "0-0 1-1 1-2 2-3")
    assert output == "Enregistré %s « » (%d octets)"


@pytest.mark.parametrize(
    "translation, links, expected",
    [
        (
            "Mot de passe pour l'utilisateur :",
            "0-0 1-3 2-4 3-5",
            "Mot de passe pour l'utilisateur %s:",
        ),
        (
            "Mot de passe pour l'utilisateur :",
            "0-0 1-3 2-4 3-3",
            "Mot de passe %s pour l'utilisateur :",
        ),
    ],
)
def test_a_placeholder_is_glued_only_to_the_text_it_was_glued_to(
    translation, links, expected
):
    """`%s:` keeps its `:` where the colon's copy follows it; placed
    before another word, it stands apart rather than make `%spour`."""
    plain, elements = split_markup("Password for user %s:")
    assert restore_markup(translation, elements, links) == expected


def test_an_empty_element_inside_a_word_wraps_the_word():
    plain, elements = split_markup("Da<b></b>tei <i> </i>speichern")
    assert plain == "Datei  speichern"
    output = restore_markup("file save", elements, "0-0 1-1")
    assert output == "<b>file</b> <i></i>save"


@pytest.mark.parametrize(
    "source, translation, links, expected",
    [
        (
            "Click <b>%s</b> now",
            "Cliquez maintenant",
            "0-0 1-1",
            "Cliquez <b>%s</b> maintenant",
        ),
        ("Open <b>{name}</b>", "Ouvrir", "0-0", "Ouvrir <b>{name}</b>"),
        (
            "<i><b>%s %d</b></i> files",
            "fichiers",
            "0-0",
            "<i><b>%s %d</b></i> fichiers",
        ),
    ],
)
def test_markup_of_no_words_keeps_what_is_within_it(
    source, translation, links, expected
):
    """A tag around placeholders only (gettext's `<b>%s</b>`) comes back
    around them, with their spacing."""
    plain, elements = split_markup(source)
    assert restore_markup(translation, elements, links) == expected


def test_entities_are_text_and_come_back_escaped():
    plain, elements = split_markup("AT&amp;T &lt;3 &eacute;t&eacute;")
    assert plain == "AT&T <3 été" and not elements
    assert restore_markup(plain, elements, "") == "AT&amp;T &lt;3 été"


def test_html_escapes_only_what_would_read_as_markup():
    """A bare `<` or `&` is text in HTML: `<%s>` and `AT&T` stay as written."""
    source = "See <%s> at AT&T, &lt;b&gt; &amp;amp;"
    plain, elements = split_markup(source, "html")
    assert plain == "See <> at AT&T, <b> &amp;"
    output = restore_markup(plain, elements, "0-0 1-1", "html")
    assert output == "See <%s> at AT&T, &lt;b> &amp;amp;"
    split_markup(output, "html")  # well-formed


@pytest.mark.parametrize(
    "source, message",
    [
        ("a <b>c</i>", "</i> where </b> was due"),
        ("a <b>c", "<b> is never closed"),
        ("a </b>", "</b> where no end tag was due"),
        ("<br>x", "<br> is never closed"),  # xml: a void tag must close itself
    ],
)
def test_markup_that_is_not_well_formed_is_an_error_naming_the_tag(source, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        split_markup(source)


def test_an_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="mode must be one of xml, html"):
        split_markup("a", "sgml")
