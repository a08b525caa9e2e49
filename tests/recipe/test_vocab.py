"""A run's vocabulary: trained on its data, or reused with --vocab."""

import io
import json

import pytest
import sentencepiece

from keras_transformer.cli import main
from keras_transformer.data import SubwordTokenizer, train_tokenizer
from keras_transformer.recipe.config import RunConfig
from keras_transformer.recipe.data import (
    load_run_data,
    load_splits,
    settle_vocabulary,
)
from keras_transformer.recipe.resume import settle_previous_run
from keras_transformer.recipe.run_directory import RunDirectory, check_writable


def write_pairs(path, count):
    """A TSV file of `count` made-up pairs."""
    rows = (f"Satz {n} ist hier.\tSentence {n} is here.\n" for n in range(count))
    path.write_text("".join(rows))
    return str(path)


def write_vocabulary(path, texts=("Ein Satz hier.", "A sentence here."), **settings):
    """A SentencePiece model file, with the package's reserved ids unless
    `settings` say otherwise; its number of pieces."""
    reserved = {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3}
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(list(texts) * 20),
        model_writer=model,
        vocab_size=30,
        hard_vocab_limit=False,
        minloglevel=2,
        **{**reserved, **settings},
    )
    path.write_bytes(model.getvalue())
    return sentencepiece.SentencePieceProcessor(
        model_proto=model.getvalue()
    ).vocab_size()


def config_of(tmp_path, **data):
    tsv = write_pairs(tmp_path / "pairs.tsv", 200)
    return RunConfig.from_dict(
        {
            "data": {"train_files": [tsv], **data},
            "output": {"output_dir": str(tmp_path / "run"), "export_dir": ""},
        }
    )


def test_vocab_size_is_8000_or_the_reused_models(tmp_path):
    assert RunConfig().data.vocab_size == 8000 and RunConfig().data.vocab is None
    pieces = write_vocabulary(tmp_path / "own.model")
    config = config_of(tmp_path, vocab=str(tmp_path / "own.model"))
    assert config.data.vocab_size is None  # the model's, once the run reads it
    settled = settle_vocabulary(config, RunDirectory(tmp_path / "run"))
    assert settled.data.vocab_size == pieces
    assert settled == config.replace(data={"vocab_size": pieces})
    agreeing = config.replace(data={"vocab_size": pieces})
    assert settle_vocabulary(agreeing, RunDirectory(tmp_path / "run")) == settled
    plain = config_of(tmp_path)
    assert settle_vocabulary(plain, RunDirectory(tmp_path / "run")) is plain


def test_a_reused_vocabulary_gives_the_source_runs_ids(tmp_path):
    """Another run's tokenizer.model, reused, is copied into the new run's
    folder and tokenizes as it did there."""
    source = RunDirectory(tmp_path / "source")
    texts = [f"Satz {n} ist hier." for n in range(200)]
    train_tokenizer(texts + ["Noch ein Wort"], 400).save(source.tokenizer)
    pieces = SubwordTokenizer.load(source.tokenizer).vocab_size
    config = config_of(tmp_path, vocab=source.tokenizer)
    run_dir = RunDirectory(tmp_path / "run")
    config = settle_vocabulary(config, run_dir)
    logged = []
    check_writable(run_dir.path)
    data = load_run_data(config, run_dir, load_splits(config.data), logged.append)
    assert logged == [f"Using the {pieces}-piece vocabulary {source.tokenizer}."]
    with open(run_dir.tokenizer, "rb") as copy, open(source.tokenizer, "rb") as file:
        assert copy.read() == file.read()
    sentences = ["Satz 7 ist hier.", "Noch ein Wort", "Unbekanntes \u2603"]
    ids = data.tokenizer.tokenize(sentences).to_list()
    assert ids == SubwordTokenizer.load(source.tokenizer).tokenize(sentences).to_list()
    assert data.tokenizer.vocab_size == pieces == config.data.vocab_size


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--vocab", "missing.model"], "The vocabulary 'missing.model' does not"),
        (["--vocab", "pairs.tsv"], "pairs.tsv is not a SentencePiece model."),
        (
            ["--vocab", "plain.model"],
            "plain.model does not reserve ids 0 padding, 1 start, 2 end, 3 unknown "
            "(it has padding -1, start 1, end 2, unknown 0; -1 is none): train it "
            "with SentencePiece's --pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3",
        ),
        (
            ["--vocab", "own.model", "--vocab-size", "8000"],
            "vocab_size is 8000, but the vocabulary own.model has",
        ),
    ],
)
def test_a_bad_vocab_is_one_line_before_the_run_folder_is_used(
    tmp_path, monkeypatch, capsys, argv, message
):
    monkeypatch.chdir(tmp_path)
    write_pairs(tmp_path / "pairs.tsv", 200)
    write_vocabulary(tmp_path / "plain.model", pad_id=-1, bos_id=1, eos_id=2, unk_id=0)
    write_vocabulary(tmp_path / "own.model")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--train-files", "pairs.tsv", *argv, "--output-dir", "run"])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not (tmp_path / "run").exists()  # locked and checked, nothing left


def test_a_run_resumes_only_with_the_same_vocabulary(tmp_path):
    """`vocab` is a setting a run resumes only with; and the file it names
    must still be the run's vocabulary."""
    run_dir = RunDirectory(tmp_path / "run")
    trained = config_of(tmp_path)
    check_writable(run_dir.path)
    run_dir.write_config(trained)
    write_vocabulary(tmp_path / "own.model")
    command = config_of(tmp_path, vocab=str(tmp_path / "own.model"))
    reused = settle_vocabulary(command, run_dir)
    with pytest.raises(ValueError, match=r"data.vocab: None there, '.*own.model' now"):
        settle_previous_run(run_dir, reused, print)
    run_dir.write_config(reused)  # a run that reused own.model
    (tmp_path / "own.model").rename(run_dir.tokenizer)  # its copy
    assert settle_previous_run(run_dir, reused, print) is None  # resumes
    write_vocabulary(tmp_path / "own.model", texts=["Andere Sätze.", "Others."])
    with pytest.raises(ValueError, match="is not the vocabulary of the run in"):
        settle_vocabulary(command, run_dir)
    overwrite = command.replace(output={"overwrite": True})
    assert settle_vocabulary(overwrite, run_dir).data.vocab == command.data.vocab


def test_print_config_shows_the_vocabulary(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_pairs(tmp_path / "pairs.tsv", 20)
    train = ["train", "--train-files", "pairs.tsv", "--print-config"]
    main([*train, "--vocab", "v.model"])
    printed = capsys.readouterr().out
    assert "vocab: v.model" in printed and "vocab_size: null" in printed
    main(train)
    assert "vocab_size: 8000" in capsys.readouterr().out


@pytest.mark.slow
def test_cli_trains_with_another_runs_vocabulary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_pairs(tmp_path / "pairs.tsv", 300)
    common = (
        "train --train-files pairs.tsv --preset tiny --max-length 16 "
        "--tokens-per-batch 256 --epochs 1 --steps-per-epoch 1 --checkpoint-every 1 "
        "--average-last 1 --beam-size 1 --bleu-sample 2 --test-sample 2 --samples 0 "
        "--export-dir="
    ).split()
    common += ["--model", '{"d_model": 16, "d_ff": 32, "num_heads": 2}']
    main([*common, "--vocab-size", "400", "--output-dir", "first"])
    main([*common, "--vocab", "first/tokenizer.model", "--output-dir", "second"])
    first, second = RunDirectory("first"), RunDirectory("second")
    with open(first.tokenizer, "rb") as one, open(second.tokenizer, "rb") as two:
        assert one.read() == two.read()
    job = json.loads(open(second.config).read())["data"]
    assert job["vocab"] == "first/tokenizer.model"
    assert job["vocab_size"] == SubwordTokenizer.load(first.tokenizer).vocab_size
    assert second.read_model_config().vocab_size == job["vocab_size"]
