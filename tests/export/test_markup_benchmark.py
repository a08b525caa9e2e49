"""benchmarks/markup_dictionary.py: a dictionary word in <b>, through
translation; and benchmarks/markup.py's measure of placeholders run into
words."""

import json
import sys

import pytest

from tests.fixtures.benchmark_scripts import benchmark_module
from tests.fixtures.reversal import LETTERS


@pytest.fixture(scope="module")
def script():
    return benchmark_module("markup_dictionary")


def test_one_word_sub_entries_make_the_dictionary(script):
    lines = [
        "# Version :: devel",
        "Haus {n}; Gebäude {n} [arch.] :: house; building | Häuser {pl} :: houses",
        "alt {adj} :: old; aged person",
        "über etw. reden :: to talk about sth.",
        "alt; bejahrt :: elderly",
    ]
    assert script.one_word_translations(lines) == {
        "Haus": {"house", "building"},
        "Gebäude": {"house", "building"},
        "alt": {"old", "elderly"},
        "bejahrt": {"elderly"},
    }


def test_the_longest_dictionary_word_is_wrapped_and_the_text_escaped(script):
    dictionary = {"Haus": {"house"}, "Häuser": {"houses"}, "A": {"a"}}
    assert script.bold_case("A & B: Häuser, Haus.", dictionary) == (
        "A &amp; B: <b>Häuser</b>, Haus.",
        {"houses"},
    )
    assert script.bold_case("Nichts hier.", dictionary) is None


@pytest.mark.parametrize(
    "output, holds, exact, words",
    [
        ("Old <b>houses</b>, here.", True, True, 1),
        ("<b>Old houses</b>.", True, False, 2),
        ("<b>Old</b> Houses.", False, False, 1),
        ("The <b>house &amp; home</b>", True, False, 3),
        ("The <b></b>house.", False, False, 0),
    ],
)
def test_the_bold_span_is_checked_for_the_translation(
    script, output, holds, exact, words
):
    check = script.bold_check(output, {"houses", "house"})
    assert check == {"appears": True, "holds": holds, "exact": exact, "words": words}


@pytest.mark.slow
def test_the_reversal_model_puts_the_tag_around_the_mirrored_word(
    script, exported, held_out, tmp_path, capsys, monkeypatch
):
    """A dictionary that translates each letter by itself: the reversal
    model writes every word back, and its alignments (the mirror) put the
    <b> around the word it came from."""
    dictionary = tmp_path / "dictionary"
    dictionary.write_text(
        "".join(f"{letter} {{n}} :: {letter}\n" for letter in LETTERS)
    )
    sources = tmp_path / "sources"
    sources.write_text("".join(f"{source}\n" for source, _ in held_out[:24]))
    arguments = ["--dictionary", str(dictionary), "--sources", str(sources)]
    monkeypatch.setattr(sys, "argv", ["markup_dictionary.py", exported, *arguments])
    script.main()
    result = json.loads(capsys.readouterr().out)
    assert result["with_a_dictionary_word"] == 24
    assert result["well_formed_outputs"] == 1.0
    assert result["translation_appears"] == 24
    assert result["bold_holds_translation"] >= 0.9
    assert result["bold_is_translation"] >= 0.9


@pytest.mark.parametrize(
    "source, output, glued",
    [
        ("user %s:", "utilisateur %s :", 0),
        ("user %s:", "utilisateur %spour :", 1),  # a word after it
        ("(%d files)", "(%d fichiers)", 0),  # punctuation is not a word
        ("%d files", "%dfichiers, x%d", 2),
        ("name{name}", "nom{name}", 0),  # glued in the source too
        ("<b>%s</b> now", "<b>%s</b>maintenant", 0),  # a tag between
    ],
)
def test_spans_run_into_words_are_counted_by_side(source, output, glued):
    assert benchmark_module("markup").glued_into_words(source, output) == glued
