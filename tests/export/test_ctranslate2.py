"""The CTranslate2 export: the Translator's translations, from the command line too.

Greedy decoding, and beam search at alpha 0 (where CTranslate2's length
penalty, length ** alpha, and ours, ((5 + length) / 6) ** alpha, coincide),
give the in-process `Translator`'s translations: for the session's trained
post-norm model with shared embeddings, and for pre-norm and
separate-embedding variants trained for 200 steps, whose beams often differ
from greedy decoding.
"""

import io
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.cli import main
from keras_transformer.data.pipeline import truncate_with_end_id
from keras_transformer.export import (
    CTranslate2Translator,
    Translator,
    export_ctranslate2,
)
from keras_transformer.export.ctranslate2_model import import_ctranslate2
from keras_transformer.export.streaming import translate_lines
from keras_transformer.recipe.run_directory import RunDirectory
from keras_transformer.special_ids import START_ID
from tests.fixtures.reversal import (
    LETTERS,
    MAX_LENGTH,
    reversal_pairs,
    reversal_translator,
)

SUBPROCESS_TIMEOUT = 180
VARIANTS = {
    "pre_norm_shared": {"norm_first": True},
    "post_norm_separate": {"shared_embeddings": False},
    "pre_norm_separate": {"norm_first": True, "shared_embeddings": False},
}
BAD_LINES = [
    b"",
    b" \t  ",
    " ".join(LETTERS * 3).encode(),  # 48 pieces, cut to MAX_LENGTH - 1
    b"\xff\xfe c \xc3 d \xed\xa0\x80 e",
    "z \u00e4 \u4e2d \U0001f642 a".encode(),  # unknown pieces
    b"a\x00b c",
]


def in_process(translator, texts, beam_size, alpha):
    """The translations of the in-process `Translator`, as str."""
    texts = tf.constant(texts)
    if beam_size == 1:
        outputs = translator.greedy(texts)
    else:
        outputs = translator.beam(texts, tf.constant(beam_size), tf.constant(alpha))
    return [text.decode("utf-8") for text in outputs["translation"].numpy()]


@pytest.fixture(scope="module", params=["post_norm_shared", *VARIANTS])
def variant(request, translator, tmp_path_factory):
    """A translator (the session's, or a variant) and its CTranslate2 export's path."""
    if request.param in VARIANTS:
        # Keras draws initializer and dropout seeds from Python's generator.
        random.seed(0)
        translator = reversal_translator(
            translator.tokenizer,
            reversal_pairs(10000, seed=0),
            epochs=2,
            warmup_steps=100,
            **VARIANTS[request.param],
        )
    config = translator.model.config
    assert request.param.startswith("pre" if config.norm_first else "post")
    assert request.param.endswith("shared" if config.shared_embeddings else "separate")
    path = tmp_path_factory.mktemp("ctranslate2") / request.param
    return translator, export_ctranslate2(translator, path)


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [1, 4])
def test_greedy_and_beam_at_alpha_0_translate_as_the_translator(
    variant, held_out, beam_size
):
    translator, path = variant
    texts = [source for source, _ in held_out[:100]]
    expected = in_process(translator, texts, beam_size, 0.0)
    assert CTranslate2Translator(path).translate(texts, beam_size, 0.0) == expected


@pytest.mark.slow
def test_each_source_keeps_its_own_length_limit(translator, held_out, tmp_path):
    # Untrained, a model translates up to its limits, here 2 + the source
    # lengths (4 to 9), which one CTranslate2 call per batch would not keep.
    random.seed(0)
    model = kt.build_transformer(translator.model.config)
    short = Translator(
        model, translator.tokenizer, extra_length=2, max_length=translator.max_length
    )
    exported = CTranslate2Translator(export_ctranslate2(short, tmp_path / "model"))
    texts = [source for source, _ in held_out[:20]]
    for beam_size in (1, 4):
        expected = in_process(short, texts, beam_size, 0.0)
        assert exported.translate(texts, beam_size, 0.0) == expected


@pytest.mark.slow
def test_log_probabilities_of_references_agree(variant, held_out):
    translator, path = variant
    exported = CTranslate2Translator(path)
    sources, targets = (list(texts) for texts in zip(*held_out[:20], strict=True))
    source_ids = translator.source_ids(tf.constant(sources))  # (B, S)
    target_ids = truncate_with_end_id(
        translator.tokenizer.tokenize(targets), MAX_LENGTH
    ).to_tensor()  # (B, T), the end id included
    decoder_inputs = tf.concat(
        [tf.fill([len(targets), 1], START_ID), target_ids[:, :-1]], axis=1
    )  # (B, T)
    logits = translator.model(
        {"encoder_inputs": source_ids, "decoder_inputs": decoder_inputs}
    )  # (B, T, V)
    expected = tf.gather(tf.nn.log_softmax(logits), target_ids, batch_dims=2)
    results = exported.translator.score_batch(
        [exported.tokenizer.encode(text, out_type=str) for text in sources],
        [exported.tokenizer.encode(text, out_type=str) for text in targets],
    )
    for result, row in zip(results, expected.numpy(), strict=True):
        np.testing.assert_allclose(
            result.log_probs, row[: len(result.log_probs)], atol=1e-4
        )


@pytest.mark.slow
def test_export_writes_a_model_folder_once(translator, tmp_path):
    path = export_ctranslate2(translator, tmp_path / "model")
    assert sorted(os.listdir(tmp_path)) == ["model"]  # no staging folder left
    assert {"model.bin", "config.json", "shared_vocabulary.json"} <= set(
        os.listdir(path)
    )
    with open(os.path.join(path, "tokenizer.model"), "rb") as file:
        assert file.read() == translator.tokenizer.model
    with open(os.path.join(path, "decoding.json")) as file:
        assert json.load(file) == {
            "beam_size": 4,
            "alpha": 0.6,
            "extra_length": 50,
            "max_length": MAX_LENGTH,
        }
    with open(os.path.join(path, "config.json")) as file:
        config = json.load(file)
    assert config["layer_norm_epsilon"] == translator.model.config.layer_norm_epsilon
    assert (config["decoder_start_token"], config["eos_token"]) == ("<s>", "</s>")
    assert config["add_source_eos"] and not config["add_source_bos"]
    with pytest.raises(FileExistsError, match="exists; pass another folder"):
        export_ctranslate2(translator, path)
    with pytest.raises(ValueError, match="int4 is not a valid quantization"):
        export_ctranslate2(translator, tmp_path / "int4", "int4")
    assert sorted(os.listdir(tmp_path)) == ["model"]


@pytest.mark.slow
def test_int8_loads_and_translates(translator, held_out, tmp_path):
    float32 = export_ctranslate2(translator, tmp_path / "float32")
    int8 = export_ctranslate2(translator, tmp_path / "int8", "int8")
    sizes = [
        os.path.getsize(os.path.join(path, "model.bin")) for path in (float32, int8)
    ]
    assert sizes[1] < sizes[0] / 2
    pairs = held_out[:100]
    translations = CTranslate2Translator(int8).translate([s for s, _ in pairs])
    exact = [
        text == target for text, (_, target) in zip(translations, pairs, strict=True)
    ]
    assert np.mean(exact) >= 0.9


@pytest.mark.slow
def test_lines_follow_the_translators_input_rules(
    translator, held_out, tmp_path, capsys
):
    path = export_ctranslate2(translator, tmp_path / "model")
    lines = [source.encode() for source, _ in held_out[:3]] + BAD_LINES
    output = io.StringIO()
    translate_lines(
        path, lines, output, batch_size=4, signature="greedy", long_inputs="truncate"
    )
    texts = [line.decode("utf-8", errors="replace") for line in lines]
    assert output.getvalue().split("\n") == [*in_process(translator, texts, 1, 0.0), ""]
    assert output.getvalue().split("\n")[3:5] == ["", ""]
    err = capsys.readouterr().err
    assert "line 7 is not valid UTF-8" in err
    assert "1 line was longer than the limit of 15 pieces and was cut" in err


@pytest.fixture(scope="module")
def run_dir(translator, tmp_path_factory):
    """A folder like a finished `train` run's: model.keras and tokenizer.model."""
    path = tmp_path_factory.mktemp("run")
    run = RunDirectory(path)
    translator.tokenizer.save(run.tokenizer)
    translator.model.save(run.model)
    return path


def run_export_command(*arguments):
    """Runs `keras-transformer export ARGUMENTS`; returns what it prints.

    In a fresh interpreter: here, the tokenizer it loads would share, and
    when dropped delete, the SentencePiece resource of the session's.
    """
    process = subprocess.run(
        [sys.executable, "-m", "keras_transformer.cli", "export", *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""},
    )
    assert process.returncode == 0, process.stderr[-4000:]
    return process.stdout.strip()


@pytest.mark.slow
def test_command_exports_a_run_and_translates_a_file(
    translator, held_out, run_dir, tmp_path, capsys
):
    exported = tmp_path / "ct2"
    printed = run_export_command(
        run_dir, "--format", "ctranslate2", "--output", exported, "--alpha", "0"
    )
    assert printed == f"Exported the translator to {exported}"
    texts = [source for source, _ in held_out[:5]]
    path = tmp_path / "sources.txt"
    path.write_text("\n".join([texts[0], "", *texts[1:]]) + "\n")
    main(["translate", str(exported), str(path), "--batch-size", "2"])
    expected = in_process(translator, texts, 4, 0.0)  # the recipe's beam size
    assert capsys.readouterr().out.splitlines() == [expected[0], "", *expected[1:]]


@pytest.mark.slow
def test_command_exports_a_saved_model_version(run_dir, tmp_path):
    model_dir = tmp_path / "models" / "translator"
    printed = run_export_command(
        RunDirectory(run_dir).model, "--format", "saved_model", "--output", model_dir
    )
    assert printed == f"Exported the translator to {model_dir / '1'}"
    assert (model_dir / "1" / "saved_model.pb").exists()


def test_without_ctranslate2_the_error_says_how_to_install_it(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import fails
    with pytest.raises(ImportError, match=r'pip install -e "\.\[ctranslate2\]"'):
        import_ctranslate2()
    (tmp_path / "model.bin").touch()
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", str(tmp_path), "Hallo"])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith("keras-transformer: error: ") and error.count("\n") == 1
    assert 'pip install -e ".[ctranslate2]"' in error


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--format", "saved_model", "--quantization", "int8"], "goes with --format"),
        (["--format", "ctranslate2"], "the run has not finished"),
    ],
)
def test_export_errors_are_one_line(tmp_path, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", str(tmp_path), *arguments])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert error.startswith("keras-transformer: error: ") and message in error
    assert error.count("\n") == 1


@pytest.mark.slow
def test_the_command_translates_a_300_word_line_whole(translator, tmp_path, capsys):
    from tests.export.test_long_inputs import check_covers_the_end, long_line

    path = export_ctranslate2(translator, tmp_path / "model")
    line = long_line()
    greedy = ["--signature", "greedy"]
    main(["translate", str(path), "a b c", line, "--max-input-length", "8", *greedy])
    captured = capsys.readouterr()
    short, translation = captured.out.splitlines()
    assert short == "c b a"
    check_covers_the_end(translation, line, 8)
    assert "1 long line was translated in pieces (the limit is 8" in captured.err
    main(["translate", str(path), line, *greedy])
    assert len(capsys.readouterr().out.split()) > 100  # windows of 15 words
    truncate = ["--long-inputs", "truncate", "--alpha", "0", "--threads", "2"]
    main(["translate", str(path), line, *truncate])
    captured = capsys.readouterr()
    assert captured.out.splitlines() == in_process(translator, [line], 4, 0.0)
    assert "1 line was longer than the limit of 15 pieces and was cut" in captured.err


@pytest.mark.slow
@pytest.mark.parametrize("layer, heads", [(0, 1), (-1, 3), (None, 0)])
def test_return_attention_is_the_configured_layer_and_heads(layer, heads, tmp_path):
    """CTranslate2's `return_attention` (forced by a target prefix) equals
    the model config's alignment attention, which `align` reads."""
    from keras_transformer.alignment import alignment_attention
    from keras_transformer.data import train_tokenizer
    from keras_transformer.decoding.forced import teacher_forced_cross_attention

    tokenizer = train_tokenizer(
        ["a b c d e f g h"] * 40, vocab_size=14, byte_fallback=False
    )
    config = kt.TransformerConfig.tiny(
        tokenizer.vocab_size, d_model=16, alignment_layer=layer, alignment_heads=heads
    )
    model = kt.build_transformer(config)
    translator = Translator(model, tokenizer, max_length=16)
    path = export_ctranslate2(translator, tmp_path / "model")
    source, target = "a b c d", "d c b a"
    exported = CTranslate2Translator(path)
    pieces = [exported._pieces([text])[0] for text in (source, target)]
    result = exported.translator.translate_batch(
        [pieces[0]],
        target_prefix=[pieces[1]],
        max_decoding_length=len(pieces[1]) + 1,
        beam_size=1,
        return_attention=True,
    )[0]
    theirs = np.array(result.attention[0])[: len(pieces[1])]  # (T, S) no end
    outputs, mask = model.encode(translator.source_ids([source]))
    attention = teacher_forced_cross_attention(
        model, translator.target_ids([target]), outputs, mask
    )
    layer = config.alignment_layer_index  # None: the default, the penultimate
    ours = np.asarray(alignment_attention(attention, layer, heads))[0]
    np.testing.assert_allclose(theirs, ours[: len(pieces[1]), :-1], atol=1e-5)


@pytest.mark.slow
def test_a_full_context_model_converts_with_a_warning_on_its_alignments(tmp_path):
    """CTranslate2 cannot read attention without the causal mask."""
    from keras_transformer.data import train_tokenizer

    tokenizer = train_tokenizer(["a b c d"] * 20, vocab_size=10, byte_fallback=False)
    config = kt.TransformerConfig.tiny(
        tokenizer.vocab_size, d_model=16, full_context_alignment=True
    )
    translator = Translator(kt.build_transformer(config), tokenizer, max_length=8)
    with pytest.warns(UserWarning, match="causal mask"):
        export_ctranslate2(translator, tmp_path / "model")
