"""A run's data: splits of files, both directions, batches a pass."""

import importlib.util
import os
import types

import pytest

from keras_transformer.cli import main
from keras_transformer.data import SubwordTokenizer, make_dataset, train_tokenizer
from keras_transformer.recipe import data as recipe_data
from keras_transformer.recipe.config import RunConfig
from keras_transformer.recipe.data import RunData, load_splits
from keras_transformer.recipe.run_directory import RunDirectory
from keras_transformer.recipe.trainer import fit_from


def write_pairs(path, count, start=0):
    """A TSV file of `count` made-up pairs."""
    rows = (
        f"Satz {n} ist hier.\tSentence {n} is here.\n"
        for n in range(start, start + count)
    )
    path.write_text("".join(rows))
    return str(path)


def files_config(**data):
    return RunConfig.from_dict({"data": data})


def test_bidirectional_trains_on_every_pair_both_ways(tmp_path):
    tsv = write_pairs(tmp_path / "pairs.tsv", 200)
    one_way = load_splits(files_config(train_files=[tsv]).data).splits
    splits = load_splits(
        files_config(train_files=[tsv], bidirectional=True).data
    ).splits
    pairs = list(one_way["train"].as_numpy_iterator())
    both_ways = list(splits["train"].as_numpy_iterator())
    assert both_ways[0::2] == pairs and pairs  # each pair, then its reverse
    assert both_ways[1::2] == [(target, source) for source, target in pairs]
    held_out = list(one_way["test"].as_numpy_iterator())
    assert list(splits["test"].as_numpy_iterator()) == held_out


def test_files_give_splits_or_have_them_held_out_and_said(tmp_path):
    train = write_pairs(tmp_path / "train.tsv", 400)
    valid = write_pairs(tmp_path / "valid.tsv", 7, start=1000)
    logged = []
    config = files_config(train_files=[train], valid_files=[valid])
    splits = load_splits(config.data, log=logged.append).splits
    sizes = {name: int(split.cardinality()) for name, split in splits.items()}
    assert sizes["validation"] == 7 and sizes["train"] + sizes["test"] == 400
    assert 0 < sizes["test"] < 40  # 5% expected
    assert logged == [
        f"Held out test from {train}: 5% of the sources each, by a hash of the "
        "source sentence (give --valid-files / --test-files for your own)."
    ]
    logged.clear()
    given = files_config(train_files=[train], valid_files=[valid], test_files=[valid])
    assert load_splits(given.data, log=logged.append).training_pairs == 400
    assert logged == []


def test_batches_a_pass_count_the_sampled_segmentation(tmp_path):
    """The plan's batches a pass are those of training's segmentation: with
    subword sampling, pieces are shorter and batches more."""
    words = "Zusammengesetzte Wortbildungen sind hier und dort".split()
    texts = [" ".join(words[: n % 6 + 1] * (n % 4 + 1)) for n in range(300)]
    tokenizer = train_tokenizer(texts * 2, 400)
    tokenizer.save(str(tmp_path / "t.model"))
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{text}\t{text}\n" for text in texts))

    def batches_a_pass(sampling_alpha):
        training = {"tokens_per_batch": 256, "sampling_alpha": sampling_alpha}
        config = RunConfig.from_dict(
            {
                "data": {"train_files": [str(tsv)], "test_files": [str(tsv)]},
                "model": {"max_length": 64},
                "training": training,
            }
        )
        tokenizer = SubwordTokenizer.load(str(tmp_path / "t.model"))
        data = RunData(load_splits(config.data), ([], []), ([], []), tokenizer)
        return data.batches_per_pass(config, 1)[0]

    assert batches_a_pass(0.01) > batches_a_pass(None)


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
        (
            ["--train-files", "pairs.tsv", "--train-alignments", "two.align"],
            "'two.align' has fewer lines but 'pairs.tsv' has 40",
        ),
        (
            ["--train-files", "pairs.tsv", "--train-alignments", "bad.align"],
            "'bad.align' line 2: '1+1' is not a link i-j",
        ),
        (
            ["--train-files", "pairs.tsv", "--train-alignments", "far.align"],
            "'far.align' line 1: '0-4' names target word 4, but the pair's target "
            "has 4 words",
        ),
        (["--train-alignments", "two.align"], "train_alignments align your train"),
        (
            ["--train-files", "pairs.tsv", "--train-alignments", "two.align", "--bi"],
            "leave bidirectional out",
        ),
    ],
)
def test_bad_data_is_one_line_before_the_run_folder_is_used(
    tmp_path, monkeypatch, capsys, argv, message
):
    monkeypatch.chdir(tmp_path)
    write_pairs(tmp_path / "short.tsv", 3)
    (tmp_path / "uneven.de").write_text("eins\nzwei\n")
    (tmp_path / "uneven.en").write_text("one\n")
    write_pairs(tmp_path / "pairs.tsv", 40)
    (tmp_path / "two.align").write_text("0-0\n1-1\n")
    (tmp_path / "bad.align").write_text("0-0\n0-0 1+1\n" + "\n" * 38)
    (tmp_path / "far.align").write_text("0-4\n" * 40)
    with pytest.raises(SystemExit) as exit_info:
        main(["train", *argv, "--output-dir", "run", "--export-dir="])
    assert exit_info.value.code == 1
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not (tmp_path / "run" / "job.json").exists()


def test_a_corpus_beyond_the_sample_is_estimated_and_the_estimate_kept(
    tmp_path, monkeypatch
):
    """Beyond `SAMPLE_PAIRS` training pairs, the vocabulary and the batches of
    a pass come from a sample; the estimate is saved for a resume."""
    monkeypatch.setattr(recipe_data, "SAMPLE_PAIRS", 400)
    tsv = write_pairs(tmp_path / "pairs.tsv", 3000)
    config = RunConfig.from_dict(
        {
            "data": {"train_files": [tsv], "vocab_size": 300},
            "model": {"max_length": 24},
            "training": {"tokens_per_batch": 256},
        }
    )
    corpus = load_splits(config.data)
    assert corpus.sampled and recipe_data.count(corpus.sample) == 400
    run_dir = RunDirectory(tmp_path / "run")
    os.makedirs(run_dir.path)
    logged = []
    data = recipe_data.load_run_data(config, run_dir, corpus, logged.append)
    assert logged[-1] == (
        f"Training a 300-piece SentencePiece vocabulary on a sample of 400 of the "
        f"{corpus.training_pairs:,} pairs..."
    )
    estimate, estimated = recipe_data.pass_size(data, config, 1, run_dir)
    exact = make_dataset(
        corpus.splits["train"],
        data.tokenizer,
        max_length=24,
        tokens_per_batch=256,
        shuffle_buffer=0,
    )
    assert estimated and abs(estimate - sum(1 for _ in exact)) <= 0.1 * estimate
    monkeypatch.setattr(RunData, "batches_per_pass", None)  # not computed again
    assert recipe_data.pass_size(data, config, 1, run_dir) == (estimate, True)
    with pytest.raises(TypeError):  # other settings: computed again
        recipe_data.pass_size(data, config, 2, run_dir)


def test_a_resumed_run_reads_a_stream_of_its_own_not_the_first_one_again(tmp_path):
    tsv = write_pairs(tmp_path / "pairs.tsv", 300)
    config = files_config(train_files=[tsv], test_files=[tsv])
    tokenizer = train_tokenizer([f"Satz {n} ist hier." for n in range(300)], 300)
    data = RunData(load_splits(config.data), ([], []), ([], []), tokenizer)

    def first_batch(step):
        inputs, _ = next(iter(data.training_stream(config, 1, step)))
        return inputs["encoder_inputs"].numpy().tolist()

    assert first_batch(0) == first_batch(0)
    assert first_batch(40) == first_batch(40) != first_batch(0)


def test_fit_from_starts_each_segment_on_the_stream_of_its_step():
    """Resumed mid-epoch at step 25 of 10-step epochs: the rest of epoch 3,
    then epochs 4 to 6, each `fit` on the stream of its first step."""
    streams, fits = [], []

    class Model:
        stop_training = False

        def fit(self, stream, initial_epoch, epochs, steps_per_epoch, **kwargs):
            fits.append((stream, initial_epoch, epochs, steps_per_epoch))
            return types.SimpleNamespace(epoch=[], history={})

    def stream_at(step):
        streams.append(step)
        return f"stream at {step}"

    plan = types.SimpleNamespace(steps_per_epoch=10, total_steps=60)
    fit_from(Model(), stream_at, None, 25, plan, [])
    assert streams == [25, 30]
    assert fits == [("stream at 25", 2, 3, 5), ("stream at 30", 3, 6, 10)]


def test_fit_from_keeps_an_epoch_whose_validation_a_signal_stopped():
    """SIGTERM during the validation of epoch 2: Keras's History has no
    BLEU for it, and the training stops (a run once died here with an
    IndexError instead of saying how to resume)."""

    class Model:
        stop_training = False

        def fit(self, stream, initial_epoch, epochs, steps_per_epoch, **kwargs):
            self.stop_training = True
            history = {"loss": [2.0, 1.5], "val_bleu": [3.0]}
            return types.SimpleNamespace(epoch=[0, 1], history=history)

    plan = types.SimpleNamespace(steps_per_epoch=10, total_steps=60)
    history = fit_from(Model(), lambda step: None, None, 0, plan, [])
    assert history == {1: {"loss": 2.0, "val_bleu": 3.0}, 2: {"loss": 1.5}}


def test_test_sources_past_the_limit_are_counted_for_the_warning():
    from keras_transformer.recipe.evaluation import long_sources

    tokenizer = train_tokenizer([f"Satz {n} ist hier." for n in range(300)], 300)
    texts = ["Satz 1 ist hier.", " ".join(["Satz 7 ist hier."] * 40), ""]
    lengths = [len(ids) for ids in tokenizer.tokenize(texts).to_list()]
    assert long_sources(tokenizer, texts, 20) == sum(n > 20 for n in lengths) == 1


def pair_links(number):
    """A Pharaoh line of its own for pair `number` of `write_pairs`: the
    links of the bits of `number` among the 16 links of 4 words by 4."""
    return " ".join(f"{bit // 4}-{bit % 4}" for bit in range(16) if number >> bit & 1)


def test_alignments_stay_with_their_pairs_when_splits_are_held_out(tmp_path):
    tsv = write_pairs(tmp_path / "pairs.tsv", 300)
    (tmp_path / "pairs.align").write_text(
        "".join(pair_links(number) + "\n" for number in range(300))
    )
    alignments = str(tmp_path / "pairs.align")
    corpus = load_splits(
        files_config(train_files=[tsv], train_alignments=alignments).data
    )
    triples = list(corpus.splits["train"].as_numpy_iterator())
    assert 200 < len(triples) < 300  # the rest held out
    for source, _, alignment in triples:
        assert alignment.decode() == pair_links(int(source.split()[1]))


def test_eflomal_alignments_without_eflomal_say_how_to_install_it(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    write_pairs(tmp_path / "pairs.tsv", 40)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "eflomal" else find_spec(name, *args),
    )
    with pytest.raises(SystemExit):
        main(
            ["train", "--train-files", "pairs.tsv", "--train-alignments", "eflomal"]
            + ["--output-dir", "run", "--export-dir="]
        )
    assert 'needs eflomal: pip install "keras-transformer[align]"' in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "run" / "job.json").exists()
