"""`keras-transformer translate`: streaming a file through an export."""

import io
import os

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
