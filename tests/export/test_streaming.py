"""`keras-transformer translate`: streaming a file through an export."""

import io
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from keras_transformer.cli import main
from keras_transformer.export.streaming import translate_lines


def in_process(translator, texts, beam_size=None, alpha=None):
    if beam_size is None:
        outputs = translator.translate(tf.constant(texts))
    else:
        outputs = translator.beam(
            tf.constant(texts), tf.constant(beam_size), tf.constant(alpha)
        )
    return [text.decode("utf-8") for text in outputs["translation"].numpy()]


@pytest.mark.slow
def test_a_file_streams_in_batches_in_input_order(translator, exported, held_out):
    texts = [source for source, _ in held_out[:7]]
    output = io.StringIO()
    translate_lines(
        exported, (text.encode() + b"\n" for text in texts), output, batch_size=3
    )
    assert output.getvalue().splitlines() == in_process(translator, texts)


@pytest.mark.slow
def test_invalid_utf8_is_replaced_with_a_warning_naming_the_line(
    translator, exported, held_out, capsys
):
    texts = [source for source, _ in held_out[:3]]
    lines = [texts[0].encode(), b"\xff\xfe " + texts[1].encode(), texts[2].encode()]
    output = io.StringIO()
    translate_lines(exported, lines, output, batch_size=2)
    translations = output.getvalue().splitlines()
    assert len(translations) == 3
    assert translations[::2] == in_process(translator, texts[::2])
    assert "line 2 is not valid UTF-8" in capsys.readouterr().err


@pytest.mark.slow
def test_beam_size_and_alpha_default_to_the_exports(translator, exported, held_out):
    texts = [source for source, _ in held_out[:4]]
    for beam_size, alpha in ((2, None), (None, 0.0), (3, 1.5)):
        output = io.StringIO()
        translate_lines(
            exported,
            [t.encode() for t in texts],
            output,
            beam_size=beam_size,
            alpha=alpha,
        )
        expected = in_process(
            translator,
            texts,
            translator.beam_size if beam_size is None else beam_size,
            translator.alpha if alpha is None else alpha,
        )
        assert output.getvalue().splitlines() == expected


@pytest.mark.slow
def test_command_translates_a_file(translator, exported, held_out, tmp_path, capsys):
    texts = [source for source, _ in held_out[:5]]
    path = tmp_path / "sources.txt"
    path.write_text("\n".join(texts) + "\n")
    main(["translate", exported, str(path), "--batch-size", "2"])
    assert capsys.readouterr().out.splitlines() == in_process(translator, texts)


@pytest.mark.slow
@pytest.mark.parametrize(
    "where, message",
    [
        ("model_folder", "holds the versions ["),
        ("missing", "No export at"),
    ],
)
def test_a_wrong_export_path_is_one_line_and_exit_status_1(
    exported, tmp_path, capsys, where, message
):
    path = os.path.dirname(exported) if where == "model_folder" else str(tmp_path)
    path = path if where == "model_folder" else os.path.join(path, "nothing")
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", path, "Hallo"])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith("keras-transformer: error: ") and message in error
    assert error.count("\n") == 1  # one line, no traceback
    with pytest.raises(ValueError if where == "model_folder" else FileNotFoundError):
        main(["--debug", "translate", path, "Hallo"])


def test_a_batch_size_below_1_is_refused(tmp_path):
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        translate_lines(str(tmp_path), [b"Hallo"], io.StringIO(), batch_size=0)


@pytest.mark.slow
def test_the_translate_command_prints_nothing_on_stderr(exported, held_out, tmp_path):
    """TensorFlow's C++ start-up lines are held back (`start_tensorflow`)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    command = [sys.executable, "-m", "keras_transformer.cli", "translate", exported]
    result = subprocess.run(
        [*command, held_out[0][0]], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0 and result.stdout.strip()
    assert result.stderr == ""
    debug = subprocess.run(
        [sys.executable, "-m", "keras_transformer.cli", "--debug", *command[3:]]
        + [held_out[0][0]],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert debug.stdout == result.stdout
    # absl's log lines ("I0000 00:00:..."); which ones depends on the CPU
    # (oneDNN's notice is printed on Intel only) and the CUDA drivers.
    assert re.search(r"^[IWE]\d{4} \d\d:\d\d:\d\d", debug.stderr, re.MULTILINE)


def test_translate_batches_shows_progress_on_a_terminal(monkeypatch, capsys):
    from keras_transformer.export.streaming import signature_texts, translate_batches

    def shout(texts):
        return {"translation": tf.strings.upper(texts)}

    texts = ["a", "b", "c"]
    batches = translate_batches(signature_texts(shout), texts, 2, 3, "Decoding")
    assert list(batches) == [["A", "B", "C"]]
    assert capsys.readouterr().err == ""  # stderr is not a terminal here
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    list(translate_batches(signature_texts(shout), texts, 2, 3, "Decoding"))
    shown = capsys.readouterr().err
    assert "Decoding" in shown and "3/3" in shown


@pytest.mark.slow
def test_command_scores_against_references(exported, held_out, tmp_path, capsys):
    from keras_transformer.evaluation import corpus_scores, format_scores

    sources, references = (list(texts) for texts in zip(*held_out[:20], strict=True))
    references[0] = "z z z"  # one wrong, so that BLEU < 100 and TER > 0
    source_file, reference_file = tmp_path / "sources.txt", tmp_path / "refs.txt"
    source_file.write_text("\n".join(sources) + "\n")
    reference_file.write_text("\n".join(references) + "\n")
    main(["translate", exported, str(source_file), "--reference", str(reference_file)])
    captured = capsys.readouterr()
    scores = corpus_scores(captured.out.splitlines(), references)
    assert 0 < scores["ter"] < 100 and scores["bleu"] < 100
    assert captured.err.strip().endswith(format_scores(scores).strip())
    reference_file.write_text("\n".join(references[:5]) + "\n")
    with pytest.raises(SystemExit):
        main(
            [
                "translate",
                exported,
                str(source_file),
                "--reference",
                str(reference_file),
            ]
        )
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("error: Got 20 hypotheses but 5 references.")
    )


def test_a_window_is_read_sorted_by_length_and_given_back_in_input_order():
    from keras_transformer.export.streaming import translate_batches

    texts = ["x" * length for length in (5, 0, 3, 9, 1, 4, 0, 7)]
    read, calls = [], []

    def source():
        for text in texts:
            read.append(text)
            yield text

    def measure(batch):
        calls.append(([len(text) for text in batch], len(read)))
        return [len(text) for text in batch]

    windows = translate_batches(measure, source(), batch_size=2, window=3)
    first = next(windows)
    assert first == [5, 0, 3] and len(read) == 3  # streams: 3 of 8 texts read
    windows = [first, *windows]
    assert [len(window) for window in windows] == [3, 3, 2]
    assert sum(windows, []) == [len(text) for text in texts]  # one out per in
    assert [lengths for lengths, _ in calls] == [[0, 3], [5], [1, 4], [9], [0, 7]]
    assert [count for _, count in calls] == [3, 3, 6, 6, 8]  # a window ahead, no more
    with pytest.raises(ValueError, match="window must be >= 1, got 0"):
        next(translate_batches(measure, texts, window=0))


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["saved_model", "ctranslate2"])
def test_sorted_windows_translate_as_file_order_does(
    engine, translator, exported, held_out, tmp_path
):
    from keras_transformer.export.ctranslate2_model import export_ctranslate2
    from keras_transformer.export.streaming import (
        translate_batches,
        translation_function,
    )

    path = exported
    if engine == "ctranslate2":
        path = export_ctranslate2(translator, tmp_path / "model")
    texts = [source for source, _ in held_out[:13]]
    texts[2:2] = ["", texts[0][:1]]  # an empty line and a one-letter one
    for signature in ("greedy", "serving_default"):
        translate = translation_function(path, signature)
        in_file_order = translate_batches(translate, texts, batch_size=4, window=4)
        sorted_ = translate_batches(translate, texts, batch_size=4, window=9)
        in_file_order, sorted_ = sum(in_file_order, []), sum(sorted_, [])
        assert sorted_ == in_file_order and len(sorted_) == len(texts)
        assert sorted_[2] == ""


@pytest.mark.parametrize("terminal", [True, False])
def test_a_terminal_gets_each_line_translated_before_the_next_is_read(
    monkeypatch, terminal
):
    from keras_transformer.export import streaming

    calls = []
    monkeypatch.setattr(
        streaming, "translate_lines", lambda *args, **kwargs: calls.append(kwargs)
    )
    stdin = io.TextIOWrapper(io.BytesIO(b"Hallo\n"))
    monkeypatch.setattr(stdin, "isatty", lambda: terminal, raising=False)
    monkeypatch.setattr(sys, "stdin", stdin)
    main(["translate", "export", "-"])
    (kwargs,) = calls
    window = kwargs.get("window", streaming.SORT_WINDOW)
    assert (kwargs["batch_size"], window) == ((1, 1) if terminal else (32, 1000))
