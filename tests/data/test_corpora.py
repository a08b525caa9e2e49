"""Loading corpora by name (TFDS and Ding); nothing is downloaded."""

import tempfile
from concurrent import futures

import pytest
import tensorflow_datasets as tfds

from keras_transformer.data import corpora, ding


def as_pairs(dataset):
    return [(s.decode(), t.decode()) for s, t in dataset.as_numpy_iterator()]


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
    assert list(tmp_path.iterdir()) == []  # no lock file, no folder


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


@pytest.mark.slow
def test_loaders_that_start_at_once_prepare_the_corpus_once(tmp_path):
    """Two loads of an unprepared corpus at once (two runs, the workers of a
    host): the second waits for the first's data instead of failing to
    rename its own into place."""
    data_dir, temp = str(tmp_path / "tfds"), tempfile.gettempdir()

    def load(_):
        corpus = corpora.load_translation_corpus("ding", data_dir=data_dir)
        return as_pairs(corpus["test"])

    with futures.ThreadPoolExecutor(2) as pool:
        first, second = pool.map(load, range(2))
    assert first == second and len(first) > 0
    assert tempfile.gettempdir() == temp  # each thread's swap undone
    versions = [path.name for path in (tmp_path / "tfds" / "ding_de_en").iterdir()]
    assert sorted(versions) == [".1.1.0.lock", "1.1.0"]
