"""Splitting Ding pairs, on hand-written lines and on the installed dictionary.

The installed-dictionary tests need `apt-get install trans-de-en`; without it
they fail (CI installs it), they do not skip.
"""

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from examples import write_ding_files
from keras_transformer.data import (
    corpora,
    dataset_to_lists,
    ding,
    load_ding_pairs,
    load_parallel_files,
)
from keras_transformer.data.ding_parser import is_sentence
from keras_transformer.data.tfds_ding import DingDeEn

SENTENCE_SPLITS = ("train", "validation", "test")


@pytest.fixture(scope="module")
def pairs():
    return ding.load_ding_pairs()


@pytest.fixture(scope="module")
def ding_data_dir(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("tfds")
    DingDeEn(data_dir=str(data_dir)).download_and_prepare()
    return str(data_dir)


def keys(pairs):
    return {ding.source_key(source) for source, _ in pairs}


# Splitting hand-written lines.


def test_variants_of_held_out_sentences_stay_out_of_training():
    lines = [
        f"Das ist Satz {n}.; Hier ist Satz {n}. :: This is sentence {n}."
        for n in range(300)
    ]  # each variant is also a sentence of its own, split by its own hash:
    lines += [f"Hier ist Satz {n}. :: Here is sentence {n}." for n in range(300)]
    splits = ding.split_ding_lines(lines, validation_fraction=0.2, test_fraction=0.2)

    def in_train(n):
        return all(
            ding.assign_split(f"{word} ist Satz {n}.", 0.2, 0.2) == "train"
            for word in ("Das", "Hier")
        )

    expected = [(f"Hier ist Satz {n}.", f"This is sentence {n}.") for n in range(300)]
    assert splits["variants"] == [
        pair for n, pair in enumerate(expected) if in_train(n)
    ]
    assert 50 < len(splits["variants"]) < 200  # some kept, some left out


def test_source_key_ignores_case_spacing_and_final_punctuation():
    assert ding.source_key("Er  kommt!") == ding.source_key("er kommt.")
    assert ding.source_key("Er kommt.") != ding.source_key("Er kommt nicht.")


def test_assign_split_is_stable_and_proportional():
    sources = [f"Satz Nummer {number}." for number in range(4000)]
    splits = [ding.assign_split(source) for source in sources]
    assert splits == [ding.assign_split(source) for source in sources]
    assert 0.87 < splits.count("train") / 4000 < 0.93
    assert 0.03 < splits.count("validation") / 4000 < 0.07
    assert 0.03 < splits.count("test") / 4000 < 0.07


@pytest.mark.parametrize("validation, test", [(-0.1, 0.1), (0.6, 0.5)])
def test_assign_split_rejects_bad_fractions(validation, test):
    with pytest.raises(ValueError, match="fraction"):
        ding.assign_split("Er kommt.", validation, test)


def test_one_source_with_several_translations_stays_in_one_split():
    lines = [f"Das ist Satz {n}. :: This is sentence {n}." for n in range(300)]
    lines += [f"Das ist Satz {n}! :: Here is sentence {n}!" for n in range(300)]
    lines += [f"das ist Satz {n} :: this is sentence {n}" for n in range(300)]
    splits = ding.split_ding_lines(lines, validation_fraction=0.2, test_fraction=0.2)
    assert sum(len(splits[split]) for split in SENTENCE_SPLITS) == 600
    held_out = keys(splits["validation"]) | keys(splits["test"])
    assert held_out and not held_out & keys(splits["train"])
    assert not keys(splits["validation"]) & keys(splits["test"])
    assert splits["phrases"] == []  # same keys as sentences


def test_duplicate_pairs_are_kept_once():
    line = "Er kam gestern an. :: He arrived yesterday."
    splits = ding.split_ding_lines([line, line])
    assert sum(len(splits[split]) for split in SENTENCE_SPLITS) == 1


def test_missing_file_says_what_to_install(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install trans-de-en"):
        ding.load_ding_pairs(tmp_path / "de-en")


# The installed dictionary.


def test_counts_are_in_the_expected_range(pairs):
    sentences = sum(len(pairs[split]) for split in SENTENCE_SPLITS)
    assert 15_000 <= sentences <= 22_000
    assert 50_000 <= len(pairs["phrases"]) <= 110_000
    assert 1_000 <= len(pairs["variants"]) <= 4_000


def test_splits_have_the_expected_proportions(pairs):
    total = sum(len(pairs[split]) for split in SENTENCE_SPLITS)
    assert 0.88 < len(pairs["train"]) / total < 0.92
    assert 0.04 < len(pairs["validation"]) / total < 0.06
    assert 0.04 < len(pairs["test"]) / total < 0.06


def test_no_held_out_source_is_in_train_phrases_or_variants(pairs):
    held_out = keys(pairs["validation"]) | keys(pairs["test"])
    assert not held_out & keys(pairs["train"])
    assert not held_out & keys(pairs["phrases"])
    assert not held_out & keys(pairs["variants"])
    assert not keys(pairs["validation"]) & keys(pairs["test"])


def test_every_pair_follows_the_rule(pairs):
    for split in SENTENCE_SPLITS:
        for german, english in pairs[split]:
            assert is_sentence(german) and is_sentence(english)
            for text in (german, english):
                assert not set("{}[]<>") & set(text), text
                assert text == " ".join(text.split()), text
    for german, english in pairs["variants"]:
        assert is_sentence(german) and is_sentence(english)
    for german, english in pairs["phrases"]:
        assert len(german.split()) >= 2 and len(english.split()) >= 2


def test_pairs_are_unique(pairs):
    everything = [pair for split in ding.SPLITS for pair in pairs[split]]
    assert len(everything) == len(set(everything))


def test_loading_is_deterministic(pairs):
    lines = ding.read_ding_lines()
    assert ding.split_ding_lines(lines) == pairs
    assert ding.load_ding_pairs() == pairs


def test_lines_end_only_at_line_ends(tmp_path):
    path = tmp_path / "de-en"
    path.write_text(
        "# comment\nEr sagte\u2028Ja. :: He said\u2028yes.\r\nA\x0cB :: C\n",
        encoding="utf-8",
        newline="",
    )
    assert ding.read_ding_lines(path) == [
        "# comment",
        "Er sagte\u2028Ja. :: He said\u2028yes.",
        "A\x0cB :: C",
    ]
    path.write_bytes("Grüße :: greetings\n".encode("latin-1"))
    with pytest.raises(ValueError, match="is not UTF-8 text"):
        ding.read_ding_lines(path)


def test_tfds_builder_gives_the_same_pairs(pairs, ding_data_dir):
    test = tfds.load("ding_de_en", split="test", data_dir=ding_data_dir)
    assert [
        (example["de"].decode(), example["en"].decode())
        for example in tfds.as_numpy(test)
    ] == pairs["test"]
    builder = tfds.builder("ding_de_en", data_dir=ding_data_dir)
    assert builder.info.supervised_keys == ("de", "en")
    assert {
        split: info.num_examples for split, info in builder.info.splits.items()
    } == {split: len(pairs[split]) for split in ding.SPLITS}


def test_tfds_builder_loads_supervised_pairs(pairs, ding_data_dir):
    validation = tfds.load(
        "ding_de_en", split="validation", data_dir=ding_data_dir, as_supervised=True
    )
    german, english = next(iter(validation))
    assert (german.numpy().decode(), english.numpy().decode()) == pairs["validation"][0]


def as_pairs(dataset):
    return [(s.decode(), t.decode()) for s, t in dataset.as_numpy_iterator()]


def test_load_translation_corpus_by_name_gives_the_same_pairs(pairs, ding_data_dir):
    corpus = corpora.load_translation_corpus(
        "ding", splits=("test", "train+phrases"), data_dir=ding_data_dir
    )
    assert as_pairs(corpus["test"]) == pairs["test"]
    train_and_phrases = len(pairs["train"]) + len(pairs["phrases"])
    assert int(corpus["train+phrases"].cardinality()) == train_and_phrases
    spec = corpus["test"].element_spec
    assert spec == (tf.TensorSpec((), tf.string), tf.TensorSpec((), tf.string))


def test_load_translation_corpus_in_the_other_direction(pairs, ding_data_dir):
    corpus = corpora.load_translation_corpus(
        "ding", "en", "de", splits=("validation",), data_dir=ding_data_dir
    )
    assert as_pairs(corpus["validation"]) == [
        (english, german) for german, english in pairs["validation"]
    ]


def test_ding_written_as_files_reads_back_as_a_files_corpus(tmp_path):
    folder = tmp_path / "ding"
    write_ding_files.main([str(folder), "--train-share", "0.1"])
    splits, scan = load_parallel_files(
        [folder / "train.de", folder / "train.en"],
        [folder / "valid.de", folder / "valid.en"],
        [folder / "test.de", folder / "test.en"],
    )
    assert scan.fractions == {}
    ding = load_ding_pairs()
    assert int(splits["train"].cardinality()) == round(0.1 * len(ding["train"]))
    assert dataset_to_lists(splits["test"]) == tuple(
        map(list, zip(*ding["test"], strict=True))
    )
