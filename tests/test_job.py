"""A short run of the main job: train a few steps, score, export, reload, resume."""

import dataclasses
import json
import os
import subprocess
import sys

import keras
import pytest
import sacrebleu
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the exported tokenizer's ops)

import keras_transformer.job
from keras_transformer.cli import main
from keras_transformer.job import (
    TranslationJob,
    changed_training_settings,
    evaluate_run,
    load_splits,
    run_translation_job,
    translate_texts,
)
from keras_transformer.plots import attention_figure, read_history, sentence_attention
from keras_transformer.training import PRECISIONS, resolve_precision


def tiny_job(tmp_path, **overrides):
    values = dict(
        preset="tiny",
        model={"d_model": 32, "d_ff": 64, "num_heads": 2},
        extra_train_split="",
        vocab_size=500,
        max_length=24,
        tokens_per_batch=768,
        epochs=1,
        steps_per_epoch=6,
        checkpoint_every=4,
        average_last=2,
        beam_size=2,
        bleu_sample=8,
        test_sample=16,
        samples=1,
        output_dir=str(tmp_path / "run"),
        export_dir=str(tmp_path / "saved_models"),
    )
    return TranslationJob(**{**values, **overrides})


@pytest.mark.slow
def test_short_run_scores_exports_reloads_and_resumes(tmp_path, capsys):
    logged = []
    results = run_translation_job(tiny_job(tmp_path), log=logged.append)
    summary = "\n".join(logged)  # before training: data, vocabulary, length
    assert (
        "Data: 16,913 training pairs, 937 validation, 16 test; vocabulary: 500"
        in summary
    )
    assert "Training: 1 epochs of 6 steps, 6 updates, warm-up 1, cool-down" in summary
    assert results["precision"] == resolve_precision("auto")  # the default
    assert keras.mixed_precision.global_policy().name == "float32"  # restored
    assert results["steps"] == 6
    assert list(results["history"]) == [1]
    assert {"loss", "val_loss", "val_bleu"} <= set(results["history"][1])
    assert results["test_sentences"] == 16
    assert 0.0 <= results["bleu"] <= 100.0 and "tok:13a" in results["bleu_signature"]
    assert results["export_path"].endswith("saved_models/translator/1")
    written = json.loads((tmp_path / "run" / "results.json").read_text())
    assert written["bleu"] == results["bleu"]
    assert (tmp_path / "run" / "model.keras").exists()

    rescored = evaluate_run(str(tmp_path / "run"), "test", sample=16)  # as the job
    assert (rescored["bleu"], rescored["chrf"]) == (results["bleu"], results["chrf"])
    assert rescored["sentences"] == 16 and len(rescored["checkpoints"]) == 2
    validation = evaluate_run(str(tmp_path / "run"), last=1, beam_size=1, sample=8)
    assert validation["sentences"] == 8 and len(validation["checkpoints"]) == 1

    signature = tf.saved_model.load(results["export_path"]).signatures[
        "serving_default"
    ]
    outputs = signature(text=tf.constant(["Guten Morgen!", ""]))
    assert outputs["translation"].shape == (2,)
    assert outputs["translation"].numpy()[1] == b""

    logged.clear()
    resumed = run_translation_job(tiny_job(tmp_path, epochs=2), log=logged.append)
    assert resumed["steps"] == 12  # continued from step 6, not from 0
    warnings = [line for line in logged if "settings changed" in line]
    assert len(warnings) == 1 and "epochs: 1 -> 2" in warnings[0]
    assert list(resumed["history"]) == [2]
    assert resumed["export_path"].endswith("saved_models/translator/2")
    assert_pictures_of_the_run(tmp_path / "run", resumed["export_path"], capsys)


def tensorboard_images(folder):
    """{tag: [(step, width, height)]} of the image summaries in `folder`."""
    images = {}
    for path in folder.iterdir():
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                width, height, png = value.tensor.string_val
                assert png.startswith(b"\x89PNG")
                size = (event.step, int(width), int(height))
                images.setdefault(value.tag, []).append(size)
    return images


def assert_pictures_of_the_run(run, export_path, capsys):
    """What the pictures read: history, schedule, TensorBoard, the commands."""
    assert list(read_history(run / "history.csv")) == [1, 2]  # both runs'
    schedule = json.loads((run / "schedule.json").read_text())
    assert (schedule["total_steps"], schedule["warmup_steps"]) == (12, 2)
    images = tensorboard_images(run / "logs" / "attention")
    assert sorted(images) == [f"cross_attention/{row}" for row in range(3)]
    # One event file per run, read in any order.
    assert sorted(step for step, _, _ in images["cross_attention/0"]) == [0, 1]

    capsys.readouterr()
    main(["plot", str(run)])
    written = capsys.readouterr().out.split()[1::2]
    assert [os.path.getsize(path) > 1000 for path in written] == [True] * 3

    main(["attention", export_path, "Guten Morgen!", "-o", str(run / "map.png")])
    translation, *alignment, wrote = capsys.readouterr().out.splitlines()
    export = tf.saved_model.load(export_path)
    text = tf.constant(["Guten Morgen!"])
    expected = export.signatures["serving_default"](text=text)["translation"]
    assert translation == expected.numpy()[0].decode()
    attention, source, target = sentence_attention(
        export.signatures["attention"](text=text)
    )
    assert len(alignment) == len(target) and all("<-" in line for line in alignment)
    assert wrote == f"Wrote {run / 'map.png'}"
    figure = attention_figure(attention, source, target)
    width, height = (figure.get_size_inches() * 100).round().astype(int)
    header = (run / "map.png").read_bytes()[16:24]
    assert (width, height) == (
        int.from_bytes(header[:4], "big"),
        int.from_bytes(header[4:], "big"),
    )


def test_bidirectional_trains_on_every_pair_both_ways(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"Satz {n}.\tSentence {n}.\n" for n in range(200)))
    job = tiny_job(tmp_path, corpus="files", train_files=(str(tsv),))
    one_way = list(load_splits(job)["train"].as_numpy_iterator())
    splits = load_splits(dataclasses.replace(job, bidirectional=True))
    both_ways = list(splits["train"].as_numpy_iterator())
    assert both_ways[0::2] == one_way and one_way  # each pair, then its reverse
    assert both_ways[1::2] == [(target, source) for source, target in one_way]
    held_out = list(load_splits(job)["test"].as_numpy_iterator())
    assert list(splits["test"].as_numpy_iterator()) == held_out


def test_changed_training_settings_ignore_evaluation_and_paths(tmp_path):
    job = tiny_job(tmp_path, corpus="files", train_files=("pairs.tsv",))
    os.makedirs(job.output_dir)
    with open(os.path.join(job.output_dir, "job.json"), "w") as file:
        json.dump(dataclasses.asdict(job), file)
    assert changed_training_settings(job.output_dir, job) == []
    evaluation_only = dataclasses.replace(job, beam_size=5, export_dir="", samples=0)
    assert changed_training_settings(job.output_dir, evaluation_only) == []
    retrained = dataclasses.replace(job, epochs=3, model={"d_model": 64})
    assert changed_training_settings(job.output_dir, retrained) == [
        "model: {'d_model': 32, 'd_ff': 64, 'num_heads': 2} -> {'d_model': 64}",
        "epochs: 1 -> 3",
    ]


def test_the_recipe_is_the_same_in_every_precision():
    for precision in PRECISIONS:
        job = TranslationJob(precision=precision)
        assert job.training_length(150) == (15, 150)
        assert job.model_config(100, 400).dropout == 0.2
    dropout = TranslationJob(model={"dropout": 0.1}).model_config(100, 400).dropout
    assert dropout == 0.1
    assert TranslationJob(preset="big").model_config(100, 400).dropout == 0.3
    assert TranslationJob(model={"d_model": 64}).model_config(100, 400).dropout == 0.2


def test_training_length_follows_the_corpus_size():
    job = TranslationJob()
    lengths = [job.training_length(batches) for batches in (39, 75, 150, 600)]
    assert lengths == [(58, 39), (30, 75), (15, 150), (8, 600)]
    updates = [epochs * steps for epochs, steps in lengths]
    assert abs(updates[0] - 2250) < 39 / 2  # the passes that come closest
    assert updates[1] == updates[2] == 2250 < updates[3]
    assert TranslationJob(steps_per_epoch=50).training_length(600) == (96, 50)
    assert job.model_config(100, 228).warmup_steps == 228  # the run's
    assert TranslationJob(warmup_steps=100).model_config(100, 228).warmup_steps == 100


def test_bad_job_settings_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="preset"):
        tiny_job(tmp_path, preset="huge")
    with pytest.raises(ValueError, match="train_files"):
        tiny_job(tmp_path, corpus="files")
    with pytest.raises(ValueError, match="epochs"):
        tiny_job(tmp_path, epochs=0)
    with pytest.raises(ValueError, match="strategy"):
        tiny_job(tmp_path, strategy="tpu")
    with pytest.raises(ValueError, match="precision must be one of"):
        tiny_job(tmp_path, precision="bfloat16")
    with pytest.raises(ValueError, match="precision must be one of"):
        tiny_job(tmp_path, export_precision="bfloat16")
    assert not (tmp_path / "run").exists()  # raised before training
    with pytest.raises(ValueError, match="logical_cpus=2 needs strategy 'mirrored'"):
        tiny_job(tmp_path, logical_cpus=2)
    with pytest.raises(ValueError, match="needs an extra_train_split"):
        tiny_job(tmp_path, extra_train_fraction=0.2)
    with pytest.raises(ValueError, match="extra_train_fraction must be in"):
        tiny_job(tmp_path, extra_train_split="phrases", extra_train_fraction=1.0)
    with pytest.raises(ValueError, match="sampling_alpha"):
        tiny_job(tmp_path, sampling_alpha=0.0)
    with pytest.raises(ValueError, match="weight_decay"):
        tiny_job(tmp_path, weight_decay=-0.1)
    with pytest.raises(ValueError, match="cooldown_fraction"):
        tiny_job(tmp_path, cooldown_fraction=1.5)
    with pytest.raises(ValueError, match="one device only, not with strategy"):
        tiny_job(tmp_path, gradient_accumulation=2, strategy="mirrored")
    with pytest.raises(ValueError, match="warmup_steps must be >= 1"):
        tiny_job(tmp_path, warmup_steps=0)


def test_files_settle_the_corpus_and_bad_files_settings_are_value_errors():
    job = TranslationJob(train_files=("data/train.fr", "data/train.en"))
    assert job.corpus == "files" and job.output_dir == os.path.join(
        "runs", "data-train"
    )
    assert (job.source_language, job.target_language) == (None, None)
    named = TranslationJob(train_files=("a.tsv",), source_language="fr")
    assert named.output_dir == os.path.join(
        "runs", f"{os.path.basename(os.getcwd())}-a-fr"
    )
    ding = TranslationJob(target_language="de")
    assert (ding.corpus, ding.source_language, ding.output_dir) == (
        "ding",
        "en",
        os.path.join("runs", "ding-en-de"),
    )
    with pytest.raises(ValueError, match="train_files read your own files, but corpus"):
        TranslationJob(corpus="ding", train_files=("a.tsv",))
    with pytest.raises(ValueError, match="needs train_files"):
        TranslationJob(valid_files=("valid.tsv",))
    with pytest.raises(ValueError, match="test_files takes SOURCE TARGET or one TSV"):
        TranslationJob(train_files=("a.tsv",), test_files=("a", "b", "c"))
    with pytest.raises(ValueError, match="extra_train_split is a split of a TFDS"):
        TranslationJob(train_files=("a.tsv",), extra_train_split="phrases")


def test_a_target_language_sacrebleu_cannot_score_is_refused_up_front():
    try:
        sacrebleu.metrics.BLEU(trg_lang="ja")
    except RuntimeError:
        pass
    else:
        pytest.skip("sacreBLEU's Japanese tokenizer is installed here")
    with pytest.raises(ValueError, match=r"cannot score 'ja' here.*sacrebleu\[ja\]"):
        TranslationJob(train_files=("a.tsv",), target_language="ja")


def write_pairs(path, count, start=0):
    """A TSV file of `count` made-up pairs."""
    rows = (
        f"Satz {n} ist hier.\tSentence {n} is here.\n"
        for n in range(start, start + count)
    )
    path.write_text("".join(rows))
    return str(path)


def test_files_give_splits_or_have_them_held_out_and_said(tmp_path):
    train = write_pairs(tmp_path / "train.tsv", 400)
    valid = write_pairs(tmp_path / "valid.tsv", 7, start=1000)
    logged = []
    job = TranslationJob(train_files=(train,), valid_files=(valid,))
    splits = load_splits(job, logged.append)
    sizes = {name: int(split.cardinality()) for name, split in splits.items()}
    assert sizes["validation"] == 7 and sizes["train"] + sizes["test"] == 400
    assert 0 < sizes["test"] < 40  # 5% expected
    assert logged == [
        f"Held out test from {train}: 5.0% of the sources each, by a hash of the "
        "source sentence (give --valid-files / --test-files for your own)."
    ]
    logged.clear()
    given = dataclasses.replace(job, test_files=(valid,))
    assert int(load_splits(given, logged.append)["train"].cardinality()) == 400
    assert logged == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--train-files", "missing.tsv"], "The TSV file 'missing.tsv' does not exist"),
        (["--train-files", "a.de", "a.en", "a.fr"], "train_files takes SOURCE TARGET"),
        (["--corpus", "ding", "--train-files", "a.tsv"], "but corpus is 'ding'"),
        (["--valid-files", "v.tsv"], "corpus 'files' needs train_files"),
        (
            ["--train-files", "short.tsv"],
            "split held out from 3 training pairs is empty",
        ),
        (["--train-files", "uneven.de", "uneven.en"], "has 2 lines but"),
    ],
)
def test_bad_data_is_one_line_before_the_run_folder_is_used(
    tmp_path, monkeypatch, capsys, argv, message
):
    monkeypatch.chdir(tmp_path)
    write_pairs(tmp_path / "short.tsv", 3)
    (tmp_path / "uneven.de").write_text("eins\nzwei\n")
    (tmp_path / "uneven.en").write_text("one\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", *argv, "--output-dir", "run", "--export-dir="])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not (tmp_path / "run" / "job.json").exists()


def test_cli_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "train" in capsys.readouterr().out


def parsed_job(monkeypatch, *argv):
    """The `TranslationJob` that `keras-transformer train ARGV` would run."""
    jobs = []

    def run(job):
        jobs.append(job)
        return dict.fromkeys(("bleu", "chrf", "export_path"))

    monkeypatch.setattr(keras_transformer.job, "run_translation_job", run)
    main(["train", *argv])
    return jobs[0]


def test_cli_train_has_an_option_for_every_job_field(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = capsys.readouterr().out
    for field in dataclasses.fields(TranslationJob):
        assert f"--{field.name.replace('_', '-')} " in help_text


def test_cli_train_defaults_are_the_jobs(monkeypatch):
    assert parsed_job(monkeypatch) == TranslationJob()


def test_cli_train_reads_every_kind_of_field(monkeypatch):
    job = parsed_job(
        monkeypatch,
        *("--train-files", "a.de", "a.en", "--valid-files", "v.tsv"),
        "--bidirectional",
        *("--model", '{"dropout": 0.3}', "--epochs", "3", "--test-sample", "7"),
        *("--sampling-alpha", "0.1", "--precision", "float32", "--export-dir="),
    )
    assert job == TranslationJob(
        corpus="files",
        train_files=("a.de", "a.en"),
        valid_files=("v.tsv",),
        bidirectional=True,
        model={"dropout": 0.3},
        epochs=3,
        test_sample=7,
        sampling_alpha=0.1,
        precision="float32",
        export_dir="",
    )


@pytest.mark.slow
def test_cli_trains_on_two_logical_cpus_with_mirrored_strategy(tmp_path):
    # A fresh process: logical devices are set before TensorFlow starts.
    rows = [f"{i} {i + 1} {i + 2}\t{i + 2} {i + 1} {i}" for i in range(200)]
    (tmp_path / "pairs.tsv").write_text("\n".join(rows) + "\n")
    command = (
        "train --strategy mirrored --logical-cpus 2 --corpus files "
        f"--train-files {tmp_path / 'pairs.tsv'} --vocab-size 300 --preset tiny "
        "--max-length 16 --tokens-per-batch 256 --epochs 1 --steps-per-epoch 2 "
        "--checkpoint-every 2 --average-last 1 --beam-size 1 --bleu-sample 4 "
        f"--test-sample 4 --samples 0 --output-dir {tmp_path / 'run'} --export-dir="
    ).split()
    command += ["--model", '{"d_model": 32, "d_ff": 64, "num_heads": 2}']
    result = subprocess.run(
        [sys.executable, "-m", "keras_transformer.cli", *command],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    assert "Training: 1 epochs of 2 steps, 2 updates" in result.stdout
    assert "2 replica(s)" in result.stdout
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["steps"] == 2
    assert results["job"]["strategy"] == "mirrored"


def test_an_unknown_model_key_is_one_line_naming_the_fields(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--model", '{"d_modle": 64}'])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert "Unknown TransformerConfig field 'd_modle'" in error
    assert "d_model" in error and error.count("\n") == 1


def test_ctrl_c_before_training_is_one_line_and_status_130(monkeypatch, capsys):
    def interrupted(job):
        raise KeyboardInterrupt

    monkeypatch.setattr(keras_transformer.job, "run_translation_job", interrupted)
    with pytest.raises(SystemExit) as exit_info:
        main(["train"])
    assert exit_info.value.code == 130
    assert capsys.readouterr().err == "keras-transformer: interrupted\n"


@pytest.mark.slow
def test_a_used_folder_keeps_its_run(tmp_path):
    """A finished run is not trained or exported again; other data is refused;
    overwrite starts over."""
    first = run_translation_job(tiny_job(tmp_path), log=lambda *_: None)
    logged = []
    again = run_translation_job(tiny_job(tmp_path), log=logged.append)
    assert again == json.loads(json.dumps(first))  # the saved results
    assert any("is finished" in line for line in logged)
    assert os.listdir(tmp_path / "saved_models" / "translator") == ["1"]
    with pytest.raises(ValueError, match=r"other data.*vocab_size: 500 there, 400"):
        run_translation_job(tiny_job(tmp_path, vocab_size=400), log=logged.append)
    other_corpus = tiny_job(
        tmp_path, train_files=(write_pairs(tmp_path / "a.tsv", 99),)
    )
    with pytest.raises(ValueError, match=r"corpus: 'ding' there, 'files' now"):
        run_translation_job(other_corpus, log=logged.append)
    assert (
        json.loads((tmp_path / "run" / "results.json").read_text())["bleu"]
        == (first["bleu"])
    )
    logged.clear()
    fresh = run_translation_job(
        tiny_job(tmp_path, vocab_size=400, overwrite=True), log=logged.append
    )
    assert any("Deleting the earlier run" in line for line in logged)
    assert fresh["job"]["vocab_size"] == 400 and fresh["steps"] == first["steps"]


def test_an_unwritable_export_folder_fails_before_training(tmp_path):
    (tmp_path / "a_file").write_text("")
    with pytest.raises(OSError, match="Cannot write to"):
        run_translation_job(tiny_job(tmp_path, export_dir=str(tmp_path / "a_file")))
    assert not (tmp_path / "run" / "job.json").exists()


def test_translate_texts_shows_progress_on_a_terminal(monkeypatch, capsys):
    def shout(texts):
        return {"translation": tf.strings.upper(texts)}

    texts = ["a", "b", "c"]
    assert translate_texts(shout, texts, batch_size=2, progress="Decoding") == [
        "A",
        "B",
        "C",
    ]
    assert capsys.readouterr().err == ""  # stderr is not a terminal here
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    translate_texts(shout, texts, batch_size=2, progress="Decoding")
    shown = capsys.readouterr().err
    assert "Decoding" in shown and "3/3" in shown
