"""The `align` signature: word alignments of given translations."""

import re
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.alignment import (
    alignment_error_rate,
    format_pharaoh,
    parse_pharaoh,
)
from keras_transformer.cli import main
from keras_transformer.export.aligning import pharaoh_lines
from tests.fixtures.benchmark_scripts import benchmark_module

pytestmark = pytest.mark.slow


def align(signatures, sources, targets):
    outputs = signatures["align"](
        source=tf.constant(sources, tf.string, shape=[len(sources)]),
        target=tf.constant(targets, tf.string, shape=[len(targets)]),
    )
    return {key: value.numpy() for key, value in outputs.items()}


def links_of(lines):
    return [parse_pharaoh(line.decode("ascii"))[0] for line in lines]


def test_a_reversal_aligns_each_word_with_its_mirror(signatures, held_out):
    """The reversal model's last layer attends to the mirrored source word
    (test_translator's attention test): its hard alignments are the mirror."""
    pairs = held_out[:40]
    sources, targets = [list(side) for side in zip(*pairs, strict=True)]
    predicted = links_of(align(signatures, sources, targets)["alignment"])
    mirror = []
    for source in sources:
        n = len(source.split())
        mirror.append({(n - 1 - j, j) for j in range(n)})
    assert alignment_error_rate(predicted, mirror, [set()] * len(mirror)) <= 0.2
    for links, source, target in zip(predicted, sources, targets, strict=True):
        words = np.array(sorted(links)).reshape(-1, 2)
        assert words[:, 0].max() < len(source.split())
        assert words[:, 1].max() < len(target.split())
        assert {j for _, j in links} == set(range(len(target.split())))


def test_each_row_is_aligned_as_alone_and_empty_sides_give_empty_lines(
    translator, held_out
):
    signatures = translator.signatures()
    sources = [source for source, _ in held_out[:4]] + ["", "a b", "\ufffd c"]
    targets = [target for _, target in held_out[:4]] + ["b a", "", "c"]
    batch = align(signatures, sources, targets)["alignment"]
    for row, (source, target) in enumerate(zip(sources, targets, strict=True)):
        assert batch[row] == align(signatures, [source], [target])["alignment"][0]
    assert batch[4] == batch[5] == b""
    assert align(signatures, [], [])["alignment"].shape == (0,)


def test_sizes_that_differ_are_an_error(translator):
    with pytest.raises(tf.errors.InvalidArgumentError, match="sizes differ"):
        align(translator.signatures(), ["a b", "c"], ["b a"])


def test_in_graph_lines_equal_the_library_s():
    links = np.random.default_rng(0).random((6, 5, 4)) < 0.3
    links[2] = False
    lines = pharaoh_lines(tf.constant(links)).numpy()
    assert [line.decode() for line in lines] == [
        format_pharaoh(np.argwhere(row)) for row in links
    ]


def write_lines(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def test_align_command_writes_the_signature_s_lines(
    exported, translator, held_out, tmp_path, capsys
):
    sources = [source for source, _ in held_out[:5]] + [""]
    targets = [target for _, target in held_out[:5]] + ["a"]
    files = [
        write_lines(tmp_path / name, lines)
        for name, lines in (("sources", sources), ("targets", targets))
    ]
    main(["align", exported, *map(str, files), "--batch-size", "2"])
    expected = align(translator.signatures(), sources, targets)["alignment"]
    assert capsys.readouterr().out.splitlines() == [line.decode() for line in expected]


def mirror_links(words):
    return {(words - 1 - j, j) for j in range(words)}


def test_translate_alignments_go_with_each_line_and_a_split_line_s_parts(
    exported, translator, held_out, tmp_path, capsys
):
    """A 10-word line split into parts of 6 and 4 words: each part is
    reversed, and its links stay within it."""
    short = [source for source, _ in held_out if len(source.split()) <= 6]
    texts = short[:4] + ["", "a b c d e f g h i j"]
    inputs = write_lines(tmp_path / "inputs.txt", texts)
    links_file = tmp_path / "out.align"
    main(
        ["translate", exported, str(inputs), "--alignments", str(links_file)]
        + ["--max-input-length", "6"]
    )
    translations = capsys.readouterr().out.splitlines()
    lines = links_file.read_text().splitlines()
    assert len(lines) == len(translations) == len(texts)
    whole = align(translator.signatures(), texts[:5], translations[:5])["alignment"]
    assert lines[:5] == [line.decode() for line in whole]
    assert translations[-1].split() == list("fedcbajihg")
    split_links = parse_pharaoh(lines[-1])[0]
    expected = mirror_links(6) | {(6 + i, 6 + j) for i, j in mirror_links(4)}
    assert alignment_error_rate([split_links], [expected], [set()]) <= 0.2
    assert all((i < 6) == (j < 6) for i, j in split_links)


@pytest.mark.parametrize("flag", [["--alignments", "links.txt"], ["--markup", "xml"]])
def test_alignments_and_markup_do_not_go_with_n_best(exported, flag, capsys):
    with pytest.raises(SystemExit):
        main(["translate", exported, "a b", "--n-best", "2", *flag])
    error = capsys.readouterr().err
    assert "--alignments and --markup go with one translation a line" in error


def test_translate_markup_carries_tags_and_placeholders_through(
    exported, tmp_path, capsys
):
    """The reversal model reverses the plain words; the tags, the void tag
    and the placeholder come back verbatim around and before their words
    (a mirror, mostly), the output well-formed, and a line that is not
    well-formed is translated as it is and counted."""
    texts = ["a <b>b c</b> d e", "f %s g h", '<i class="x">i</i> j<br/>k l', "m <b>n"]
    inputs = write_lines(tmp_path / "inputs.txt", texts)
    main(["translate", exported, str(inputs), "--markup", "xml"])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 4
    for source, line in zip(texts[:3], lines[:3], strict=True):
        ElementTree.fromstring(f"<root>{line}</root>")
        assert sorted(re.findall(r"<[^>]+>|%s", line)) == sorted(
            re.findall(r"<[^>]+>|%s", source)
        )
    plain = re.sub(r"<[^>]+>|%s", " ", lines[1] + " " + lines[0]).split()
    assert plain == ["h", "g", "f", "e", "d", "c", "b", "a"]
    assert "1 line was not well-formed xml and translated as plain text" in (
        captured.err
    )


def test_the_benchmark_scores_every_layer_and_heads_on_a_gold_set(
    translator, held_out, tmp_path
):
    """benchmarks/alignment_quality.py on a gold set of reversals, in the
    Hansards set's layout (1-indexed links): the last layer, whose attention
    is the mirror, scores best."""
    benchmark = benchmark_module("alignment_quality")
    pairs = held_out[:20]
    (tmp_path / "enfr.src-tgt").write_text(
        "".join(f"{source} ||| {target}\n" for source, target in pairs)
    )
    gold = [mirror_links(len(source.split())) for source, _ in pairs]
    (tmp_path / "enfr.gold").write_text(
        "".join(" ".join(f"{i + 1}-{j + 1}" for i, j in links) + "\n" for links in gold)
    )
    translator.model.save(tmp_path / "model.keras")
    translator.tokenizer.save(str(tmp_path / "tokenizer.model"))
    sources, targets, sure, possible = benchmark.read_gold(tmp_path)
    assert sure == gold and possible == [set()] * 20
    loaded = benchmark.load_translator(str(tmp_path / "model.keras"))
    choices, unlinked_left, miscounted = benchmark.model_choices(
        loaded, sources, targets, batch_size=8
    )
    assert miscounted == 0
    its_choice = choices[benchmark._choice(loaded.model.config)]
    assert all(
        left <= every for left, every in zip(unlinked_left, its_choice, strict=True)
    )
    one_pass = {
        *(f"{layer} {heads}" for layer in (0, 1) for heads in range(5)),
        *(f"{layer} head {head}" for layer in (0, 1) for head in range(4)),
    }
    assert set(choices) == one_pass | {f"full {choice}" for choice in one_pass}
    rates = {
        name: alignment_error_rate(links, sure, possible)
        for name, links in choices.items()
    }
    assert rates["1 0"] <= 0.2 and rates["1 0"] < rates["0 0"]


def test_a_full_context_model_aligns_with_the_pass_without_the_causal_mask(
    translator, held_out
):
    """A model whose config says `full_context_alignment` aligns with the
    attention of the pass where each target piece sees the whole target."""
    from keras_transformer.alignment import (
        alignment_attention,
        word_links,
        word_positions,
    )
    from keras_transformer.decoding.forced import teacher_forced_inputs
    from keras_transformer.export import Translator
    from keras_transformer.models.transformer import build_transformer

    config = translator.model.config.replace(full_context_alignment=True)
    model = build_transformer(config)
    model.set_weights(translator.model.get_weights())
    full_context = Translator(model, translator.tokenizer, translator.max_length)
    sources, targets = [list(side) for side in zip(*held_out[:8], strict=True)]
    lines = align(full_context.signatures(), sources, targets)["alignment"]
    source_ids, target_ids, outputs, mask = full_context.forced_inputs(sources, targets)
    attention = model.full_context_cross_attention(
        teacher_forced_inputs(target_ids), outputs, mask
    )
    links = word_links(
        alignment_attention(
            attention, config.alignment_layer_index, config.alignment_heads
        ),
        word_positions(source_ids, full_context.source_piece_roles),
        word_positions(target_ids, full_context.target_piece_roles),
    )
    expected = [format_pharaoh(np.argwhere(row)) for row in np.asarray(links)]
    assert [line.decode() for line in lines] == expected
