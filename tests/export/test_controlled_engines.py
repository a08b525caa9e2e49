"""Prefixes and controls through the one engine interface and the command
line: the SavedModel and the CTranslate2 export, line by line."""

import io
import json

import pytest

from keras_transformer.cli import main
from keras_transformer.export.control_settings import ControlSettings, Terms
from keras_transformer.export.engines import SavedModelEngine, open_export
from keras_transformer.export.long_inputs import LongInputs
from keras_transformer.export.streaming import translate_lines
from tests.fixtures.benchmark_scripts import benchmark_module
from tests.fixtures.reversal import MAX_LENGTH

ctranslate2 = pytest.importorskip("ctranslate2")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ctranslate2_export(translator, tmp_path_factory):
    from keras_transformer.export import export_ctranslate2

    return str(export_ctranslate2(translator, tmp_path_factory.mktemp("ct2") / "m"))


@pytest.fixture(scope="module")
def engines(exported, ctranslate2_export):
    return {
        "saved_model": open_export(exported),
        "ctranslate2": open_export(ctranslate2_export),
    }


@pytest.fixture(scope="module")
def texts(held_out):
    return [source for source, _ in held_out[:10]]


def test_open_export_chooses_the_engine_once(engines):
    assert isinstance(engines["saved_model"], SavedModelEngine)
    assert type(engines["ctranslate2"]).__name__ == "CTranslate2Translator"


def test_both_engines_give_the_same_greedy_text_under_prefixes_and_controls(
    engines, texts, held_out
):
    """Prefixes that end with a space: both force every piece (no healing)."""
    prefixes = [
        " ".join(target.split()[: index % 3]) + (" " if index % 3 else "")
        for index, (_, target) in enumerate(held_out[:10])
    ]
    prefixes[3] = "p  o "  # not the reversal's start, spaced oddly
    settings = [
        ControlSettings(),
        ControlSettings(no_repeat_ngram_size=2, min_length=6),
        ControlSettings(repetition_penalty=1.8, disable_unk=True),
    ]
    for controls in settings:
        results = {
            name: engine.translate(texts, 1, prefixes=prefixes, controls=controls)
            for name, engine in engines.items()
        }
        assert results["saved_model"] == results["ctranslate2"], controls
        for prefix, translation in zip(prefixes, results["saved_model"], strict=True):
            assert translation.startswith(prefix)


def test_terms_are_the_saved_models_and_ctranslate2_refuses_them(engines, texts):
    engine = engines["saved_model"]
    terms = [Terms(required=["k"], banned=["a", "b"])]
    (translation,) = engine.translate(texts[:1], terms=terms)
    assert not {"a", "b"} & set(translation.split()) and "k" in translation.split()
    assert engine.terms_missed == 0
    with pytest.raises(ValueError, match="translate with the SavedModel export"):
        engines["ctranslate2"].translate(texts[:1], terms=[Terms(required=["a"])])


def test_a_split_line_gives_its_prefix_and_terms_to_its_first_part(engines, texts):
    """Banned phrases go with every part."""
    engine = engines["saved_model"]
    calls = []

    def translate(parts, prefixes=None, terms=None):
        calls.append((prefixes, terms))
        return engine.translate(parts, prefixes=prefixes, terms=terms)

    tokenizer, limit = engine.source_limit()
    long_inputs = LongInputs(translate, tokenizer, limit)
    line = " ".join(texts[:5])  # past the limit: split
    terms = Terms(required=["p"], banned=["a"])
    (translation,) = long_inputs([line], prefixes=["k j "], terms=[terms])
    assert translation.startswith("k j ") and "a" not in translation.split()
    prefixes, part_terms = calls[0]
    assert prefixes[0] == "k j " and set(prefixes[1:]) == {""}
    assert part_terms[0] == terms and set(part_terms[1:]) == {Terms(banned=["a"])}


def test_the_command_takes_a_prefix_file_and_the_control_flags(
    exported, ctranslate2_export, texts, tmp_path, capsys
):
    sources, prefixes = tmp_path / "sources.txt", tmp_path / "prefixes.txt"
    sources.write_text("\n".join(texts[:4]) + "\n")
    typed = ["a ", "", "b c ", " ".join(["d"] * (MAX_LENGTH + 3))]
    prefixes.write_text("\n".join(typed) + "\n")
    flags = ["--prefixes", str(prefixes), "--no-repeat-ngram-size", "1"]
    outputs = {}
    for path in (exported, ctranslate2_export):
        main(["translate", path, str(sources), "--signature", "greedy", *flags])
        captured = capsys.readouterr()
        outputs[path] = captured.out.splitlines()
        assert "1 prefixes were longer than the model's limit" in captured.err
        for prefix, line in zip(typed[:3], outputs[path], strict=False):
            assert line.startswith(prefix)
            if not prefix:  # no piece repeats where nothing was forced
                assert len(set(line.split())) == len(line.split())
    assert outputs[exported] == outputs[ctranslate2_export]


def one_line_error(capsys, arguments):
    """The one stderr line of a command that fails with a user error."""
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    assert exit_info.value.code != 0
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith("keras-transformer: error: ")
    return error


def test_n_best_lists_take_prefixes_and_controls_in_both_engines(
    exported, ctranslate2_export, texts, tmp_path, capsys
):
    sources, prefixes = tmp_path / "sources.txt", tmp_path / "prefixes.txt"
    sources.write_text("\n".join(texts[:3]) + "\n")
    prefixes.write_text("a \n\nk j \n")
    for path in (exported, ctranslate2_export):
        arguments = ["translate", path, str(sources), "--n-best", "2"]
        main([*arguments, "--prefixes", str(prefixes), "--disable-unk"])
        lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
        assert [int(index) for index, _, _ in lines] == [0, 0, 1, 1, 2, 2]
        for index, _, hypothesis in lines:
            assert hypothesis.startswith(["a ", "", "k j "][int(index)])


def test_draws_take_prefixes_controls_and_banned_phrases_in_both_engines(
    exported, ctranslate2_export, texts, tmp_path, capsys
):
    sources, prefixes = tmp_path / "sources.txt", tmp_path / "prefixes.txt"
    sources.write_text("\n".join(texts[:3]) + "\n")
    prefixes.write_text("a \n\nk j \n")
    arguments = ["translate", str(sources), "--sampling", "topk:3", "--n-best", "3"]
    flags = ["--prefixes", str(prefixes), "--no-repeat-ngram-size", "1"]
    for path in (exported, ctranslate2_export):
        main([arguments[0], path, *arguments[1:], *flags, "--seed", "1"])
        lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
        assert [int(index) for index, _, _ in lines] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
        for index, _, hypothesis in lines:
            assert hypothesis.startswith(["a ", "", "k j "][int(index)])
            words = hypothesis.split()
            assert len(set(words)) == len(words), hypothesis  # no piece twice
    constraints = tmp_path / "constraints.tsv"
    constraints.write_text("!b\n!b\n!b\n")
    main(
        [
            "translate",
            exported,
            str(sources),
            "--sampling",
            "topk:3",
            "--n-best",
            "3",
            "--constraints",
            str(constraints),
            "--seed",
            "2",
        ]
    )
    for line in capsys.readouterr().out.splitlines():
        assert "b" not in line.split("\t")[2].split(), line
    constraints.write_text("b\n\n\n")
    error = one_line_error(
        capsys,
        [
            "translate",
            exported,
            str(sources),
            "--sampling",
            "topk:3",
            "--constraints",
            str(constraints),
        ],
    )
    assert "need beam search" in error
    glossary = tmp_path / "terms.tsv"
    glossary.write_text("a\tb\n")
    arguments = ["translate", exported, "a b", "--sampling", "topk:3"]
    error = one_line_error(capsys, [*arguments, "--glossary", str(glossary)])
    assert "--glossary's terms are required phrases" in error


def test_a_prefix_file_of_another_length_is_an_error(exported, texts, tmp_path, capsys):
    sources, prefixes = tmp_path / "sources.txt", tmp_path / "prefixes.txt"
    sources.write_text("\n".join(texts[:3]) + "\n")
    prefixes.write_text("a\nb\n")
    arguments = ["translate", exported, str(sources), "--prefixes", str(prefixes)]
    error = one_line_error(capsys, arguments)
    assert "the input has more lines than --prefixes (which ends at line 2)" in error
    constraints = tmp_path / "constraints.tsv"
    constraints.write_text("a\n\n\n\n")
    arguments = ["translate", exported, str(sources), "--constraints", str(constraints)]
    error = one_line_error(capsys, arguments)
    assert "--constraints has more lines than the input (which ends at line 3)" in error


def test_a_constraints_file_requires_and_bans_phrases_per_line(
    exported, tmp_path, capsys
):
    sources, constraints = tmp_path / "sources.txt", tmp_path / "constraints.tsv"
    sources.write_text("a b c\nd e f\ng h i\n")
    constraints.write_text("k\tm n\n\n!h\to\n")
    arguments = ["translate", exported, str(sources), "--constraints", str(constraints)]
    main(arguments)
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert "k" in lines[0] and "m n" in " ".join(lines[0])
    assert lines[1] == ["f", "e", "d"]
    assert "h" not in lines[2] and "o" in lines[2]
    constraints.write_text("k\t!k\n\n\n")
    error = one_line_error(capsys, arguments)
    assert "constraints line 1: 'k' is both required and banned" in error


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--repetition-penalty", "0"], "--repetition-penalty must be > 0"),
        (["--no-repeat-ngram-size", "9"], "--no-repeat-ngram-size must be 0 to 8"),
        (["--min-length", "-1"], "--min-length must be >= 0"),
    ],
)
def test_bad_control_flags_are_named_in_the_error(exported, flags, message, capsys):
    error = one_line_error(capsys, ["translate", exported, "a b c", *flags])
    assert message in error


def test_translate_lines_counts_cut_prefixes_on_stderr(exported, texts, capsys):
    output = io.StringIO()
    prefix = " ".join(["e"] * (MAX_LENGTH + 1)).encode()
    translate_lines(
        exported, [texts[0].encode()], output, prefixes=[prefix], signature="greedy"
    )
    assert output.getvalue().split() == ["e"] * (MAX_LENGTH - 1)
    assert "1 prefixes were longer" in capsys.readouterr().err


def test_the_controls_benchmark_reports_its_rows(exported, held_out, tmp_path, capsys):
    benchmark = benchmark_module("controls")
    texts, references = tmp_path / "texts", tmp_path / "references"
    texts.write_text("".join(source + "\n" for source, _ in held_out[:6]))
    references.write_text("".join(target + "\n" for _, target in held_out[:6]))
    files = ["--texts", str(texts), "--references", str(references)]
    benchmark.main([exported, *files, "--before", exported])
    result = json.loads(capsys.readouterr().out)
    rows = result["rows"]
    for name in ("first_1_words", "first_3_words_last_cut_in_half", "whole_reference"):
        assert rows[name]["begin_with_prefix"] == 1.0
    assert rows["whole_reference"]["equal_to_reference"] == 1.0
    assert rows["whole_reference"]["words"] == sum(
        len(r.split()) for _, r in held_out[:6]
    )

    def untimed(rows):
        return {name: {**row, "seconds": None} for name, row in rows.items()}

    # The same export, measured again: the same outputs.
    assert untimed(result["before"]["rows"]) == untimed(rows)
    for name in ("no_repeat_ngram_size_2", "min_length_12", "disable_unk"):
        assert rows[name]["outputs_failing_the_check"]["with"] == 0, name


def test_a_glossary_puts_its_target_terms_where_its_source_terms_occur(
    exported, ctranslate2_export, tmp_path, capsys
):
    sources, glossary = tmp_path / "sources.txt", tmp_path / "terms.tsv"
    sources.write_text("a b c\nd e f\nA d b\n")
    glossary.write_text("# source\ttarget\nA\tk\n\nd e\tm n\n")
    main(["translate", exported, str(sources), "--glossary", str(glossary)])
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert "k" in lines[0] and "k" in lines[2]  # "a" matches "A", any case
    assert "m" in lines[1] and "n" in lines[1] and "k" not in lines[1]
    assert "m" not in lines[2]  # "d b" is not "d e"
    error = one_line_error(
        capsys,
        ["translate", ctranslate2_export, str(sources), "--glossary", str(glossary)],
    )
    assert "translate with the SavedModel export" in error
    glossary.write_text("a\tk\nb k\n")
    error = one_line_error(
        capsys, ["translate", exported, str(sources), "--glossary", str(glossary)]
    )
    assert "line 2: expected 'source term<TAB>target term'" in error


def test_the_constraints_benchmark_reports_its_rows(
    exported, held_out, tmp_path, capsys
):
    benchmark = benchmark_module("constraints")
    texts, references = tmp_path / "texts", tmp_path / "references"
    texts.write_text("".join(source + "\n" for source, _ in held_out[:8]))
    # Another line's target: words the translation lacks, to draw terms from.
    references.write_text("".join(target + "\n" for _, target in held_out[1:9]))
    arguments = ["--texts", str(texts), "--references", str(references)]
    arguments += ["--min-word-length", "1", "--speed-lines", "2", "--repeats", "1"]
    benchmark.main([exported, *arguments])
    result = json.loads(capsys.readouterr().out)
    quality = result["quality"]
    assert quality["1_required"]["lines"] > 0
    assert quality["1_required"]["term_use"] == 1.0
    assert quality["1_banned"]["still_holding_the_word"] == 0
    assert set(result["speed_seconds"]["beam_4"]) >= {"0_required", "4_required"}
