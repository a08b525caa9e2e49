"""Your files streamed by tf.data: the pairs the Python reader reads, less
the held-out ones, found in one read."""

import pytest
import tensorflow as tf

from keras_transformer.data.corpus_scan import (
    held_out_fraction,
    scan_corpus,
    split_pairs,
)
from keras_transformer.data.file_stream import normalise_texts, stream_pairs
from keras_transformer.data.parallel_files import load_parallel_files
from keras_transformer.data.parallel_text import (
    CorpusReader,
    corpus_files,
    normalise,
)


def streamed(scan, **kwargs):
    return [
        (source.decode(), target.decode())
        for source, target in stream_pairs(scan, **kwargs).as_numpy_iterator()
    ]


def read(files):
    return [(source, target) for _, source, target in CorpusReader(files)]


def test_the_stream_normalises_spacing_as_python_does_for_every_character():
    characters = [
        chr(code) for code in range(1, 0x10000) if not 0xD800 <= code < 0xE000
    ]
    texts = [f" a{c}{c}b {c}" for c in characters]
    got = normalise_texts(tf.constant(texts)).numpy()
    wrong = [
        hex(ord(c))
        for c, text, value in zip(characters, texts, got, strict=True)
        if value.decode() != normalise(text)
    ]
    assert wrong == []


TRICKY_LINES = [
    "\ufeffErster Satz.\tFirst sentence.",
    "Zweiter\u00a0 Satz.\r",  # CRLF
    "",
    "  \t  ",
    "Mit\u2028Trenner.\tWith\u3000separator.\textra column",
    "Tab am Ende.\tTab at the end.\t",
    "Null\u200bBreite.\tZero\u200bwidth.",
]


@pytest.mark.parametrize("layout", ["tsv", "two files"])
def test_the_stream_reads_the_pairs_the_python_reader_reads(tmp_path, layout):
    if layout == "tsv":
        lines = [
            line if "\t" in line or not line.strip() else f"{line}\tx"
            for line in TRICKY_LINES
        ]
        path = tmp_path / "pairs.tsv"
        path.write_bytes("\n".join(lines * 30).encode())
        files = (str(path),)
    else:
        sources = [line.split("\t")[0] for line in TRICKY_LINES]
        targets = [
            line.split("\t")[-1] if "\t" in line else "" for line in TRICKY_LINES
        ]
        files = (str(tmp_path / "train.de"), str(tmp_path / "train.en"))
        for name, side in zip(files, (sources, targets), strict=True):
            with open(name, "wb") as file:
                file.write("\n".join(side * 30).encode() + b"\n")
    scan = scan_corpus([files], {}, sample_size=0)
    expected = read(files)
    assert streamed(scan) == expected and len(expected) == scan.training_pairs
    assert scan.dropped == (0 if layout == "tsv" else 4 * 30)  # no target, blank


def write_tsv(path, rows):
    path.write_text("".join(f"{source}\t{target}\n" for source, target in rows))
    return str(path)


def test_one_read_holds_out_what_split_pairs_holds_out_of_the_whole(tmp_path):
    """Above 40,000 pairs the share shrinks as pairs are read; the one read
    must still hold out exactly what splitting the whole list holds out."""
    rows = [(f"Satz {n} hier.", f"Sentence {n} here.") for n in range(60_000)]
    path = write_tsv(tmp_path / "pairs.tsv", rows)
    scan = scan_corpus([(path,)], {"validation": None, "test": None}, sample_size=1000)
    fraction = held_out_fraction(len(rows))
    expected = split_pairs(rows, fraction, fraction)
    assert scan.fractions == {"validation": fraction, "test": fraction}
    assert scan.held_out == {
        "validation": expected["validation"],
        "test": expected["test"],
    }
    assert scan.training_pairs == len(expected["train"])
    assert streamed(scan) == expected["train"]
    assert len(scan.sample) == 1000 and scan.sampled
    assert set(scan.sample) <= set(expected["train"])


def test_several_corpora_by_pattern_are_interleaved_each_pair_once(tmp_path):
    parts = [
        [(f"Teil {part} Satz {n}.", f"Part {part} sentence {n}.") for n in range(300)]
        for part in range(3)
    ]
    for part, rows in enumerate(parts):
        write_tsv(tmp_path / f"train-{part}.tsv", rows)
    splits, scan = load_parallel_files(
        [str(tmp_path / "train-*.tsv")],
        [str(tmp_path / "train-0.tsv")],
        [str(tmp_path / "train-1.tsv")],
        seed=3,
    )
    pairs = [
        (source.decode(), target.decode())
        for source, target in splits["train"].as_numpy_iterator()
    ]
    assert len(scan.corpora) == 3 and int(splits["train"].cardinality()) == 900
    assert sorted(pairs) == sorted(sum(parts, []))
    assert pairs != sum(parts, [])  # interleaved, not one file after another


def test_source_and_target_patterns_must_pair_up(tmp_path):
    for name in ("a.de", "b.de", "a.en"):
        (tmp_path / name).write_text("x\n")
    with pytest.raises(ValueError, match=r"matches 2 files but .* matches 1"):
        corpus_files((str(tmp_path / "*.de"), str(tmp_path / "*.en")))
    with pytest.raises(FileNotFoundError, match=r"No TSV file matches"):
        corpus_files((str(tmp_path / "*.tsv"),))


def test_a_line_that_is_not_utf8_is_named_with_its_file_and_line(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes("Ja.\tYes.\nNein.\tNo.\nGrüße.\tRegards.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"pairs.tsv' is not UTF-8 text \(line 3"):
        scan_corpus([(str(path),)], {})
