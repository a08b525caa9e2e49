"""Loading the user's own parallel text files."""

import pytest
import tensorflow as tf

from keras_transformer.data import ding
from keras_transformer.data.parallel_files import load_text_corpus, pairs_to_dataset
from keras_transformer.data.parallel_text import read_parallel_files, read_tsv


def as_pairs(dataset):
    return [(s.decode(), t.decode()) for s, t in dataset.as_numpy_iterator()]


def key_set(pairs):
    return {ding.source_key(source) for source, _ in pairs}


@pytest.fixture
def parallel_files(tmp_path):
    source = tmp_path / "train.de"
    target = tmp_path / "train.en"
    source.write_text("Guten Morgen.\n\nDanke  schön.\nBitte.\n", encoding="utf-8")
    target.write_text("Good morning.\nHello.\nThank you.\n\n", encoding="utf-8")
    return source, target


def test_reads_two_aligned_files(parallel_files):
    assert read_parallel_files(*parallel_files) == [
        ("Guten Morgen.", "Good morning."),
        ("Danke schön.", "Thank you."),
    ]
    corpus = load_text_corpus(*parallel_files)
    assert list(corpus) == ["train"]
    assert as_pairs(corpus["train"])[1] == ("Danke schön.", "Thank you.")


def test_files_with_different_line_counts_raise(parallel_files):
    source, target = parallel_files
    target.write_text("Good morning.\nThank you.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"has 4 lines but .*train.en' has 2"):
        load_text_corpus(source, target)


def test_unicode_line_separators_inside_a_sentence_keep_files_aligned(tmp_path):
    source, target = tmp_path / "train.de", tmp_path / "train.en"
    source.write_text("Eins.\u2028Zwei.\nDrei.\x0c\nVier.\r\n", encoding="utf-8")
    target.write_text("One. Two.\nThree.\nFour.\n", encoding="utf-8")
    assert read_parallel_files(source, target) == [
        ("Eins. Zwei.", "One. Two."),
        ("Drei.", "Three."),
        ("Vier.", "Four."),
    ]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("Eins.\x85Zwei.\tOne. Two.\nDrei.\tThree.\n", encoding="utf-8")
    assert read_tsv(tsv) == [
        ("Eins. Zwei.", "One. Two."),
        ("Drei.", "Three."),
    ]


def test_a_file_that_is_not_utf8_raises_naming_it(tmp_path, parallel_files):
    latin1 = tmp_path / "latin1.de"
    latin1.write_bytes("Grüße.\nDanke.\nBitte.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.de' is not UTF-8 text .*iconv"):
        load_text_corpus(latin1, parallel_files[1])


def test_reads_a_tsv_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text(
        "\ufeffGuten Morgen.\tGood morning.\n\nDanke.\tThanks.\r\n", encoding="utf-8"
    )
    assert read_tsv(path) == [
        ("Guten Morgen.", "Good morning."),
        ("Danke.", "Thanks."),
    ]


def test_tsv_columns_pick_source_and_target(tmp_path):
    path = tmp_path / "tatoeba.tsv"
    path.write_text("Hi.\tHallo.\tCC-BY 2.0 (France)\n", encoding="utf-8")
    assert read_tsv(path, columns=(1, 0)) == [("Hallo.", "Hi.")]


@pytest.mark.parametrize(
    "second_line, message",
    [
        ("Danke ohne Tab", "line 2: expected at least 2 tab-separated columns"),
        ("\tThanks.", "line 2: empty source or target"),
        ("Danke.\t ", "line 2: empty source or target"),
    ],
)
def test_bad_tsv_lines_raise_with_their_number(tmp_path, second_line, message):
    path = tmp_path / "pairs.tsv"
    path.write_text(f"Hallo.\tHello.\n{second_line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_text_corpus(path)


def test_missing_files_raise_file_not_found(tmp_path, parallel_files):
    with pytest.raises(FileNotFoundError, match="TSV file .*nope.tsv"):
        load_text_corpus(tmp_path / "nope.tsv")
    with pytest.raises(FileNotFoundError, match="target file .*nope.en"):
        load_text_corpus(parallel_files[0], tmp_path / "nope.en")


def test_user_files_split_deterministically_by_source(tmp_path):
    lines = [f"Satz {n}.\tSentence {n}." for n in range(500)]
    lines += [f"satz {n}!\tAnother sentence {n}." for n in range(500)]
    path = tmp_path / "pairs.tsv"
    path.write_text("\n".join(lines), encoding="utf-8")
    corpus = load_text_corpus(path, validation_fraction=0.1, test_fraction=0.1)
    again = load_text_corpus(path, validation_fraction=0.1, test_fraction=0.1)
    splits = {name: as_pairs(dataset) for name, dataset in corpus.items()}
    assert splits == {name: as_pairs(dataset) for name, dataset in again.items()}
    assert sorted(splits) == ["test", "train", "validation"]
    assert sum(len(pairs) for pairs in splits.values()) == 1000
    assert 60 <= len(splits["validation"]) <= 140
    held_out = key_set(splits["validation"]) | key_set(splits["test"])
    assert not held_out & key_set(splits["train"])


def test_pairs_to_dataset_handles_no_pairs():
    dataset = pairs_to_dataset([])
    assert int(dataset.cardinality()) == 0
    assert dataset.element_spec[0].dtype == tf.string
