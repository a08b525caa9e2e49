"""The Ding line parser on hand-written lines."""

import pytest

from keras_transformer.data.ding_parser import (
    clean,
    first_variant,
    parse_line,
    parse_phrases,
    parse_variants,
)


def test_pairs_aligned_sub_entries_one_to_one():
    line = (
        "Hobby {n} | Hobbys {pl} | Sein Hobby ist Angeln. | Das ist mein Hobby. :: "
        "hobby | hobbies | His hobby is fishing. | That is my hobby."
    )
    assert parse_line(line) == [
        ("Sein Hobby ist Angeln.", "His hobby is fishing."),
        ("Das ist mein Hobby.", "That is my hobby."),
    ]


def test_skips_lines_whose_sides_do_not_align():
    line = "Er kam gestern an. | Sie ging heute. :: He arrived yesterday."
    assert parse_line(line) == []
    assert parse_phrases(line) == []


@pytest.mark.parametrize(
    "line",
    [
        "# Er kam gestern an. :: He arrived yesterday.",
        "",
        "Er kam gestern an.",
        "Er kam an. :: He came. :: Er kam.",
    ],
)
def test_skips_comments_and_malformed_lines(line):
    assert parse_line(line) == []


def test_removes_notes_in_braces_brackets_parentheses_and_angles():
    line = (
        "Er hat (schon wieder) blau gemacht. [ugs.] :: "
        "He  skipped work <skived off> (again). [coll.] [Br.]"
    )
    assert parse_line(line) == [("Er hat blau gemacht.", "He skipped work.")]


def test_removes_nested_parentheses_and_abbreviations():
    assert clean("Bis später! /SYL/ (Abschied (mündlich))") == "Bis später!"


def test_normalises_apostrophes_and_spacing():
    line = "Ich hab’s  gesehen . :: I’ve seen it ."
    assert parse_line(line) == [("Ich hab's gesehen.", "I've seen it.")]


def test_takes_the_first_variant_on_each_side():
    line = (
        "Sonst noch jemand da?; Noch jemand? :: Anyone else there?; Anybody else here?"
    )
    assert parse_line(line) == [("Sonst noch jemand da?", "Anyone else there?")]


def test_ignores_variant_separators_inside_brackets():
    assert first_variant("Er gab auf (ganz; sofort).; Er gab.") == (
        "Er gab auf (ganz; sofort)."
    )


@pytest.mark.parametrize(
    "german, english, reason",
    [
        ("Gute Besserung!", "Get well soon!", "two words"),
        ("er kam gestern an.", "He arrived yesterday.", "lower-case start"),
        ("Er kam gestern an", "He arrived yesterday.", "no final punctuation"),
        ("Wehe dem, der …!", "Woe betide anyone who …!", "placeholder"),
        ("Die Kurse geben nach / ziehen an.", "Prices soften / harden.", "/ "),
        ("Deine Frage {sing} ist schwer.", "Your question is hard.", "grammar tag"),
    ],
)
def test_rejects_what_is_not_a_sentence(german, english, reason):
    assert parse_line(f"{german} :: {english}") == [], reason


def test_accepts_questions_exclamations_and_digits():
    line = (
        "Was machst du da? | Komm sofort her! | 3 Leute kamen. :: "
        "What are you doing? | Come here now! | 3 people came."
    )
    assert len(parse_line(line)) == 3


def test_phrases_are_the_other_multi_word_pairs():
    line = (
        "Abend {m} | Guten Abend! | am späten Abend | Er kam am Abend. :: "
        "evening | Good evening! | late in the evening | He came in the evening."
    )
    assert parse_phrases(line) == [
        ("Guten Abend!", "Good evening!"),
        ("am späten Abend", "late in the evening"),
    ]


def test_variants_are_the_other_pairings_of_sentence_variants():
    line = (
        "Abend {m} | Guten Abend!; Abend! | Er kam am Abend.; Er kam spät. :: "
        "evening | Good evening! | He came in the evening.; He came late.; late"
    )
    assert parse_line(line)[-1] == ("Er kam am Abend.", "He came in the evening.")
    assert parse_variants(line) == [  # "late" and "Abend!" are no sentences
        ("Er kam am Abend.", "He came late."),
        ("Er kam spät.", "He came in the evening."),
        ("Er kam spät.", "He came late."),
    ]
