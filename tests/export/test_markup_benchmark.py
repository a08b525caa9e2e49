"""benchmarks/markup_dictionary.py: a dictionary word in <b>, through
translation."""

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
    "output, expected",
    [
        ("Old <b>houses</b>, here.", (True, True)),
        ("<b>Old</b> Houses.", (True, False)),
        ("<b>Old</b> buildings.", (False, False)),
        ("The <b>house &amp; home</b>", (True, True)),
    ],
)
def test_the_span_holds_a_translation_when_one_of_its_words_is_one(
    script, output, expected
):
    assert script.span_holds(output, {"houses", "house"}) == expected


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
