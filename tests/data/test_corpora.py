"""Loading corpora by name and from the user's files; nothing is downloaded."""

import tempfile

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_transformer.data import corpora, ding


def as_pairs(dataset):
    return [(s.decode(), t.decode()) for s, t in dataset.as_numpy_iterator()]


def key_set(pairs):
    return {ding.source_key(source) for source, _ in pairs}


# Resolving names and language pairs (metadata only, offline).


WMT = "wmt14_translate/de-en"
TED = "ted_hrlr_translate/pt_to_en"


@pytest.mark.parametrize(
    "name, source, target, expected",
    [
        (WMT, None, None, (WMT, "de", "en")),
        (WMT, "en", "de", (WMT, "en", "de")),
        (WMT, "en", None, (WMT, "en", "de")),
        (WMT, None, "de", (WMT, "en", "de")),
        ("wmt14_translate", "en", "fr", ("wmt14_translate/fr-en", "en", "fr")),
        (TED, None, None, (TED, "pt", "en")),
        ("ted_hrlr_translate", "en", "ru", ("ted_hrlr_translate/ru_to_en", "en", "ru")),
        ("para_crawl", "en", "fr", ("para_crawl/enfr", "en", "fr")),
        ("ding", None, None, ("ding_de_en", "de", "en")),
        ("ding_de_en", "en", "de", ("ding_de_en", "en", "de")),
    ],
)
def test_resolves_names_and_language_pairs(name, source, target, expected, tmp_path):
    resolved = corpora.resolve_language_pair(name, source, target, str(tmp_path))
    assert resolved == expected


@pytest.mark.parametrize(
    "name, source, target, message",
    [
        ("no_such_corpus/de-en", None, None, "Unknown dataset 'no_such_corpus"),
        ("wmt14_translate", None, None, "has several configs.*de-en"),
        ("wmt14_translate", "en", "xx", "no config for the language pair"),
        ("wmt14_translate/xx-yy", None, None, "xx-yy"),
        (WMT, "fr", "en", "no language 'fr'.*de, en"),
        ("ding", "de", "de", "both 'de'"),
        ("mnist", None, None, "Unknown dataset|not a translation"),
    ],
)
def test_bad_names_and_languages_raise_value_error(
    name, source, target, message, tmp_path
):
    with pytest.raises(ValueError, match=message):
        corpora.resolve_language_pair(name, source, target, str(tmp_path))


def test_unprepared_dataset_without_download_says_what_to_do(tmp_path):
    with pytest.raises(
        corpora.CorpusNotFoundError, match=f"tfds build {WMT} --data_dir"
    ):
        corpora.load_translation_corpus(WMT, data_dir=str(tmp_path), download=False)


def test_failed_download_says_what_to_do(tmp_path, monkeypatch):
    calls = []

    def offline(builder, *args, **kwargs):
        calls.append(builder.name)
        raise ConnectionError("no internet")

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", offline)
    with pytest.raises(corpora.CorpusNotFoundError, match="internet") as error:
        corpora.load_translation_corpus(TED, data_dir=str(tmp_path))
    assert calls == ["ted_hrlr_translate"]
    assert isinstance(error.value, FileNotFoundError)
    assert isinstance(error.value.__cause__, ConnectionError)


# The offline Ding corpus: tests/data/test_ding.py loads it by name too.


def test_ding_without_the_dictionary_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(ding, "DING_PATH", str(tmp_path / "de-en"))
    with pytest.raises(FileNotFoundError, match="apt-get install trans-de-en"):
        corpora.load_translation_corpus("ding", data_dir=str(tmp_path / "tfds"))


def test_loading_leaves_no_folders_in_the_temp_dir(tmp_path, monkeypatch):
    temp, data_dir = tmp_path / "temp", str(tmp_path / "tfds")
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    corpus = corpora.load_translation_corpus("ding", data_dir=data_dir)
    assert len(as_pairs(corpus["test"])) > 0
    corpora.resolve_language_pair(TED, data_dir=data_dir)
    with pytest.raises(corpora.CorpusNotFoundError):
        corpora.load_translation_corpus(WMT, data_dir=data_dir, download=False)
    assert [path.name for path in temp.iterdir() if path.is_dir()] == []


# The user's own files.


@pytest.fixture
def parallel_files(tmp_path):
    source = tmp_path / "train.de"
    target = tmp_path / "train.en"
    source.write_text("Guten Morgen.\n\nDanke  schön.\nBitte.\n", encoding="utf-8")
    target.write_text("Good morning.\nHello.\nThank you.\n\n", encoding="utf-8")
    return source, target


def test_reads_two_aligned_files(parallel_files):
    assert corpora.read_parallel_files(*parallel_files) == [
        ("Guten Morgen.", "Good morning."),
        ("Danke schön.", "Thank you."),
    ]
    corpus = corpora.load_text_corpus(*parallel_files)
    assert list(corpus) == ["train"]
    assert as_pairs(corpus["train"])[1] == ("Danke schön.", "Thank you.")


def test_files_with_different_line_counts_raise(parallel_files):
    source, target = parallel_files
    target.write_text("Good morning.\nThank you.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"has 4 lines but .*train.en' has 2"):
        corpora.load_text_corpus(source, target)


def test_unicode_line_separators_inside_a_sentence_keep_files_aligned(tmp_path):
    source, target = tmp_path / "train.de", tmp_path / "train.en"
    source.write_text("Eins.\u2028Zwei.\nDrei.\x0c\nVier.\r\n", encoding="utf-8")
    target.write_text("One. Two.\nThree.\nFour.\n", encoding="utf-8")
    assert corpora.read_parallel_files(source, target) == [
        ("Eins. Zwei.", "One. Two."),
        ("Drei.", "Three."),
        ("Vier.", "Four."),
    ]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("Eins.\x85Zwei.\tOne. Two.\nDrei.\tThree.\n", encoding="utf-8")
    assert corpora.read_tsv(tsv) == [("Eins. Zwei.", "One. Two."), ("Drei.", "Three.")]


def test_a_file_that_is_not_utf8_raises_naming_it(tmp_path, parallel_files):
    latin1 = tmp_path / "latin1.de"
    latin1.write_bytes("Grüße.\nDanke.\nBitte.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.de' is not UTF-8 text .*iconv"):
        corpora.load_text_corpus(latin1, parallel_files[1])


def test_reads_a_tsv_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text(
        "\ufeffGuten Morgen.\tGood morning.\n\nDanke.\tThanks.\r\n", encoding="utf-8"
    )
    assert corpora.read_tsv(path) == [
        ("Guten Morgen.", "Good morning."),
        ("Danke.", "Thanks."),
    ]


def test_tsv_columns_pick_source_and_target(tmp_path):
    path = tmp_path / "tatoeba.tsv"
    path.write_text("Hi.\tHallo.\tCC-BY 2.0 (France)\n", encoding="utf-8")
    assert corpora.read_tsv(path, columns=(1, 0)) == [("Hallo.", "Hi.")]


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
        corpora.load_text_corpus(path)


def test_missing_files_raise_file_not_found(tmp_path, parallel_files):
    with pytest.raises(FileNotFoundError, match="TSV file .*nope.tsv"):
        corpora.load_text_corpus(tmp_path / "nope.tsv")
    with pytest.raises(FileNotFoundError, match="target file .*nope.en"):
        corpora.load_text_corpus(parallel_files[0], tmp_path / "nope.en")


def test_user_files_split_deterministically_by_source(tmp_path):
    lines = [f"Satz {n}.\tSentence {n}." for n in range(500)]
    lines += [f"satz {n}!\tAnother sentence {n}." for n in range(500)]
    path = tmp_path / "pairs.tsv"
    path.write_text("\n".join(lines), encoding="utf-8")
    corpus = corpora.load_text_corpus(path, validation_fraction=0.1, test_fraction=0.1)
    again = corpora.load_text_corpus(path, validation_fraction=0.1, test_fraction=0.1)
    splits = {name: as_pairs(dataset) for name, dataset in corpus.items()}
    assert splits == {name: as_pairs(dataset) for name, dataset in again.items()}
    assert sorted(splits) == ["test", "train", "validation"]
    assert sum(len(pairs) for pairs in splits.values()) == 1000
    assert 60 <= len(splits["validation"]) <= 140
    held_out = key_set(splits["validation"]) | key_set(splits["test"])
    assert not held_out & key_set(splits["train"])


def test_pairs_to_dataset_handles_no_pairs():
    dataset = corpora.pairs_to_dataset([])
    assert int(dataset.cardinality()) == 0
    assert dataset.element_spec[0].dtype == tf.string
